package faults

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A fault that fired its Times is disarmed but still reported as fired, so
// a run (the demo's summary) can say what it went through.
func TestFiredKeepsSpentFaults(t *testing.T) {
	r := NewRegistry(1)
	once, err := r.Arm(Fault{Kind: SPResetMidDelivery, Target: "sp/sled/3", Times: 1})
	require.NoError(t, err)
	_, err = r.Arm(Fault{Kind: ZoneRemovalFailure, Target: "zone/z", Times: 2})
	require.NoError(t, err)
	_, err = r.Arm(Fault{Kind: SPStuck, Target: "sp/sled/4"})
	require.NoError(t, err)

	_, fired := r.Fire(SPResetMidDelivery, "sp/sled/3")
	require.True(t, fired)
	_, fired = r.Fire(ZoneRemovalFailure, "zone/z")
	require.True(t, fired)

	require.Len(t, r.List(), 2, "the spent fault is no longer armed")
	got := r.Fired()
	require.Len(t, got, 2, "the never-fired SPStuck is not listed")
	require.Equal(t, once, got[0].ID)
	require.Equal(t, 1, got[0].Fired)
	require.Equal(t, ZoneRemovalFailure, got[1].Kind)
	require.Equal(t, 1, got[1].Fired)
}
