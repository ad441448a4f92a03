package main

import (
	"fmt"
	"io"
	"os"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// newAuditVerifier builds audit verify's checks from its flags.
func newAuditVerifier(signersFile, peopleFile string, skipSignatures, allowUnsigned bool, against, headKeyFile string) (*ledger.AuditVerifier, error) {
	if skipSignatures && signersFile != "" {
		return nil, usageErr("--skip-signatures and --allowed-signers: choose one")
	}
	var signers approval.AllowedSigners
	var people approval.People
	if signersFile != "" {
		b, err := os.ReadFile(signersFile)
		if err != nil {
			return nil, usageErr("--allowed-signers: %v", err)
		}
		if signers, err = approval.ParseAllowedSigners(b); err != nil {
			return nil, usageErr("--allowed-signers %s: %v", signersFile, err)
		}
	}
	if peopleFile != "" {
		b, err := os.ReadFile(peopleFile)
		if err != nil {
			return nil, usageErr("--people: %v", err)
		}
		if people, err = approval.ParsePeople(b); err != nil {
			return nil, usageErr("--people %s: %v", peopleFile, err)
		}
	}
	// A keyring given is a claim that approvals were signed: an unsigned
	// row fails unless --allow-unsigned says it is expected.
	v := &ledger.AuditVerifier{RequireSigned: signersFile != "" && !allowUnsigned, AllowedUnsigned: signersFile != "" && allowUnsigned}
	if !skipSignatures {
		// With no signers this still checks each signature against the key
		// it names (a bug, not an owner, is caught); the report says so.
		v.CheckSignature = activities.CheckStoredApproval(signers, people)
	}
	if headKeyFile != "" {
		k, err := ledger.LoadHeadPublicKey(headKeyFile)
		if err != nil {
			return nil, usageErr("--audit-public-key: %v", err)
		}
		v.HeadKey = k
	}
	if against != "" {
		e := ledger.NewEarlierExport()
		if err := readExport(against, e.Add); err != nil {
			return nil, usageErr("--against %s: %v", against, err)
		}
		v.Against = e
	}
	return v, nil
}

// reportAudit says what was checked, and what was not. Without a keyring
// (and without --skip-signatures) it exits 1: a signature checked against
// the key it names proves only that someone made a key.
func reportAudit(a *app, v *ledger.AuditVerifier, withSigners, skipSignatures bool) error {
	signed := v.SSH + v.OIDC
	if !withSigners && !skipSignatures {
		return &exitError{exitFailed, fmt.Errorf("hash chains intact (%d rows in %d chains), but signatures were NOT checked: no --allowed-signers, so %d signed approvals (%d ssh, %d oidc) prove nothing about who signed; give --allowed-signers FILE, or --skip-signatures to check the hash chains only",
			v.Records, v.Chains, signed, v.SSH, v.OIDC)}
	}
	a.print(v, func(w io.Writer) {
		if skipSignatures {
			fmt.Fprintf(w, "hash chains intact: %d rows in %d chains; signatures NOT checked (--skip-signatures): %d signed approvals unverified\n", v.Records, v.Chains, signed)
		} else {
			fmt.Fprintf(w, "audit trail intact: %d rows in %d chains, %d signatures verified\n", v.Records, v.Chains, v.Signatures)
		}
		if v.OIDC > 0 && !skipSignatures {
			fmt.Fprintf(w, "%d OIDC approvals: statement, principal and replay key checked; the ID token is not kept, so who signed cannot be verified again\n", v.OIDC)
		}
		if v.Unsigned > 0 {
			allowed := ""
			if v.AllowedUnsigned {
				allowed = " (accepted: --allow-unsigned)"
			}
			fmt.Fprintf(w, "%d unsigned approvals (a worker without a keyring took them): who approved is as typed%s\n", v.Unsigned, allowed)
		}
		if v.Exposed > 0 {
			fmt.Fprintf(w, "%d exposed marks (statements whose ID token was sent in plain text; no gate counts them)\n", v.Exposed)
		}
		if v.HeadKey != nil {
			fmt.Fprintf(w, "%d chain heads signed by the worker's key hold (%d signed heads read)\n", v.HeadChains, v.Heads)
		} else {
			fmt.Fprintln(w, "chain heads not checked (no --audit-public-key): an owner who recomputes the hashes is not caught")
		}
		if v.Against != nil {
			fmt.Fprintf(w, "the %d chains of the earlier export are prefixes of today's\n", v.Against.Chains())
		} else {
			fmt.Fprintln(w, "no --against export: a chain removed whole, or its tail, is not caught")
		}
	})
	return nil
}
