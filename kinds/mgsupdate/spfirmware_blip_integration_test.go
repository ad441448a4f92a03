package mgsupdate_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// PostgreSQL fails the ledger write of the moment MGS accepted
// the attempt, then the start activity's worker dies and the SP resets
// mid-delivery, losing the update. The retry must not send the same
// attempt ID again (two deliveries of one attempt): the attempt is lost,
// and the next attempt, under a new ID, completes the update.
func TestSPFirmwareBlipThenCrashDeliversEachAttemptOnce(t *testing.T) {
	st, deps := newRestartableMGSStack(t)
	blip := failEventWriteOnce(t, st.env.Store.DB(), "start") // the "accepted" record
	// The delivery stops mid-way, so that the test, not a clock, decides
	// when the worker dies and when the SP resets.
	st.arm(faults.Fault{Kind: faults.SPStuck, Target: "sp/sled/2", AfterPercent: 30, Times: 1})
	stop := st.env.StartWorker(deps)

	in := st.spInput(2, "1.1.0")
	in.Timing.ProgressTimeout = 10 * time.Minute // nobody gives up on the stuck delivery
	run := st.startWF(workflows.KindSPFirmware, in, mgsupdate.SPFirmwareUpdate)
	require.Eventually(t, func() bool {
		ds := st.truth(2).Deliveries
		return blip() && len(ds) == 1 && strings.Contains(ds[0].Note, "sp_stuck")
	}, 60*time.Second, 10*time.Millisecond, "MGS accepted the attempt while the ledger was down")
	stop()        // the start activity's attempt dies
	st.resetSP(2) // and the SP resets mid-delivery: the update is lost
	st.env.StartWorker(deps)

	res, err := st.result(run)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	ds := st.truth(2).Deliveries
	assertDeliveredOnce(t, ds)
	atts := st.checkLedgerAgrees(run, 2, res)
	require.Len(t, atts, 2, "the lost attempt failed, a new attempt under a new ID completed")
	assert.Equal(t, ds[0].UpdateID, atts[0].ID)
	assert.Equal(t, "lost", ds[0].Outcome)
	assert.Contains(t, atts[0].Error, "lost")
	assert.Contains(t, steps(t, st, atts[0].ID), "sending-1", "the send was recorded before MGS was asked")
}

// PostgreSQL fails the record written before the image is sent: the start
// fails before anything reaches MGS, its retry sends the attempt once.
func TestSPFirmwareBlipBeforeSendingSendsOnce(t *testing.T) {
	st, deps := newRestartableMGSStack(t)
	blip := failEventWriteOnce(t, st.env.Store.DB(), "sending-1")
	st.env.StartWorker(deps)

	run := st.startWF(workflows.KindSPFirmware, st.spInput(2, "1.1.0"), mgsupdate.SPFirmwareUpdate)
	res, err := st.result(run)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	assert.True(t, blip(), "the record of the send was written, and failed once")
	ds := st.truth(2).Deliveries
	assertDeliveredOnce(t, ds)
	require.Len(t, ds, 1)
	atts := st.checkLedgerAgrees(run, 2, res)
	require.Len(t, atts, 1, "a send that never happened costs no attempt")
	assert.Contains(t, steps(t, st, atts[0].ID), "sending-1")
}

// newRestartableMGSStack is newMGSStack without its worker: the test
// starts (and stops) workers with deps.
func newRestartableMGSStack(t *testing.T) (*mgsStack, workerapp.Deps) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	s := &spec.Spec{Seed: 21, SpeedUp: 100, Timings: spec.DefaultTimings()}
	s.Timings.FlashBytesPerSecond = 10 << 10
	s.Timings.SPResetTime = spec.Duration{Duration: 20 * time.Second}
	s.Racks = spec.GenerateRacks(4, 21)
	require.NoError(t, s.Validate())
	env := testenv.Parallel(t)
	st := &mgsStack{t: t, env: env, spec: s, dir: t.TempDir()}
	st.sim = env.StartFleetsim(s)
	return st, workerapp.Deps{Fleet: env.Endpoints(st.sim)}
}

// failEventWriteOnce makes PostgreSQL fail the first write of ledger event
// step (as a connection lost at that moment would), through a trigger on
// update_event. fired reports whether it has failed a write yet.
func failEventWriteOnce(t *testing.T, db *sql.DB, step string) (fired func() bool) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		`CREATE SEQUENCE test_blip`,
		`CREATE FUNCTION test_blip() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.step = '` + step + `' THEN
				IF nextval('test_blip') = 1 THEN
					RAISE EXCEPTION 'test: the database went away while event % was written', NEW.step;
				END IF;
			END IF;
			RETURN NEW;
		END $$`,
		`CREATE TRIGGER test_blip BEFORE INSERT ON update_event FOR EACH ROW EXECUTE FUNCTION test_blip()`,
	} {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err)
	}
	return func() bool {
		var called bool
		require.NoError(t, db.QueryRowContext(ctx, `SELECT is_called FROM test_blip`).Scan(&called))
		return called
	}
}

// resetSP resets the SP in cubby through MGS 0 (as anyone may), and
// returns once it is back.
func (st *mgsStack) resetSP(cubby int) {
	st.t.Helper()
	err := fmgs.New(st.sim.URL+"/mgs/0", nil).Reset(context.Background(), fmgs.SpIdentifier{Type: fmgs.SpTypeSled, Slot: uint16(cubby)}, fmgs.ComponentSP)
	require.NoError(st.t, err)
}

// assertDeliveredOnce: fleetsim's SP saw no update ID of ours twice.
func assertDeliveredOnce(t *testing.T, ds []simmgs.Delivery) {
	t.Helper()
	seen := map[uuid.UUID]int{}
	for _, d := range ds {
		if !d.Foreign {
			seen[d.UpdateID]++
		}
	}
	for id, n := range seen {
		assert.Equal(t, 1, n, "update %s delivered %d times", id, n)
	}
}

func steps(t *testing.T, st *mgsStack, attempt uuid.UUID) []string {
	t.Helper()
	evs, err := st.env.Store.Events(context.Background(), attempt)
	require.NoError(t, err)
	var out []string
	for _, e := range evs {
		out = append(out, e.Step)
	}
	return out
}
