package config_test

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/internal/config"
)

func TestApprovalsFlags(t *testing.T) {
	parse := func(args ...string) (*config.Approvals, error) {
		var a config.Approvals
		fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
		a.Bind(fs)
		require.NoError(t, fs.Parse(args))
		return &a, a.Validate()
	}
	a, err := parse("--approval-allowed-signers", "/etc/fleetsaga/allowed_signers",
		"--approval-oidc-issuer", "https://id.example.com", "--approval-oidc-audience", "fleetsaga",
		"--approval-oidc-groups", "sp-admins, ops", "--approval-token-key", "/etc/fleetsaga/token.key, /etc/fleetsaga/token-old.key")
	require.NoError(t, err)
	c := a.Config()
	require.Equal(t, []string{"sp-admins", "ops"}, c.OIDCGroups)
	require.Equal(t, []string{"/etc/fleetsaga/token.key", "/etc/fleetsaga/token-old.key"}, c.TokenKeys, "a rotation's two keys")
	_, err = parse("--approval-oidc-issuer", "https://id.example.com", "--approval-oidc-audience", "fleetsaga")
	require.ErrorContains(t, err, "needs --approval-token-key", "no ID token may travel unsealed")
	require.True(t, c.Configured())

	_, err = parse("--approval-oidc-issuer", "https://id.example.com")
	require.ErrorContains(t, err, "go together")
	_, err = parse("--approval-oidc-groups", "ops")
	require.ErrorContains(t, err, "need --approval-oidc-issuer")
	_, err = parse("--approval-oidc-issuer", "id.example.com", "--approval-oidc-audience", "x")
	require.ErrorContains(t, err, "https://")
	_, err = parse("--approval-oidc-issuer", "http://id.example.com", "--approval-oidc-audience", "x")
	require.ErrorContains(t, err, "is http", "a plain-http issuer's tokens can be forged on the way")
	a, err = parse("--approval-oidc-issuer", "http://localhost:5556", "--approval-oidc-audience", "x", "--approval-oidc-allow-http", "--approval-token-key", "k")
	require.NoError(t, err, "the development override")
	require.True(t, a.Config().AllowHTTPIssuer)
	_, err = parse("--approval-max-age", "0s")
	require.ErrorContains(t, err, "positive")
}

// A worker's least approval policy is its own configuration, from flags
// or the environment; a policy only signatures can meet needs signers.
func TestApprovalMinimumFlags(t *testing.T) {
	parse := func(args ...string) (*config.Approvals, error) {
		var a config.Approvals
		fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
		a.Bind(fs)
		require.NoError(t, fs.Parse(args))
		return &a, a.Validate()
	}
	a, err := parse("--approval-allowed-signers", "/etc/fleetsaga/allowed_signers", "--approval-require-signed-start",
		"--approval-min-approvers", "2", "--approval-gated-kinds", "sp-firmware, host-flash")
	require.NoError(t, err)
	require.Equal(t, approval.Minimum{SignedStart: true, Approvers: 2, GatedKinds: []string{"sp-firmware", "host-flash"}}, a.Minimum())

	t.Setenv("FLEETSAGA_APPROVAL_REQUIRE_SIGNED_START", "true")
	t.Setenv("FLEETSAGA_APPROVAL_MIN_APPROVERS", "3")
	t.Setenv("FLEETSAGA_APPROVAL_GATED_KINDS", "zone-expunge")
	t.Setenv("FLEETSAGA_APPROVAL_MAX_AGE", "10m")
	a, err = parse("--approval-allowed-signers", "/etc/fleetsaga/allowed_signers")
	require.NoError(t, err)
	require.Equal(t, approval.Minimum{SignedStart: true, Approvers: 3, GatedKinds: []string{"zone-expunge"}}, a.Minimum())
	require.Equal(t, 10*time.Minute, a.Config().MaxAge)

	_, err = parse()
	require.ErrorContains(t, err, "--approval-require-signed-start needs signers", "without a keyring nothing can be signed")
	t.Setenv("FLEETSAGA_APPROVAL_REQUIRE_SIGNED_START", "")
	_, err = parse()
	require.ErrorContains(t, err, "--approval-min-approvers 3 needs signers")
	_, err = parse("--approval-allowed-signers", "f", "--approval-min-approvers", "-1")
	require.ErrorContains(t, err, "at least 0")
}
