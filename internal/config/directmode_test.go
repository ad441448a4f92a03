package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --direct-mode says the racks have no Nexus: with --fleetsim it drops the
// derived lockstep endpoint; beside an explicit --nexus-lockstep it is one
// clear error.
func TestDirectModeFlag(t *testing.T) {
	f := Fleet{Fleetsim: "http://sim:8470", NexusDB: "postgres://u@db/nexus", DirectMode: true}
	e, err := f.Endpoints()
	require.NoError(t, err)
	assert.True(t, e.DirectMode)
	assert.Empty(t, e.NexusLockstep)
	assert.Empty(t, e.NexusExternal)

	f = Fleet{Fleetsim: "http://sim:8470", NexusDB: "postgres://u@db/nexus"}
	e, err = f.Endpoints()
	require.NoError(t, err)
	assert.False(t, e.DirectMode)
	assert.Equal(t, "http://sim:8470/nexus/{rack}", e.NexusLockstep, "fleetsim's default is the real rack: Nexus owns it")
	assert.Equal(t, "http://sim:8470/nexus/{rack}/external", e.NexusExternal)

	f = Fleet{Fleetsim: "http://sim:8470", NexusDB: "postgres://u@db/nexus", NexusExternalTokenFile: "/run/fleetsim/nexus-token"}
	e, err = f.Endpoints()
	require.NoError(t, err)
	assert.Equal(t, "/run/fleetsim/nexus-token", e.NexusExternalTokenFile)

	f = Fleet{NexusExternal: "https://recovery.sys.example", DirectMode: true}
	_, err = f.Endpoints()
	assert.ErrorContains(t, err, "direct mode (racks without a Nexus) and a nexus-external endpoint exclude each other")

	f = Fleet{NexusLockstep: "http://[fd00::5]:12232", DirectMode: true}
	_, err = f.Endpoints()
	assert.ErrorContains(t, err, "direct mode (racks without a Nexus) and a nexus-lockstep endpoint exclude each other")
}
