package approval

import "context"

// trustRecorded decides whether the ledger's record of v at gate (the
// retry path of Check: its age is not checked again, a reset run's start
// may be older than the max age) may stand for a fresh check. The ledger
// is not a key: a row its role INSERTs names the statement's nonce too.
// So a statement naming a namespace must name this one (one recorded
// before namespaces were signed names none: its run binds it), and an
// ssh row must hold the signature just verified against the keyring
// (verifyProof), by the same key and person, with the same nonce.
func (k *Keyring) trustRecorded(ctx context.Context, v Verified, gate Gate, h History) error {
	if v.Statement.TemporalNamespace != "" {
		if err := checkNamespace(v.Statement, gate); err != nil {
			return err
		}
	}
	if v.Principal.Method != MethodSSH {
		return nil // an OIDC row keeps no token; the one sent was verified (verifyProof)
	}
	r, err := h.Recorded(ctx, gate, v.Payload)
	if err != nil {
		return err
	}
	if r == nil || r.Signature != v.Signature || r.ReplayKey != v.ReplayKey || r.Principal.Name != v.Principal.Name ||
		r.Principal.KeyFingerprint != v.Principal.KeyFingerprint {
		return refuse(ReasonBadSignature, "the ledger's row of this approval is not the signature just verified (by %s): sign a new one", v.Principal.Name)
	}
	return nil
}
