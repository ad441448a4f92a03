package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A token is valid on one rack only, so the token file's path may name
// {rack} (one file per rack), which needs {rack} in the endpoint too; a
// CA bundle that holds no certificate stops the worker at start, not at
// its first update.
func TestNexusExternalTokenPerRackAndCAFlags(t *testing.T) {
	f := Fleet{NexusExternal: "https://{rack}.sys.example", NexusExternalTokenFile: "/etc/fleetsaga/nexus/{rack}.token"}
	e, err := f.Endpoints()
	require.NoError(t, err)
	assert.Equal(t, "/etc/fleetsaga/nexus/r1.token", e.NexusExternalTokenFileOf("r1"))

	f = Fleet{NexusExternal: "https://recovery.sys.example", NexusExternalTokenFile: "/etc/fleetsaga/nexus/{rack}.token"}
	_, err = f.Endpoints()
	assert.ErrorContains(t, err, "token file names {rack} but the nexus-external endpoint does not")

	bad := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(bad, []byte("not a certificate\n"), 0o600))
	f = Fleet{NexusExternal: "https://recovery.sys.example", NexusExternalCA: bad}
	_, err = f.Endpoints()
	assert.ErrorContains(t, err, "--nexus-external-ca: nexus external CA "+bad+" holds no PEM certificate")
}
