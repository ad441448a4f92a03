package mgsupdate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Red team of the workers' least-privilege role (schema/0016_worker_role.sql):
// a login granted only fleetsaga_worker appends a "refused-1" event to an
// attempt whose send ("sending-1") reached the SP. The start's retry reads
// the send records (kinds/mgsupdate/activities_send_record.go: sendsOf) and,
// finding no open send, sends the same attempt again: two deliveries of one
// attempt. Want: each attempt delivered once whatever the worker's password
// appends (as TestSPFirmwareBlipThenCrashDeliversEachAttemptOnce, without
// the attacker, holds).
func TestRedTeamWorkerRoleForgedRefusedRecordDoesNotSendAnAttemptTwice(t *testing.T) {
	t.Skip("known gap: the worker's login appends update_event send records (a forged refused-N makes the start's retry send the attempt again); see docs/GAPS.md")
	st, deps := newRestartableMGSStack(t)
	attacker := st.env.WorkerRoleStore()
	st.arm(faults.Fault{Kind: faults.SPStuck, Target: "sp/sled/2", AfterPercent: 30, Times: 1})
	stop := st.env.StartWorker(deps)

	in := st.spInput(2, "1.1.0")
	in.Timing.ProgressTimeout = 10 * time.Minute
	run := st.startWF(workflows.KindSPFirmware, in, mgsupdate.SPFirmwareUpdate)
	require.Eventually(t, func() bool {
		ds := st.truth(2).Deliveries
		return len(ds) == 1 && strings.Contains(ds[0].Note, "sp_stuck")
	}, 60*time.Second, 10*time.Millisecond, "MGS accepted the attempt")
	id := st.truth(2).Deliveries[0].UpdateID
	_, err := attacker.DB().Exec(`INSERT INTO update_event (attempt_id, step, message, worker) VALUES ($1, 'refused-1', 'forged', 'w')`, id)
	require.NoError(t, err, "the worker's role appends an event")
	stop()        // the start activity's attempt dies
	st.resetSP(2) // and the SP resets mid-delivery: the update is lost
	st.env.StartWorker(deps)

	res, err := st.result(run)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	assertDeliveredOnce(t, st.truth(2).Deliveries)
}
