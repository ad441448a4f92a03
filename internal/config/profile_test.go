package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// Flags default to the Temporal config profile, which the standard
// TEMPORAL_* variables override; a missing named profile is a clear error.
func TestTemporalFlagsComeFromTheConfigProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "temporal.toml")
	require.NoError(t, os.WriteFile(path, []byte("[profile.prod]\naddress = \"prod.example:7233\"\nnamespace = \"fleet\"\n"+
		"[profile.prod.tls]\nclient_cert_path = \"/etc/fs/client.pem\"\nclient_key_path = \"/etc/fs/client.key\"\n"), 0o644))
	t.Setenv("TEMPORAL_CONFIG_FILE", path)
	t.Setenv("TEMPORAL_PROFILE", "prod")
	unsetenv(t, "TEMPORAL_ADDRESS") // make test exports the dev server's
	t.Setenv("TEMPORAL_NAMESPACE", "override")

	var tc Temporal
	tc.Bind(pflag.NewFlagSet("x", pflag.ContinueOnError))
	require.NoError(t, tc.profileErr)
	require.Equal(t, "prod.example:7233", tc.Address)
	require.Equal(t, "override", tc.Namespace, "the environment overrides the profile")
	require.Equal(t, "/etc/fs/client.pem", tc.TLSCert)

	t.Setenv("TEMPORAL_PROFILE", "missing")
	var bad Temporal
	bad.Bind(pflag.NewFlagSet("y", pflag.ContinueOnError))
	require.ErrorContains(t, bad.Validate(), "unable to find profile missing")
}

func unsetenv(t *testing.T, name string) {
	if old, ok := os.LookupEnv(name); ok {
		t.Cleanup(func() { os.Setenv(name, old) })
	}
	os.Unsetenv(name)
}
