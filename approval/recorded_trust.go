package approval

import (
	"context"
	"time"
)

// trustRecorded decides whether the ledger's record of v at gate (the
// retry path of Check: the statement's age and the token's expiry are not
// checked again) may stand for a fresh check. The ledger is not a key: a
// row its role INSERTs names the statement's nonce too. So a statement
// naming a namespace must name this one (one recorded before namespaces
// were signed names none: its run binds it), an ssh row must hold the
// signature just verified against the keyring (verifyProof), by the same
// key and person, with the same nonce, and an approval counts again only
// within the max age of its row's recording: the retry of an activity
// after its write, or the approve update Temporal re-applies after a
// reset soon after, but not one a history reader re-sends days later. A
// start has no such bound: it is the run's input, which a reset keeps.
func (k *Keyring) trustRecorded(ctx context.Context, v Verified, gate Gate, h History) error {
	if v.Statement.TemporalNamespace != "" {
		if err := checkNamespace(v.Statement, gate); err != nil {
			return err
		}
	}
	r, err := h.Recorded(ctx, gate, v.Payload)
	if err != nil {
		return err
	}
	if r == nil {
		return refuse(ReasonReplayed, "this signed approval (by %s) was used before: sign a new one", v.Principal.Name)
	}
	if gate.Decision != DecisionStart {
		if age := k.now().Sub(r.RecordedAt); r.RecordedAt.IsZero() || age > k.maxAge || age < -k.maxAge {
			return refuse(ReasonExpired, "this approval was recorded at %s; one sent again counts only within %s of its recording: sign a new one",
				r.RecordedAt.UTC().Format(time.RFC3339), k.maxAge)
		}
	}
	if v.Principal.Method != MethodSSH {
		return nil // an OIDC row keeps no token; the one sent was verified (verifyProof)
	}
	if r.Signature != v.Signature || r.ReplayKey != v.ReplayKey || r.Principal.Name != v.Principal.Name ||
		r.Principal.KeyFingerprint != v.Principal.KeyFingerprint {
		return refuse(ReasonBadSignature, "the ledger's row of this approval is not the signature just verified (by %s): sign a new one", v.Principal.Name)
	}
	return nil
}
