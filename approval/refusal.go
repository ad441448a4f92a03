package approval

import "fmt"

// Reason names why an approval was refused; it is the detail of the
// failure.ApprovalRefused error the activity raises, for tests and the
// starter to match on.
type Reason string

const (
	ReasonUnsigned        Reason = "Unsigned"        // neither an SSH signature nor an ID token
	ReasonMalformed       Reason = "Malformed"       // payload or signature does not parse
	ReasonUnknownKey      Reason = "UnknownKey"      // no allowed signer holds the key
	ReasonBadSignature    Reason = "BadSignature"    // the signature does not verify (other namespace, other bytes)
	ReasonBadToken        Reason = "BadToken"        // the ID token does not verify (issuer, audience, signature)
	ReasonTokenExpired    Reason = "TokenExpired"    // the ID token has expired
	ReasonWrongGate       Reason = "WrongGate"       // signed for another rollout, stage, plan or decision
	ReasonExpired         Reason = "Expired"         // the statement is older than the keyring's max age
	ReasonReplayed        Reason = "Replayed"        // the nonce or token was used before
	ReasonSpent           Reason = "Spent"           // it opened this gate for a pass that ran (before a reset)
	ReasonNotAllowed      Reason = "NotAllowed"      // the principal may not approve this stage
	ReasonFourEyes        Reason = "FourEyes"        // the rollout's starter may not approve it
	ReasonAlreadyApproved Reason = "AlreadyApproved" // this principal approved this gate already
	ReasonNoKeyring       Reason = "NoKeyring"       // the worker has no signers configured
	ReasonUnboundToken    Reason = "UnboundToken"    // the ID token's nonce is not the statement's digest
	ReasonUnknownPerson   Reason = "UnknownPerson"   // four eyes or distinct approvers, and who is who is not known
	ReasonUnsealedToken   Reason = "UnsealedToken"   // an ID token in plain text, which the history would keep
)

// Refusal is a refused approval: one reason and one sentence, never a
// token or key material.
type Refusal struct {
	Reason Reason
	Msg    string
}

func (r *Refusal) Error() string { return fmt.Sprintf("approval refused (%s): %s", r.Reason, r.Msg) }

func refuse(r Reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: r, Msg: fmt.Sprintf(format, args...)}
}
