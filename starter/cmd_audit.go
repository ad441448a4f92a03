package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/internal/config"
	"github.com/fleetsaga/fleetsaga/ledger"
)

func init() { commands = append(commands, auditCmd) }

// auditExportLine bounds one line of an export read back: an event's
// message or an approval's signature and statement are a few KB.
const auditExportLine = 16 << 20

func auditCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Re-check the ledger's audit trail, or export it",
		Long: `The ledger chains its rows: each attempt's events and each rollout's
approvals carry the hash of the row before them and their own hash over
their content, computed as they are appended. audit verify recomputes every
link and re-checks every signed approval's SSH signature and statement, so
a row edited with SQL (by anyone, a database administrator included) is
named as the first broken link. audit export writes the trail as JSON lines,
which audit verify --from re-checks offline, away from the database.

A chain proves what it holds; to know that no one removed the newest rows
and recomputed nothing, keep an export (or its last hashes) elsewhere.`,
	}
	var dbURL, from, signersFile string
	verify := &cobra.Command{
		Use:   "verify [--database-url URL | --from EXPORT.jsonl] [--allowed-signers FILE]",
		Short: "Re-check every hash link and signature; exit 1 naming the first broken link",
		Example: `  starter audit verify --database-url "$DATABASE_URL" --allowed-signers /etc/fleetsaga/allowed_signers
  starter audit export > ledger-$(date +%F).jsonl && starter audit verify --from ledger-$(date +%F).jsonl`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var signers approval.AllowedSigners
			if signersFile != "" {
				b, err := os.ReadFile(signersFile)
				if err != nil {
					return usageErr("--allowed-signers: %v", err)
				}
				if signers, err = approval.ParseAllowedSigners(b); err != nil {
					return usageErr("--allowed-signers %s: %v", signersFile, err)
				}
			}
			v := &ledger.AuditVerifier{CheckSignature: activities.CheckStoredApproval(signers)}
			var err error
			if from != "" {
				err = readExport(from, v.Add)
			} else {
				var store *ledger.Store
				if store, err = openLedger(cmd, dbURL); err != nil {
					return err
				}
				defer store.Close()
				err = store.ExportAudit(cmd.Context(), v.Add)
			}
			var broken *ledger.BrokenLink
			if errors.As(err, &broken) {
				return &exitError{exitFailed, broken}
			}
			if err != nil {
				return err
			}
			a.print(v, func(w io.Writer) {
				fmt.Fprintf(w, "audit trail intact: %d rows in %d chains, %d signatures verified\n", v.Records, v.Chains, v.Signatures)
			})
			return nil
		},
	}
	verify.Flags().StringVar(&from, "from", "", "verify this export (JSON lines from audit export; - for stdin) instead of the database")
	verify.Flags().StringVar(&signersFile, "allowed-signers", os.Getenv("FLEETSAGA_APPROVAL_ALLOWED_SIGNERS"), "also require each SSH signature's key to be in this allowed_signers file (env FLEETSAGA_APPROVAL_ALLOWED_SIGNERS)")
	export := &cobra.Command{
		Use:   "export [--database-url URL]",
		Short: "Write the audit trail (events and approvals, in chain order) as JSON lines",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := openLedger(cmd, dbURL)
			if err != nil {
				return err
			}
			defer store.Close()
			w := bufio.NewWriter(a.out)
			enc := json.NewEncoder(w)
			if err := store.ExportAudit(cmd.Context(), func(r ledger.AuditRecord) error { return enc.Encode(r) }); err != nil {
				return err
			}
			return w.Flush()
		},
	}
	for _, c := range []*cobra.Command{verify, export} {
		c.Flags().StringVar(&dbURL, "database-url", os.Getenv("DATABASE_URL"), "ledger PostgreSQL URL (env DATABASE_URL)")
		cmd.AddCommand(c)
	}
	return cmd
}

func openLedger(cmd *cobra.Command, dbURL string) (*ledger.Store, error) {
	if dbURL == "" {
		return nil, usageErr("--database-url (or DATABASE_URL) is required")
	}
	if err := config.ValidateDatabaseURL(dbURL); err != nil {
		return nil, usageErr("%v", err)
	}
	store, err := ledger.Open(cmd.Context(), dbURL)
	if err != nil {
		return nil, &exitError{exitUnreachable, err}
	}
	return store, nil
}

// readExport feeds an export's records to add, in order.
func readExport(path string, add func(ledger.AuditRecord) error) error {
	f := os.Stdin
	if path != "-" {
		var err error
		if f, err = os.Open(path); err != nil {
			return usageErr("--from: %v", err)
		}
		defer f.Close()
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), auditExportLine)
	for n := 1; sc.Scan(); n++ {
		var r ledger.AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return usageErr("%s line %d: %v", path, n, err)
		}
		if err := add(r); err != nil {
			return err
		}
	}
	return sc.Err()
}
