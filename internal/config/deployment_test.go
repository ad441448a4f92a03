package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/buildid"
)

// --build-id auto polls as the build the executable names; any other
// value is the build ID as given.
func TestResolvedBuildID(t *testing.T) {
	auto := Deployment{Name: "fleetsaga", BuildID: buildid.Auto}
	require.NoError(t, auto.Validate())
	require.Equal(t, buildid.Self(), auto.ResolvedBuildID())
	require.NotEqual(t, buildid.Auto, auto.ResolvedBuildID())
	require.Equal(t, "v43", Deployment{Name: "fleetsaga", BuildID: "v43"}.ResolvedBuildID())
}
