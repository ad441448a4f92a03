// Package approval signs and verifies what an operator approves: a
// rollout's start and each approval at its gates. An operator signs a
// Statement with their own SSH key (SSHSIG, the format git uses, namespace
// "fleetsaga") or presents an OIDC ID token, sealed to the workers' key
// (tokenseal.go); the worker checks it against
// its Keyring (configuration, never workflow input), against the gate it is
// for, its age, replay and the stage's Policy. The package does no I/O
// beyond reading the keyring and has no Temporal in it: the workflow and
// the starter use its pure functions, an activity runs Verify.
package approval

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Namespace is the SSHSIG namespace of every fleetsaga signature: a
// signature made for git or for another tool does not verify here.
const Namespace = "fleetsaga"

// Decision is what a Statement says.
type Decision string

const (
	// DecisionApprove approves one stage's plan at a rollout's gate.
	DecisionApprove Decision = "approve"
	// DecisionStart starts a rollout with one plan.
	DecisionStart Decision = "start"
)

// Statement is what an operator signs. Its JSON, exactly as signed, travels
// in Signed.Payload; the verifier reads the statement back from those
// bytes, so no re-encoding has to agree with the signer's.
type Statement struct {
	// Namespace is the Temporal namespace of the rollout: a workflow ID
	// names a rollout in one namespace only, and a start names no run, so
	// without it a start signed in one namespace (staging) would verify
	// in another (production) that has its own ledger.
	TemporalNamespace string `json:"temporalNamespace,omitempty"`
	Rollout           string `json:"rollout"` // the rollout's workflow ID
	// Run is the rollout's original run ID, which a reset keeps and a
	// later run of the plan (same workflow ID) does not: an approval
	// moved in the ledger to another run's gate does not verify there.
	// "" for a start, signed before its run exists.
	Run        string    `json:"run,omitempty"`
	Stage      string    `json:"stage,omitempty"` // "" for a start
	PlanDigest string    `json:"planDigest"`      // the stage's gate plan, or the whole plan for a start
	Decision   Decision  `json:"decision"`
	Reason     string    `json:"reason"`
	At         time.Time `json:"at"`
	Nonce      string    `json:"nonce"` // random: a signature is used once
}

// Signed is a Statement with its proof: an SSH signature or an OIDC ID
// token sealed to the workers' key. It is what `starter approve` and
// `starter rollout` send, and Temporal's history keeps it.
type Signed struct {
	// Payload is the Statement's JSON, the bytes that were signed.
	Payload string `json:"payload"`
	// SSHSig is the armored SSHSIG signature of Payload ("-----BEGIN SSH
	// SIGNATURE-----"), made in Namespace.
	SSHSig string `json:"sshsig,omitempty"`
	// SealedIDToken is an OIDC ID token of the approver, used instead of
	// SSHSig, sealed to the workers' token-sealing key for this Payload
	// (SealIDToken; base64): the history holds no bearer credential. The
	// token counts only if its nonce is the Payload's digest. Never logged,
	// never stored (the ledger keeps a replay key made of its verified
	// claims).
	SealedIDToken string `json:"sealedIdToken,omitempty"`
	// IDToken is an ID token in plain text, as starters before sealing
	// sent it: refused (ReasonUnsealedToken). Kept so that the refusal
	// says why, and so that histories that carry one still decode.
	IDToken string `json:"idToken,omitempty"`
}

// NewStatement fills a statement's time and nonce.
func NewStatement(rollout, stage, digest string, d Decision, reason string, now time.Time) (Statement, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Statement{}, fmt.Errorf("approval nonce: %w", err)
	}
	return Statement{Rollout: rollout, Stage: stage, PlanDigest: digest, Decision: d, Reason: reason,
		At: now.UTC().Truncate(time.Second), Nonce: hex.EncodeToString(b[:])}, nil
}

// Payload is the statement's JSON, as signed.
func (s Statement) Payload() []byte {
	b, err := json.Marshal(s)
	if err != nil { // a struct of strings and a time: cannot fail
		panic(err)
	}
	return b
}

// DigestJSON is the hex SHA-256 of v's JSON: the digest `starter rollout`
// signs for a plan (the RolloutInput without its signature). Pure, so the
// workflow computes the same digest the starter signed.
func DigestJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("plan digest: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// digest is the hex SHA-256 of b.
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
