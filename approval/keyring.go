package approval

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/crypto/ssh"
)

// DefaultMaxAge bounds how old a signed statement may be when the worker
// sees it: long enough for an operator who signs, then waits for the gate
// to take the update, short enough that a statement found in a log or a
// history is useless a day later (and its nonce is in the ledger anyway).
const DefaultMaxAge = 30 * time.Minute

// oidcDiscoveryTimeout bounds one discovery or JWKS fetch from the
// identity provider: a stalled provider must fail the activity attempt
// (it is retried), not hang it.
const oidcDiscoveryTimeout = 10 * time.Second

// KeyringConfig is the worker's configuration of who may sign: an OpenSSH
// allowed_signers file and/or an OIDC issuer.
type KeyringConfig struct {
	AllowedSigners string // path of an OpenSSH allowed_signers file
	OIDCIssuer     string
	OIDCAudience   string   // the client ID the tokens are issued for
	OIDCSubjects   []string // subjects (the "sub" claim) allowed to sign; empty: any, see OIDCGroups
	OIDCGroups     []string // groups (the "groups" claim) allowed to sign; empty: any
	// AllowHTTPIssuer admits an http:// issuer (a development identity
	// provider): over http its keys, and so every token, can be forged
	// by anyone on the path.
	AllowHTTPIssuer bool
	People          string // path of a people file (ParsePeople); "": none
	MaxAge          time.Duration
	// TokenKeys are the paths of the token-sealing private keys the ID
	// tokens are sealed to (tokenseal.go): the current one and the ones
	// it replaced, while a rollout started under them may be reset.
	TokenKeys []string
}

// Configured reports whether any signer is configured.
func (c KeyringConfig) Configured() bool { return c.AllowedSigners != "" || c.OIDCIssuer != "" }

// Keyring is the loaded configuration Verify checks against.
type Keyring struct {
	configured bool // a signers file or an issuer was given
	signers    AllowedSigners
	oidc       *oidcSigners
	tokenKeys  tokenKeys
	people     People
	files      *keyFiles // where signers and people are read from again (keyring_reload.go)
	maxAge     time.Duration
	now        func() time.Time
}

// AllowedSigners is a parsed allowed_signers file.
type AllowedSigners []allowedSigner

type allowedSigner struct {
	principals []string
	key        ssh.PublicKey
	namespaces []string // empty: any namespace
}

// LoadKeyring reads the allowed_signers file; the OIDC provider is
// discovered on first use, so a worker starts while the provider is down.
func LoadKeyring(c KeyringConfig) (*Keyring, error) {
	k := &Keyring{configured: c.Configured(), maxAge: c.MaxAge, now: time.Now}
	if k.maxAge <= 0 {
		k.maxAge = DefaultMaxAge
	}
	if (c.OIDCIssuer == "") != (c.OIDCAudience == "") {
		return nil, fmt.Errorf("approval keyring: an OIDC issuer needs its audience (client ID) and the other way round")
	}
	if c.OIDCIssuer != "" {
		if u, err := url.Parse(c.OIDCIssuer); err != nil || u.Host == "" || u.Scheme != "https" && !(u.Scheme == "http" && c.AllowHTTPIssuer) {
			return nil, fmt.Errorf("approval keyring: OIDC issuer %q: want an https:// URL (http only with the development override)", c.OIDCIssuer)
		}
		k.oidc = &oidcSigners{issuer: c.OIDCIssuer, audience: c.OIDCAudience, subjects: c.OIDCSubjects, groups: c.OIDCGroups}
	}
	var err error
	if k.tokenKeys, err = loadTokenKeys(c.TokenKeys); err != nil {
		return nil, fmt.Errorf("approval keyring: %w", err)
	}
	if c.AllowedSigners != "" || c.People != "" {
		k.files = &keyFiles{signersPath: c.AllowedSigners, peoplePath: c.People}
		if k.signers, k.people, err = k.files.load(); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// person is the person identity is, and whether that is known. With no
// people file and one kind of signer, each identity is its own person
// (an allowed_signers principal, or one issuer's subject). Once a people
// file is given, or SSH keys and an issuer are both trusted (one person
// may hold an identity of each), only the people file says who is who:
// an identity it does not name is unknown.
func (k *Keyring) person(identity string) (string, bool) {
	if p, ok := k.people[identity]; ok {
		return p, true
	}
	return identity, !k.needsPeople()
}

func (k *Keyring) needsPeople() bool {
	return len(k.people) > 0 || len(k.signers) > 0 && k.oidc != nil
}

// Configured reports whether the worker was given signers: a worker
// without any accepts unsigned approvals (and only those a default gate
// takes), one with them refuses every unsigned approval.
func (k *Keyring) Configured() bool { return k != nil && k.configured }

// WithClock returns the keyring reading time from now (tests).
func (k *Keyring) WithClock(now func() time.Time) *Keyring {
	c := *k
	c.now = now
	return &c
}

// ParseAllowedSigners parses OpenSSH's allowed_signers format (ssh-keygen(1)
// "ALLOWED SIGNERS"): "principals [options] keytype key [comment]". The key
// and its options are parsed by x/crypto/ssh's authorized_keys parser;
// cert-authority and validity options are refused, not ignored.
func ParseAllowedSigners(b []byte) (AllowedSigners, error) {
	var out AllowedSigners
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		principals, rest, _ := strings.Cut(line, " ")
		principals = strings.Trim(principals, `"`)
		pub, _, options, _, err := ssh.ParseAuthorizedKey([]byte(strings.TrimSpace(rest)))
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		s := allowedSigner{key: pub}
		for _, p := range strings.Split(principals, ",") {
			if p == "" || strings.ContainsAny(p, "*?!") {
				return nil, fmt.Errorf("line %d: principal %q: patterns are not supported, name each principal", n, p)
			}
			s.principals = append(s.principals, p)
		}
		for _, o := range options {
			name, val, _ := strings.Cut(o, "=")
			switch strings.ToLower(name) {
			case "namespaces":
				s.namespaces = strings.Split(strings.Trim(val, `"`), ",")
			default:
				return nil, fmt.Errorf("line %d: option %q is not supported", n, name)
			}
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// sshPrincipal finds the allowed signer holding key for Namespace.
func (k *Keyring) sshPrincipal(key ssh.PublicKey) (string, bool) {
	fp := ssh.FingerprintSHA256(key)
	for _, s := range k.signers {
		if ssh.FingerprintSHA256(s.key) == fp && (len(s.namespaces) == 0 || slices.Contains(s.namespaces, Namespace)) {
			return s.principals[0], true
		}
	}
	return "", false
}

// oidcSigners verifies ID tokens of one issuer with go-oidc.
type oidcSigners struct {
	issuer, audience string
	subjects, groups []string

	mu       sync.Mutex
	provider *oidc.Provider
}

// idTokenVerifier verifies tokens of the issuer; skipExpiry leaves a
// token's exp and nbf to the caller.
func (o *oidcSigners) idTokenVerifier(now func() time.Time, skipExpiry bool) (*oidc.IDTokenVerifier, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider == nil {
		// The provider keeps this context to fetch rotated keys later: it
		// must outlive any one activity.
		ctx := oidc.ClientContext(context.Background(), &http.Client{Timeout: oidcDiscoveryTimeout})
		p, err := oidc.NewProvider(ctx, o.issuer)
		if err != nil {
			return nil, fmt.Errorf("OIDC issuer %s: %w", o.issuer, err)
		}
		o.provider = p
	}
	return o.provider.Verifier(&oidc.Config{ClientID: o.audience, Now: now, SkipExpiryCheck: skipExpiry}), nil
}
