package approval

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// A start sent with an ID token in plain text (an old starter, `temporal
// workflow start`) is in Temporal's history before any worker sees it,
// and base-mode HPKE lets anyone seal: whoever reads that history could
// seal the token to the workers' public key and start the same plan as
// its subject. So the statement that token binds (its nonce is the
// statement's digest) is marked exposed in the ledger, and no sealed
// token for it counts afterwards.

// exposedKeyPrefix marks an exposed statement's key.
const exposedKeyPrefix = "exposed:"

// ExposedKey names the statement payload in the ledger's exposed
// statements: its digest, the nonce any token usable with it binds.
func ExposedKey(payload string) string { return exposedKeyPrefix + digest([]byte(payload)) }

// Expose marks payload exposed if it is a statement for gate (a
// statement for another gate cannot be used here, and marking it would
// let anyone spend someone else's statement), then refuses the raw
// token (ErrRawIDToken).
func Expose(ctx context.Context, payload string, gate Gate, h History) error {
	var st Statement
	if json.Unmarshal([]byte(payload), &st) != nil || checkGate(st, gate) != nil {
		return ErrRawIDToken
	}
	if err := h.Expose(ctx, gate, ExposedKey(payload)); err != nil {
		return err // retryable: the mark must be written before the refusal
	}
	return ErrRawIDToken
}

// refuseRawToken is Check's answer to a raw ID token: verified as far as
// the keyring can (a token that does not verify here would not once
// sealed either), its statement exposed, then refused.
func (k *Keyring) refuseRawToken(ctx context.Context, s Signed, gate Gate, h History) error {
	if k.oidc != nil {
		if _, err := k.verifyOIDC(ctx, s.Payload, s.IDToken); err != nil {
			if r := (*Refusal)(nil); errors.As(err, &r) {
				return ErrRawIDToken
			}
			return err // the provider unreachable: retry, the token may verify
		}
	}
	return Expose(ctx, s.Payload, gate, h)
}

// refuseExposed refuses an ID token whose statement was exposed: it is
// the one sent in plain text, or a copy of it sealed since.
func refuseExposed(ctx context.Context, v Verified, h History) error {
	if v.Principal.Method != MethodOIDC {
		return nil
	}
	exposed, err := h.Exposed(ctx, ExposedKey(v.Payload))
	if err != nil || !exposed {
		return err
	}
	return refuse(ReasonReplayed, "an ID token for this statement was sent in plain text before, so it is in a history anyone with read access may copy: sign again with a new token")
}

// recordedStart is a reset run's start, recorded by the run it resets:
// the ledger holds this run's start with exactly this statement, whose
// nonce is random, and a run's start signature is its input, which a
// reset keeps. The ledger is not a key (its role may INSERT a row naming
// anyone), so the row counts only once the run's own sealed token opens
// with one of the worker's token keys and verifies as a fresh one would
// (the issuer's signature, audience and azp, nonce the statement's
// digest, an allowed subject), as the row's identity and person, with the
// row's replay key. Not checked again: the token's expiry and the
// statement's age, checked when the row was written, so a reset days
// later counts. A reset across a token-key rotation needs the old key
// kept (DEPLOYING "Approvals"). Only sealed starts: an approval arrives
// by update, from anyone who may send one; an SSH start takes Check's
// retry path, where the row must hold the signature just verified
// (trustRecorded).
func (k *Keyring) recordedStart(ctx context.Context, s Signed, gate Gate, h History) (*Verified, error) {
	if gate.Decision != DecisionStart || s.SealedIDToken == "" || s.SSHSig != "" {
		return nil, nil
	}
	r, err := h.Recorded(ctx, gate, s.Payload)
	if err != nil || r == nil || r.Principal.Method != MethodOIDC {
		return nil, err
	}
	v, err := k.verifyProof(ctx, s, gate)
	if err != nil {
		return nil, err
	}
	if v.Principal.Method != MethodOIDC || r.ReplayKey != v.ReplayKey || r.Principal.KeyFingerprint != v.Principal.KeyFingerprint ||
		r.Principal.Name != v.Principal.Name {
		return nil, refuse(ReasonBadSignature, "the ledger's record of this run's start is not the sealed ID token's (%s): start the plan again", v.Principal.Name)
	}
	if v.Statement.TemporalNamespace != "" { // none: recorded before namespaces were signed
		if err := checkNamespace(v.Statement, gate); err != nil {
			return nil, err
		}
	}
	if err := refuseExposed(ctx, v, h); err != nil {
		return nil, err
	}
	v.tokenExpired = time.Time{}
	return &v, nil
}
