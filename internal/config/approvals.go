package config

import (
	"errors"
	"fmt"
	"net/url"
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
	People        string
	MaxAge        time.Duration
}

// Bind registers the approval keyring flags on fs.
func (a *Approvals) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&a.AllowedSigners, "approval-allowed-signers", env("FLEETSAGA_APPROVAL_ALLOWED_SIGNERS", ""), "OpenSSH allowed_signers file of the keys that may sign starts and approvals, namespace fleetsaga (env FLEETSAGA_APPROVAL_ALLOWED_SIGNERS)")
	fs.StringVar(&a.OIDCIssuer, "approval-oidc-issuer", env("FLEETSAGA_APPROVAL_OIDC_ISSUER", ""), "OIDC issuer whose ID tokens may sign approvals (env FLEETSAGA_APPROVAL_OIDC_ISSUER)")
	fs.StringVar(&a.OIDCAudience, "approval-oidc-audience", env("FLEETSAGA_APPROVAL_OIDC_AUDIENCE", ""), "the audience (client ID) those tokens must be issued for (env FLEETSAGA_APPROVAL_OIDC_AUDIENCE)")
	fs.StringVar(&a.OIDCSubjects, "approval-oidc-subjects", env("FLEETSAGA_APPROVAL_OIDC_SUBJECTS", ""), "comma-separated subjects (the tokens' sub claim) that may sign; with --approval-oidc-groups, either admits (env FLEETSAGA_APPROVAL_OIDC_SUBJECTS)")
	fs.StringVar(&a.OIDCGroups, "approval-oidc-groups", env("FLEETSAGA_APPROVAL_OIDC_GROUPS", ""), "comma-separated groups (the tokens' groups claim) that may sign (env FLEETSAGA_APPROVAL_OIDC_GROUPS)")
	fs.BoolVar(&a.OIDCAllowHTTP, "approval-oidc-allow-http", env("FLEETSAGA_APPROVAL_OIDC_ALLOW_HTTP", "") == "true", "DEVELOPMENT ONLY: accept an http:// issuer, whose keys (and so every token) anyone on the path can forge (env FLEETSAGA_APPROVAL_OIDC_ALLOW_HTTP=true)")
	fs.StringVar(&a.People, "approval-people", env("FLEETSAGA_APPROVAL_PEOPLE", ""), "file naming which identities are one person, a line each: PERSON ssh:PRINCIPAL oidc:ISSUER#SUBJECT...; needed for four eyes or several approvers once both SSH keys and an issuer are trusted (env FLEETSAGA_APPROVAL_PEOPLE)")
	fs.DurationVar(&a.MaxAge, "approval-max-age", approval.DefaultMaxAge, "a signed start or approval older than this is refused")
}

// Validate checks the keyring's configuration (not the files it names:
// Keyring reads them).
func (a *Approvals) Validate() error {
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
	if a.OIDCIssuer == "" && (a.OIDCSubjects != "" || a.OIDCGroups != "") {
		return errors.New("--approval-oidc-subjects and --approval-oidc-groups need --approval-oidc-issuer")
	}
	return nil
}

// Config is the keyring's configuration, for approval.LoadKeyring.
func (a *Approvals) Config() approval.KeyringConfig {
	return approval.KeyringConfig{AllowedSigners: a.AllowedSigners, OIDCIssuer: a.OIDCIssuer, OIDCAudience: a.OIDCAudience,
		OIDCSubjects: splitList(a.OIDCSubjects), OIDCGroups: splitList(a.OIDCGroups),
		AllowHTTPIssuer: a.OIDCAllowHTTP, People: a.People, MaxAge: a.MaxAge}
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
