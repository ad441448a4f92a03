package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"

	"github.com/spf13/cobra"

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
their content, computed by the database as they are appended. audit verify
recomputes every link and re-checks every signed approval: an SSH one
against --allowed-signers (the key is an allowed signer's, the row's
principal is that signer, its replay key is the signed nonce); an OIDC one
keeps no token, so only its statement, principal (the token's identity, or
the person --people maps it to) and replay key's shape are checked, not who
signed. Every signed row's approver must be its principal, its reason the
signed one, its replay key on no other row. A row of method exposed is a
statement's exposed mark (its ID token was sent in plain text), not an
approval: only its shape and its key's single use are checked. A row with
any other method fails; with --allowed-signers an unsigned row fails unless
--allow-unsigned.
Without --allowed-signers verify exits 1 saying signatures were not
checked, unless --skip-signatures says that is intended.

A worker on the workers' role (fleetsaga_worker, its --migrate=false) may
only read and append these tables. What holds against the database's
owner, who can disable triggers and recompute every hash with the
schema's own function:
  --against EXPORT  each chain of an earlier audit export (kept away from
                    the database) must still be a prefix of today's, and
                    each of its signed heads still be held: a TRUNCATE, a
                    dropped tail, a rewritten chain or removed heads are
                    named.
  --audit-public-key FILE
                    the worker signs the row it appends with its
                    --audit-signing-key (ed25519, not in the database)
                    only when the row before is one it signed (or none),
                    checking that head's signature with its own key; each
                    head names the head it follows. Every signed head
                    must be in today's chains and verify with this key,
                    every chain must have a signed row, every row after
                    its first signed one must be signed, and the head a
                    head follows must be held: a row the owner wrote, or
                    removed heads before a signed one, are named (heads
                    signed before schema 0017 name no predecessor).
What does not hold: a chain's newest rows (or the whole chain) deleted
together with the signed heads that name them are named only by an
export that holds them, so rows written after the last export can vanish
unseen; TRUNCATE audit_head is named only with --against; whoever holds
the worker's signing key can sign what they write; chains written before
the fleet's first start with a key are vouched for as they were at that
start (on a ledger with no heads, or with the worker's
--audit-sign-unheaded-chains). Keep exports, and the worker's key, where
the database's owner cannot reach them.`,
	}
	var dbURL, from, signersFile, peopleFile, against, headKeyFile string
	var skipSignatures, allowUnsigned bool
	verify := &cobra.Command{
		Use:   "verify [--database-url URL | --from EXPORT.jsonl] (--allowed-signers FILE [--allow-unsigned] | --skip-signatures) [--against EARLIER.jsonl] [--audit-public-key FILE]",
		Short: "Re-check every hash link and signature; exit 1 naming the first broken link",
		Example: `  starter audit verify --database-url "$DATABASE_URL" --allowed-signers /etc/fleetsaga/allowed_signers \
      --audit-public-key /etc/fleetsaga/audit_head.pub --against /offsite/ledger-yesterday.jsonl
  starter audit export > ledger-$(date +%F).jsonl && starter audit verify --from ledger-$(date +%F).jsonl --skip-signatures`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := newAuditVerifier(signersFile, peopleFile, skipSignatures, allowUnsigned, against, headKeyFile)
			if err != nil {
				return err
			}
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
			if err == nil {
				err = v.Finish()
			}
			var broken *ledger.BrokenLink
			var changed *ledger.ChainChanged
			if errors.As(err, &broken) || errors.As(err, &changed) {
				return &exitError{exitFailed, err}
			}
			if err != nil {
				return err
			}
			return reportAudit(a, v, signersFile != "", skipSignatures)
		},
	}
	verify.Flags().StringVar(&from, "from", "", "verify this export (JSON lines from audit export; - for stdin) instead of the database")
	verify.Flags().StringVar(&signersFile, "allowed-signers", os.Getenv("FLEETSAGA_APPROVAL_ALLOWED_SIGNERS"), "require each SSH signature's key to be in this allowed_signers file and the row's principal to be its signer (env FLEETSAGA_APPROVAL_ALLOWED_SIGNERS)")
	verify.Flags().StringVar(&peopleFile, "people", os.Getenv("FLEETSAGA_APPROVAL_PEOPLE"), "the worker's people file, for rows that name a person (env FLEETSAGA_APPROVAL_PEOPLE)")
	verify.Flags().BoolVar(&skipSignatures, "skip-signatures", false, "check the hash chains only, and say so: no keyring to check signatures against")
	verify.Flags().BoolVar(&allowUnsigned, "allow-unsigned", false, "with --allowed-signers, accept unsigned approvals (a worker without a keyring took them; who approved is as typed) instead of failing them")
	verify.Flags().StringVar(&against, "against", "", "an earlier audit export whose chains must still be prefixes of today's")
	verify.Flags().StringVar(&headKeyFile, "audit-public-key", os.Getenv("FLEETSAGA_AUDIT_PUBLIC_KEY"), "the worker's chain-head public key (OpenSSH ed25519 .pub): every chain's newest row must be signed by it (env FLEETSAGA_AUDIT_PUBLIC_KEY)")
	export := &cobra.Command{
		Use:   "export [--database-url URL]",
		Short: "Write the audit trail (signed chain heads, then events and approvals in chain order) as JSON lines",
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
