package config

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fleetsaga/fleetsaga/approval"
)

// Approvals is the worker's keyring: who may sign a rollout's start and
// its approvals. It is configuration, never workflow input: a
// client that can reach Temporal cannot add itself.
type Approvals struct {
	AllowedSigners string
	OIDCIssuer     string
	OIDCAudience   string
	OIDCSubjects   string // comma-separated
	OIDCGroups     string // comma-separated
	// OIDCAllowHTTP is the development override for an http:// issuer.
	OIDCAllowHTTP bool
	// TokenKeys are the token-sealing private key files (comma-separated)
	// the starters seal ID tokens to.
	TokenKeys string
	People    string
	MaxAge    time.Duration
	// The worker's least policy (approval.Minimum): a plan may ask for
	// more, never for less.
	RequireSignedStart bool
	MinApprovers       int
	GatedKinds         string // comma-separated update kinds
	envErr             error  // an environment variable that does not parse
}

// Bind registers the approval keyring flags on fs.
func (a *Approvals) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&a.AllowedSigners, "approval-allowed-signers", env("FLEETSAGA_APPROVAL_ALLOWED_SIGNERS", ""), "OpenSSH allowed_signers file of the keys that may sign starts and approvals, namespace fleetsaga (env FLEETSAGA_APPROVAL_ALLOWED_SIGNERS)")
	fs.StringVar(&a.OIDCIssuer, "approval-oidc-issuer", env("FLEETSAGA_APPROVAL_OIDC_ISSUER", ""), "OIDC issuer whose ID tokens may sign approvals (env FLEETSAGA_APPROVAL_OIDC_ISSUER)")
	fs.StringVar(&a.OIDCAudience, "approval-oidc-audience", env("FLEETSAGA_APPROVAL_OIDC_AUDIENCE", ""), "the audience (client ID) those tokens must be issued for (env FLEETSAGA_APPROVAL_OIDC_AUDIENCE)")
	fs.StringVar(&a.OIDCSubjects, "approval-oidc-subjects", env("FLEETSAGA_APPROVAL_OIDC_SUBJECTS", ""), "comma-separated subjects (the tokens' sub claim) that may sign; with --approval-oidc-groups, either admits (env FLEETSAGA_APPROVAL_OIDC_SUBJECTS)")
	fs.StringVar(&a.OIDCGroups, "approval-oidc-groups", env("FLEETSAGA_APPROVAL_OIDC_GROUPS", ""), "comma-separated groups (the tokens' groups claim) that may sign (env FLEETSAGA_APPROVAL_OIDC_GROUPS)")
	fs.BoolVar(&a.OIDCAllowHTTP, "approval-oidc-allow-http", env("FLEETSAGA_APPROVAL_OIDC_ALLOW_HTTP", "") == "true", "DEVELOPMENT ONLY: accept an http:// issuer, whose keys (and so every token) anyone on the path can forge (env FLEETSAGA_APPROVAL_OIDC_ALLOW_HTTP=true)")
	fs.StringVar(&a.TokenKeys, "approval-token-key", env("FLEETSAGA_APPROVAL_TOKEN_KEY", ""), "X25519 private key file (PEM, openssl genpkey -algorithm X25519) that starters seal ID tokens to, so that no history holds a token; comma-separated: the current key, then the ones it replaced, kept until every rollout started under them has ended (a reset re-opens its start's token) (env FLEETSAGA_APPROVAL_TOKEN_KEY)")
	fs.StringVar(&a.People, "approval-people", env("FLEETSAGA_APPROVAL_PEOPLE", ""), "file naming which identities are one person, a line each: PERSON ssh:PRINCIPAL oidc:ISSUER#SUBJECT...; needed for four eyes or several approvers once both SSH keys and an issuer are trusted (env FLEETSAGA_APPROVAL_PEOPLE)")
	fs.DurationVar(&a.MaxAge, "approval-max-age", a.envDuration("FLEETSAGA_APPROVAL_MAX_AGE", approval.DefaultMaxAge), "a signed start or approval older than this is refused (env FLEETSAGA_APPROVAL_MAX_AGE)")
	fs.BoolVar(&a.RequireSignedStart, "approval-require-signed-start", env("FLEETSAGA_APPROVAL_REQUIRE_SIGNED_START", "") == "true", "refuse every rollout whose start is not signed, whatever its plan says (env FLEETSAGA_APPROVAL_REQUIRE_SIGNED_START=true)")
	fs.IntVar(&a.MinApprovers, "approval-min-approvers", a.envInt("FLEETSAGA_APPROVAL_MIN_APPROVERS", 0), "every gate needs at least this many distinct approvers, whatever its plan says (env FLEETSAGA_APPROVAL_MIN_APPROVERS)")
	fs.StringVar(&a.GatedKinds, "approval-gated-kinds", env("FLEETSAGA_APPROVAL_GATED_KINDS", ""), "comma-separated update kinds whose stages always wait at a gate, whatever their plan says (env FLEETSAGA_APPROVAL_GATED_KINDS)")
}

func (a *Approvals) envDuration(name string, def time.Duration) time.Duration {
	v := env(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		a.envErr = fmt.Errorf("%s=%q: want a duration such as 30m", name, v)
		return def
	}
	return d
}

func (a *Approvals) envInt(name string, def int) int {
	v := env(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		a.envErr = fmt.Errorf("%s=%q: want a number", name, v)
		return def
	}
	return n
}

// Validate checks the keyring's configuration (not the files it names:
// Keyring reads them).
func (a *Approvals) Validate() error {
	if a.envErr != nil {
		return a.envErr
	}
	if err := a.validateMinimum(); err != nil {
		return err
	}
	if a.MaxAge <= 0 {
		return errors.New("--approval-max-age must be positive")
	}
	if (a.OIDCIssuer == "") != (a.OIDCAudience == "") {
		return errors.New("--approval-oidc-issuer and --approval-oidc-audience go together")
	}
	if a.OIDCIssuer != "" {
		u, err := url.Parse(a.OIDCIssuer)
		if err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || u.User != nil {
			return fmt.Errorf("--approval-oidc-issuer: want the issuer's https:// URL (as in its tokens' iss claim)")
		}
		if u.Scheme == "http" && !a.OIDCAllowHTTP {
			return fmt.Errorf("--approval-oidc-issuer %s is http: its keys, and so its tokens, can be forged on the way; give its https:// URL (--approval-oidc-allow-http is for development only)", a.OIDCIssuer)
		}
	}
	if a.OIDCIssuer != "" && a.TokenKeys == "" {
		return errors.New("--approval-oidc-issuer needs --approval-token-key: ID tokens come sealed to it, as a token in plain text would stay in Temporal's history (docs/DEPLOYING.md, Approvals)")
	}
	if a.OIDCIssuer == "" && (a.OIDCSubjects != "" || a.OIDCGroups != "") {
		return errors.New("--approval-oidc-subjects and --approval-oidc-groups need --approval-oidc-issuer")
	}
	return nil
}

// validateMinimum checks the least policy: what only signatures can meet
// needs signers (a worker without any accepts only unsigned approvals).
func (a *Approvals) validateMinimum() error {
	signers := a.AllowedSigners != "" || a.OIDCIssuer != ""
	switch {
	case a.MinApprovers < 0:
		return fmt.Errorf("--approval-min-approvers must be at least 0, not %d", a.MinApprovers)
	case a.RequireSignedStart && !signers:
		return errors.New("--approval-require-signed-start needs signers (--approval-allowed-signers or --approval-oidc-issuer): without them no start can be signed")
	case a.MinApprovers > 1 && !signers:
		return fmt.Errorf("--approval-min-approvers %d needs signers (--approval-allowed-signers or --approval-oidc-issuer): typed names cannot tell approvers apart", a.MinApprovers)
	}
	return nil
}

// Minimum is the worker's least approval policy, for the approval
// activities.
func (a *Approvals) Minimum() approval.Minimum {
	return approval.Minimum{SignedStart: a.RequireSignedStart, Approvers: a.MinApprovers, GatedKinds: splitList(a.GatedKinds)}
}

// Config is the keyring's configuration, for approval.LoadKeyring.
func (a *Approvals) Config() approval.KeyringConfig {
	return approval.KeyringConfig{AllowedSigners: a.AllowedSigners, OIDCIssuer: a.OIDCIssuer, OIDCAudience: a.OIDCAudience,
		OIDCSubjects: splitList(a.OIDCSubjects), OIDCGroups: splitList(a.OIDCGroups),
		AllowHTTPIssuer: a.OIDCAllowHTTP, People: a.People, MaxAge: a.MaxAge, TokenKeys: splitList(a.TokenKeys)}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
