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

// A fault cleared after it fired is still reported as fired, with the count
// it reached, so a test that ends an open-ended fault knows what it did.
func TestFiredKeepsClearedFaults(t *testing.T) {
	r := NewRegistry(1)
	id, err := r.Arm(Fault{Kind: ZoneRemovalFailure, Target: "zone/z"})
	require.NoError(t, err)
	for range 3 {
		_, fired := r.Fire(ZoneRemovalFailure, "zone/z")
		require.True(t, fired)
	}
	require.True(t, r.Clear(id))
	_, fired := r.Fire(ZoneRemovalFailure, "zone/z")
	require.False(t, fired, "a cleared fault no longer fires")
	got := r.Fired()
	require.Len(t, got, 1)
	require.Equal(t, id, got[0].ID)
	require.Equal(t, 3, got[0].Fired)
}
