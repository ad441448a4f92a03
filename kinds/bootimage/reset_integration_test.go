package bootimage_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/bootimage"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// An operator resets a bump while its canary boots (and will never join),
// to each point. The reset run keeps its attempt and, when the canary
// fails, rolls back what its attempt did before the reset too: every
// MachineSet back on the install image, the canary scaled back to one
// replica, the attempt failed and nothing left active on the cluster.
func TestBumpResetDuringCanaryRollsBackEverything(t *testing.T) {
	for _, p := range testenv.ResetPoints {
		t.Run(string(p), func(t *testing.T) {
			e := setup(t, unmanaged(spec.SampleCluster("c1", spec.PlatformAWS, false)))
			e.arm(faults.Fault{Kind: faults.MachineBootFailure, Target: "machineset/c1/c1-worker-a"})
			e.worker()
			in := fastInput()
			in.Canary = &bootimage.BootImageCanary{MachineSet: "c1-worker-a", Timeout: 6 * time.Second}
			run := e.start(in)
			require.Eventually(t, func() bool { return e.truth().MachineSets["c1-worker-a"].Replicas == 2 },
				time.Minute, 20*time.Millisecond, "the canary never scaled up")
			reset := testenv.ResetWorkflow(t, e.Client, run.GetID(), p)

			res, err := e.wait(reset)
			requireCanaryFailed(t, err)
			assert.Equal(t, "CanaryFailed", res.Outcome)
			tr := e.truth()
			for _, ms := range []string{"c1-worker-a", "c1-worker-b"} {
				assert.Equal(t, install.Images["amd64"].AWS["us-east-1"], tr.MachineSets[ms].Image, "%s restored", ms)
			}
			assert.Equal(t, int64(1), tr.MachineSets["c1-worker-a"].Replicas, "the canary scaled back down")
			active, aerr := e.Store.ActiveForTarget(t.Context(), in.Target())
			assert.NoError(t, aerr)
			assert.Nil(t, active, "an attempt left active on the cluster")
			assert.Equal(t, ledger.StateFailed, e.attempt(reset).State)
		})
	}
}
