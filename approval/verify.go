package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Method is how a principal proved who they are.
type Method string

const (
	MethodSSH  Method = "ssh"
	MethodOIDC Method = "oidc"
	// MethodUnsigned marks an approval a worker with no keyring accepted
	// without proof: its name is as the approver typed it.
	MethodUnsigned Method = "unsigned"
)

// Gate is what a statement must be for: the rollout, stage and plan the
// workflow shows, and the decision it waits for.
type Gate struct {
	// TemporalNamespace is the Temporal namespace the rollout runs in
	// (Statement.TemporalNamespace).
	TemporalNamespace string `json:"temporalNamespace,omitempty"`
	Rollout           string `json:"rollout"`
	// Run is the rollout's original run ID (Statement.Run).
	Run        string   `json:"run,omitempty"`
	Stage      string   `json:"stage,omitempty"`
	PlanDigest string   `json:"planDigest"`
	Decision   Decision `json:"decision"`
}

// Principal is who signed, as the keyring knows them.
type Principal struct {
	// Name is the person: the people file's name for ID, else ID itself.
	// Four eyes and distinct approvers compare it.
	Name string `json:"name"`
	// ID is the identity proved: "ssh:<allowed_signers principal>" or
	// "oidc:<issuer>#<subject>".
	ID     string   `json:"id,omitempty"`
	Groups []string `json:"groups,omitempty"`
	Method Method   `json:"method"`
	// KeyFingerprint is the SSH key's SHA256 fingerprint, or for OIDC
	// "issuer#subject".
	KeyFingerprint string `json:"keyFingerprint"`
}

// Verified is a statement whose proof checked out.
type Verified struct {
	Statement Statement `json:"statement"`
	Principal Principal `json:"principal"`
	// Payload is the signed bytes; Signature the armored SSHSIG ("" for
	// OIDC, whose token is not kept: it is a bearer credential).
	Payload   string `json:"payload"`
	Signature string `json:"signature,omitempty"`
	// ReplayKey is what may be used once: the statement's nonce (SSH), or
	// "idtoken:" and the SHA-256 of the verified token's issuer, subject
	// and jti (else its nonce, iat and exp), never of its bytes, which may be
	// re-encoded without changing what verifies (OIDC).
	ReplayKey string `json:"replayKey"`
	// RecordedAt is when the ledger recorded it (History.Recorded's row;
	// zero for one just verified): a statement sent again counts only
	// within the max age of it (trustRecorded).
	RecordedAt time.Time `json:"-"`
	// tokenExpired is when an ID token that verified but for its expiry
	// expired (zero: it had not): fresh refuses it.
	tokenExpired time.Time
}

// Verify checks s's proof against the keyring, that it is for gate and
// fresh. Replay (has ReplayKey been used?) is the ledger's to answer, and
// the stage's Policy the caller's (Policy.Admit). Every refusal is a
// *Refusal; any other error (the identity provider unreachable) is
// worth retrying.
func (k *Keyring) Verify(ctx context.Context, s Signed, gate Gate) (Verified, error) {
	k, err := k.current()
	if err != nil {
		return Verified{}, err
	}
	v, err := k.verifyProof(ctx, s, gate)
	if err != nil {
		return Verified{}, err
	}
	if err := checkNamespace(v.Statement, gate); err != nil {
		return Verified{}, err
	}
	if err := k.fresh(v); err != nil {
		return Verified{}, err
	}
	return v, nil
}

// verifyProof is Verify but for freshness and namespace: Check asks the ledger first
// whether this run recorded the statement already (then its age was
// checked when it was first seen, and a reset run may use it again).
func (k *Keyring) verifyProof(ctx context.Context, s Signed, gate Gate) (Verified, error) {
	if len(k.signers) == 0 && k.oidc == nil {
		return Verified{}, refuse(ReasonNoKeyring, "the worker has no approval signers configured (--approval-allowed-signers, --approval-oidc-issuer)")
	}
	var v Verified
	var err error
	switch {
	case s.IDToken != "":
		return Verified{}, ErrRawIDToken
	case s.SSHSig != "" && s.SealedIDToken != "":
		return Verified{}, refuse(ReasonMalformed, "both an SSH signature and an ID token: send one")
	case s.SSHSig != "":
		v, err = k.verifySSH(s)
	case s.SealedIDToken != "":
		var tok string
		if tok, err = k.tokenKeys.open(s); err == nil {
			v, err = k.verifyOIDC(ctx, s.Payload, tok)
		}
	default:
		return Verified{}, refuse(ReasonUnsigned, "the approval is not signed: sign it with --sign-key, an ssh-agent key, or --id-token-command")
	}
	if err != nil {
		return Verified{}, err
	}
	if err := json.Unmarshal([]byte(s.Payload), &v.Statement); err != nil {
		return Verified{}, refuse(ReasonMalformed, "the signed statement does not parse: %v", err)
	}
	v.Payload = s.Payload
	if v.Principal.Method == MethodSSH {
		if v.Statement.Nonce == "" {
			return Verified{}, refuse(ReasonMalformed, "the signed statement has no nonce")
		}
		if strings.HasPrefix(v.Statement.Nonce, exposedKeyPrefix) {
			// The ledger keys its exposed marks so (ExposedKey).
			return Verified{}, refuse(ReasonMalformed, "the signed statement's nonce starts with %q, which is reserved", exposedKeyPrefix)
		}
		v.ReplayKey = v.Statement.Nonce
	}
	if err := checkGate(v.Statement, gate); err != nil {
		return Verified{}, err
	}
	return v, nil
}

// fresh refuses a verified statement older than the keyring's max age
// (or from the future), and an expired ID token.
func (k *Keyring) fresh(v Verified) error {
	if !v.tokenExpired.IsZero() {
		return refuse(ReasonTokenExpired, "the ID token expired at %s: get a fresh one", v.tokenExpired.UTC().Format("2006-01-02T15:04:05Z"))
	}
	now := k.now()
	if age := now.Sub(v.Statement.At); age > k.maxAge {
		return refuse(ReasonExpired, "signed at %s, %s ago; approvals older than %s are refused: sign again",
			v.Statement.At.UTC().Format("2006-01-02T15:04:05Z"), age.Round(1e9), k.maxAge)
	} else if age < -k.maxAge {
		return refuse(ReasonExpired, "signed at %s, in the future: check the signer's clock", v.Statement.At.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return nil
}

func (k *Keyring) verifySSH(s Signed) (Verified, error) {
	sig, err := sshsig.Unarmor([]byte(s.SSHSig))
	if err != nil {
		return Verified{}, refuse(ReasonMalformed, "the SSH signature does not parse: %v", err)
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	name, ok := k.sshPrincipal(sig.PublicKey)
	if !ok {
		return Verified{}, refuse(ReasonUnknownKey, "key %s is not an allowed signer for namespace %s", fp, Namespace)
	}
	if err := sshsig.Verify(bytes.NewReader([]byte(s.Payload)), sig, sig.PublicKey, sig.HashAlgorithm, Namespace); err != nil {
		if errors.Is(err, sshsig.ErrNamespaceMismatch) {
			return Verified{}, refuse(ReasonBadSignature, "key %s (%s) signed for namespace %q, not %q", fp, name, sig.Namespace, Namespace)
		}
		return Verified{}, refuse(ReasonBadSignature, "the signature by key %s (%s) does not verify over the statement", fp, name)
	}
	id := SSHIdentity(name)
	person, _ := k.person(id)
	return Verified{Principal: Principal{Name: person, ID: id, Method: MethodSSH, KeyFingerprint: fp}, Signature: s.SSHSig}, nil
}

// idClaims are the ID token claims that name and bind a principal.
type idClaims struct {
	// No email: an identity is the issuer's subject, and no list, policy
	// or people file names anyone by email, so email_verified vouches for
	// nothing checked here.
	Groups []string `json:"groups"`
	Nonce  string   `json:"nonce"`
	JTI    string   `json:"jti"`
	AZP    string   `json:"azp"`
}

// verifyOIDC verifies token, opened from a Signed whose statement is payload.
func (k *Keyring) verifyOIDC(ctx context.Context, payload, token string) (Verified, error) {
	if k.oidc == nil {
		return Verified{}, refuse(ReasonUnknownKey, "ID tokens are not accepted: the worker has no OIDC issuer configured")
	}
	verifier, err := k.oidc.idTokenVerifier(k.now, false)
	if err != nil {
		return Verified{}, err // retryable: the provider may come back
	}
	tok, err := verifier.Verify(ctx, token)
	var expired *oidc.TokenExpiredError
	var tokenExpired time.Time
	if errors.As(err, &expired) {
		// Verified but for its expiry: fresh refuses it, unless this run
		// recorded it already (Check).
		tokenExpired = expired.Expiry
		if verifier, err = k.oidc.idTokenVerifier(k.now, true); err == nil {
			tok, err = verifier.Verify(ctx, token)
		}
	}
	if err != nil {
		// go-oidc's messages name the claim that failed, never the token.
		return Verified{}, refuse(ReasonBadToken, "the ID token does not verify for issuer %s, audience %s: %v", k.oidc.issuer, k.oidc.audience, err)
	}
	var c idClaims
	if err := tok.Claims(&c); err != nil {
		return Verified{}, refuse(ReasonBadToken, "the ID token's claims do not parse: %v", err)
	}
	// A token binds nothing unless it was issued for this statement: one
	// without the statement's digest as its nonce could approve any gate
	// its holder (or whoever found it in a log) chose.
	switch {
	case c.Nonce == "":
		return Verified{}, refuse(ReasonUnboundToken, "the ID token has no nonce, so it binds no approval: get a token whose nonce is the statement's digest (starter --id-token-command)")
	case c.Nonce != digest([]byte(payload)):
		return Verified{}, refuse(ReasonWrongGate, "the ID token's nonce is not the statement's digest: it was issued for another approval")
	}
	// OpenID Connect Core 3.1.3.7: azp, when present, is the client the
	// token was issued to; with several audiences it must be present.
	if c.AZP != "" && c.AZP != k.oidc.audience || c.AZP == "" && len(tok.Audience) > 1 {
		return Verified{}, refuse(ReasonBadToken, "the ID token was issued to client %q, not %s", c.AZP, k.oidc.audience)
	}
	if tok.Subject == "" {
		return Verified{}, refuse(ReasonBadToken, "the ID token has no subject")
	}
	id := OIDCIdentity(tok.Issuer, tok.Subject)
	if len(k.oidc.subjects) > 0 || len(k.oidc.groups) > 0 {
		if !slices.Contains(k.oidc.subjects, tok.Subject) && !slices.ContainsFunc(c.Groups, func(g string) bool { return slices.Contains(k.oidc.groups, g) }) {
			return Verified{}, refuse(ReasonUnknownKey, "%s is not among the allowed OIDC subjects or groups", id)
		}
	}
	person, _ := k.person(id)
	return Verified{
		Principal:    Principal{Name: person, ID: id, Groups: c.Groups, Method: MethodOIDC, KeyFingerprint: tok.Issuer + "#" + tok.Subject},
		ReplayKey:    tokenReplayKey(tok.Issuer, tok.Subject, c.JTI, c.Nonce, tok.IssuedAt.Unix(), tok.Expiry.Unix()),
		tokenExpired: tokenExpired,
	}, nil
}

// tokenReplayKey names one ID token by what verified in it: its issuer,
// subject and jti, or without a jti its nonce (the statement's digest,
// which the token binds) and its issue and expiry times: two tokens of
// one subject issued in one second for two statements are two keys, and
// no one who can predict iat can take a key before its token exists.
func tokenReplayKey(issuer, subject, jti, nonce string, iat, exp int64) string {
	parts := []string{issuer, subject, "jti", jti}
	if jti == "" {
		parts = []string{issuer, subject, "nonce-iat-exp", nonce, fmt.Sprint(iat), fmt.Sprint(exp)}
	}
	b, _ := json.Marshal(parts) // strings: cannot fail; JSON keeps the parts apart
	return tokenReplayKeyPrefix + digest(b)
}

func checkGate(st Statement, g Gate) error {
	switch {
	case st.Decision != g.Decision:
		return refuse(ReasonWrongGate, "signed to %s, the gate waits for %s", st.Decision, g.Decision)
	case st.Rollout != g.Rollout:
		return refuse(ReasonWrongGate, "signed for rollout %s, not %s", st.Rollout, g.Rollout)
	case st.Run != g.Run:
		return refuse(ReasonWrongGate, "signed for run %q of %s, the gate is run %q: approve this run again", st.Run, g.Rollout, g.Run)
	case st.Stage != g.Stage:
		return refuse(ReasonWrongGate, "signed for stage %q of %s, the gate is stage %q", st.Stage, g.Rollout, g.Stage)
	case st.PlanDigest != g.PlanDigest:
		return refuse(ReasonWrongGate, "signed for plan %s, the gate shows plan %s", short(st.PlanDigest), short(g.PlanDigest))
	}
	return nil
}

// checkNamespace refuses a statement signed for a rollout in another
// Temporal namespace, or naming none (signed by a starter from before
// namespaces were signed): Check lets such a one count only when this
// gate's ledger recorded it (verified when first seen).
func checkNamespace(st Statement, g Gate) error {
	if st.TemporalNamespace == g.TemporalNamespace {
		return nil
	}
	if st.TemporalNamespace == "" {
		return refuse(ReasonWrongGate, "the statement names no Temporal namespace, the rollout runs in %q: sign it again with this build's starter", g.TemporalNamespace)
	}
	return refuse(ReasonWrongGate, "signed for a rollout in Temporal namespace %q, this one runs in %q", st.TemporalNamespace, g.TemporalNamespace)
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	if d == "" {
		return "(none)"
	}
	return d
}

// VerifyStored re-checks an approval the ledger holds, offline, for the
// gate want: the statement is for that gate, and
//   - ssh: the recorded replay key is the statement's nonce, the recorded
//     fingerprint is the signing key's, the signature verifies over the
//     statement, and with allowed (the allowed_signers a verifier trusts)
//     the key is an allowed signer's and the recorded principal is that
//     signer ("ssh:<principal>", a bare "<principal>" from a build before
//     identities, or the person people maps it to). allowed nil checks the
//     signature against the key it names: a key anyone can make.
//   - oidc: the token is not kept (a bearer credential), so who signed
//     cannot be checked again; only that the statement is for the gate,
//     that an identity principal is the recorded issuer#subject and that
//     the replay key has a token's shape. The hash chain and signed chain
//     heads are what hold such a row.
//
// Any other method is refused.
func VerifyStored(allowed AllowedSigners, people People, r Recorded, want Gate) error {
	var st Statement
	if err := json.Unmarshal([]byte(r.Payload), &st); err != nil {
		return fmt.Errorf("stored statement does not parse: %v", err)
	}
	if err := checkGate(st, want); err != nil {
		return err
	}
	switch r.Method {
	case MethodSSH:
	case MethodOIDC:
		return verifyStoredOIDC(people, r)
	default:
		return fmt.Errorf("method %q has no signature to verify", r.Method)
	}
	if st.Nonce == "" || st.Nonce != r.ReplayKey {
		return fmt.Errorf("the recorded replay key %s is not the signed statement's nonce %s", short(r.ReplayKey), short(st.Nonce))
	}
	sig, err := sshsig.Unarmor([]byte(r.Signature))
	if err != nil {
		return fmt.Errorf("stored signature does not parse: %v", err)
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	if fp != r.KeyFingerprint {
		return fmt.Errorf("stored fingerprint %s is not the signing key's %s", r.KeyFingerprint, fp)
	}
	if err := sshsig.Verify(bytes.NewReader([]byte(r.Payload)), sig, sig.PublicKey, sig.HashAlgorithm, Namespace); err != nil {
		return fmt.Errorf("stored signature by %s does not verify over the stored statement: %v", fp, err)
	}
	if allowed == nil {
		return nil
	}
	principals, ok := allowed.principals(sig.PublicKey)
	if !ok {
		return fmt.Errorf("key %s is not in the allowed signers given", fp)
	}
	for _, p := range principals {
		if r.Principal == SSHIdentity(p) || r.Principal == p || people != nil && people[SSHIdentity(p)] == r.Principal {
			return nil
		}
	}
	return fmt.Errorf("recorded as principal %q, but the key %s is allowed signer %s's", r.Principal, fp, strings.Join(principals, ", "))
}

// tokenReplayKeyPrefix starts every ID token's replay key (tokenReplayKey).
const tokenReplayKeyPrefix = "idtoken:"

func verifyStoredOIDC(people People, r Recorded) error {
	if !strings.HasPrefix(r.ReplayKey, tokenReplayKeyPrefix) {
		return fmt.Errorf("the recorded replay key %s is not an ID token's", short(r.ReplayKey))
	}
	iss, sub, ok := strings.Cut(r.KeyFingerprint, "#")
	if !ok || iss == "" || sub == "" {
		return fmt.Errorf("the recorded issuer#subject %q does not parse", r.KeyFingerprint)
	}
	// A worker records the token's identity, or the person the people
	// file maps it to; nothing else.
	id := OIDCIdentity(iss, sub)
	if r.Principal == id || people != nil && people[id] != "" && people[id] == r.Principal {
		return nil
	}
	return fmt.Errorf("recorded as principal %q, but the token was %s's", r.Principal, id)
}

// principals are the allowed_signers principals of the line holding key
// for Namespace.
func (a AllowedSigners) principals(key ssh.PublicKey) ([]string, bool) {
	fp := ssh.FingerprintSHA256(key)
	for _, s := range a {
		if ssh.FingerprintSHA256(s.key) == fp && (len(s.namespaces) == 0 || slices.Contains(s.namespaces, Namespace)) {
			return s.principals, true
		}
	}
	return nil, false
}
