package mgsupdate

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// mgsTest runs an MGS workflow against scripted activities: each activity
// answers with the next of its scripted functions (the last one repeats).
type mgsTest struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment
	a   *MGSActivities

	mu      sync.Mutex
	scripts map[string][]any
	calls   map[string]int
	// What the workflow asked for.
	records   []activities.RecordAttemptInput
	starts    []StartUpdateInput
	waits     []WaitUpdateInput
	posts     []PostUpdateInput
	aborts    []AbortInput
	hostBoots []HostBootInput
	phase2s   []HostPhase2Input
}

const (
	tSerial = "BRM42000002"
	tSHA    = "1111111111111111111111111111111111111111111111111111111111111111"
	tSHA2   = "2222222222222222222222222222222222222222222222222222222222222222"
)

var foreignID = uuid.MustParse("99999999-9999-4999-8999-999999999999")

func spInput() SPFirmwareInput {
	return SPFirmwareInput{
		SP:       SPTarget{Type: mgs.SpTypeSled, Slot: 2, Serial: tSerial},
		Artifact: Artifact{Version: "1.1.0", SHA256: tSHA, Path: "/tmp/sp-1.1.0.bin"},
		Timing:   MGSTiming{AttemptDelay: time.Second, MaxAttempts: 3},
	}
}

func newMGSTest(t *testing.T) *mgsTest {
	var s testsuite.WorkflowTestSuite
	m := &mgsTest{t: t, env: s.NewTestWorkflowEnvironment(), a: &MGSActivities{}, scripts: map[string][]any{}, calls: map[string]int{}}
	m.env.RegisterWorkflow(SPFirmwareUpdate)
	m.env.RegisterWorkflow(HostBootFlashUpdate)
	m.env.RegisterActivity(m.a)
	m.env.RegisterActivity(workflows.LedgerActs)
	m.env.SetTestTimeout(30 * time.Second)

	// Defaults: SP at 1.0.0 / 0.9.0, our update completes, reset activates.
	m.script("MGSPrecheck", precheckAt("1.0.0", "0.9.0"))
	m.script("MGSRecordAttempt", func(_ context.Context, in activities.RecordAttemptInput) error {
		m.mu.Lock()
		m.records = append(m.records, in)
		m.mu.Unlock()
		return nil
	})
	m.script("MGSStartUpdate", started)
	m.script("MGSWaitUpdate", waitDone(WaitComplete))
	m.script("SPPostUpdate", func(_ context.Context, in PostUpdateInput) (PostUpdateResult, error) {
		return PostUpdateResult{Outcome: PostActivated, Active: in.TargetVersion, Resets: 1}, nil
	})
	m.script("MGSAbortUpdate", func(_ context.Context, in AbortInput) (string, error) { return AbortDone, nil })

	m.on(m.a.MGSPrecheck, func(ctx context.Context, in PrecheckInput) (PrecheckResult, error) {
		return call[PrecheckInput, PrecheckResult](m, "MGSPrecheck", ctx, in)
	})
	// Every ledger write of the attempt, as one transition.
	record := func(ctx context.Context, in activities.RecordAttemptInput) error {
		return m.next("MGSRecordAttempt").(func(context.Context, activities.RecordAttemptInput) error)(ctx, in)
	}
	m.on(workflows.LedgerActs.RecordAttempt, record)
	m.on(workflows.LedgerActs.RecordIntent, func(ctx context.Context, a ledger.Attempt) error {
		return record(ctx, activities.RecordAttemptInput{Next: &a})
	})
	m.on(workflows.LedgerActs.FinishAttempt, func(ctx context.Context, f ledger.Finish) error {
		return record(ctx, activities.RecordAttemptInput{Finish: &f})
	})
	wait := func(ctx context.Context, in WaitUpdateInput) (WaitUpdateResult, error) {
		m.mu.Lock()
		m.waits = append(m.waits, in)
		m.mu.Unlock()
		wr, err := call[WaitUpdateInput, WaitUpdateResult](m, "MGSWaitUpdate", ctx, in)
		wr.UpdateID = in.UpdateID // as the real activity: its result names the watched update
		return wr, err
	}
	m.on(m.a.MGSStartUpdate, func(ctx context.Context, in StartUpdateInput) (StartUpdateResult, error) {
		m.mu.Lock()
		m.starts = append(m.starts, in)
		m.mu.Unlock()
		sr, err := call[StartUpdateInput, StartUpdateResult](m, "MGSStartUpdate", ctx, in)
		sr.UpdateID = in.UpdateID
		if err != nil || !sr.Started || in.ThenWait == nil {
			return sr, err
		}
		// As the real activity: an accepted start waits for it.
		wr, err := wait(ctx, *in.ThenWait)
		sr.Wait = &wr
		return sr, err
	})
	m.on(m.a.MGSWaitUpdate, wait)
	m.on(m.a.SPPostUpdate, func(ctx context.Context, in PostUpdateInput) (PostUpdateResult, error) {
		m.mu.Lock()
		m.posts = append(m.posts, in)
		m.mu.Unlock()
		pr, err := call[PostUpdateInput, PostUpdateResult](m, "SPPostUpdate", ctx, in)
		pr.UpdateID = in.UpdateID
		return pr, err
	})
	m.on(m.a.MGSAbortUpdate, func(ctx context.Context, in AbortInput) (string, error) {
		m.mu.Lock()
		m.aborts = append(m.aborts, in)
		m.mu.Unlock()
		return call[AbortInput, string](m, "MGSAbortUpdate", ctx, in)
	})
	m.script("HostPhase2ToDisk", func(context.Context, HostPhase2Input) error { return nil })
	m.on(m.a.HostPhase2ToDisk, func(ctx context.Context, in HostPhase2Input) error {
		m.mu.Lock()
		m.phase2s = append(m.phase2s, in)
		m.mu.Unlock()
		return m.next("HostPhase2ToDisk").(func(context.Context, HostPhase2Input) error)(ctx, in)
	})
	m.script("HostBootSlot", func(context.Context, HostBootInput) (HostBootResult, error) { return HostBootResult{Reset: true}, nil })
	m.on(m.a.HostBootSlot, func(ctx context.Context, in HostBootInput) (HostBootResult, error) {
		m.mu.Lock()
		m.hostBoots = append(m.hostBoots, in)
		m.mu.Unlock()
		return call[HostBootInput, HostBootResult](m, "HostBootSlot", ctx, in)
	})
	m.script("HostZoneSafety", func(context.Context, ZoneSafetyInput) error { return nil })
	m.on(m.a.HostZoneSafety, func(ctx context.Context, in ZoneSafetyInput) error {
		return m.next("HostZoneSafety").(func(context.Context, ZoneSafetyInput) error)(ctx, in)
	})
	m.script("HostBootedOn", func(context.Context, HostBootInput) (bool, error) { return true, nil })
	m.on(m.a.HostBootedOn, func(ctx context.Context, in HostBootInput) (bool, error) {
		return call[HostBootInput, bool](m, "HostBootedOn", ctx, in)
	})
	return m
}

func (m *mgsTest) on(fn any, impl any) {
	m.env.OnActivity(fn, mock.Anything, mock.Anything).Return(impl).Maybe()
}

// script sets the answers of an activity, in order.
func (m *mgsTest) script(name string, fns ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.scripts[name] = fns
	m.calls[name] = 0
}

func (m *mgsTest) next(name string) any {
	m.mu.Lock()
	defer m.mu.Unlock()
	fns := m.scripts[name]
	i := min(m.calls[name], len(fns)-1)
	m.calls[name]++
	return fns[i]
}

func (m *mgsTest) count(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[name]
}

func call[I, O any](m *mgsTest, name string, ctx context.Context, in I) (O, error) {
	return m.next(name).(func(context.Context, I) (O, error))(ctx, in)
}

func precheckAt(active, inactive string) func(context.Context, PrecheckInput) (PrecheckResult, error) {
	return func(_ context.Context, in PrecheckInput) (PrecheckResult, error) {
		r := PrecheckResult{Serial: tSerial, Model: "913-0000019",
			Active: SlotInfo{Slot: 0, Valid: active != "", Version: active}, Inactive: SlotInfo{Slot: 1, Valid: inactive != "", Version: inactive}}
		for range in.Artifacts {
			r.ArtifactSizes = append(r.ArtifactSizes, 1024)
		}
		return r, nil
	}
}

func started(_ context.Context, in StartUpdateInput) (StartUpdateResult, error) {
	return StartUpdateResult{Started: true, MGS: "mgs/0"}, nil
}

func busyWith(state mgs.UpdateState) func(context.Context, StartUpdateInput) (StartUpdateResult, error) {
	return func(context.Context, StartUpdateInput) (StartUpdateResult, error) {
		return StartUpdateResult{Busy: true, Current: mgs.UpdateStatus{State: state, ID: foreignID}}, nil
	}
}

func waitDone(outcome string) func(context.Context, WaitUpdateInput) (WaitUpdateResult, error) {
	return func(_ context.Context, in WaitUpdateInput) (WaitUpdateResult, error) {
		st := mgs.UpdateStatus{State: mgs.UpdateFailed, ID: in.UpdateID, Code: 13}
		if outcome == WaitComplete {
			st = mgs.UpdateStatus{State: mgs.UpdateComplete, ID: in.UpdateID}
		}
		return WaitUpdateResult{Outcome: outcome, Bytes: 1024, Total: 1024, Status: st}, nil
	}
}

func (m *mgsTest) runSP(in SPFirmwareInput) (MGSUpdateResult, error) {
	m.env.ExecuteWorkflow(SPFirmwareUpdate, in)
	require.True(m.t, m.env.IsWorkflowCompleted())
	var res MGSUpdateResult
	err := m.env.GetWorkflowError()
	if err == nil {
		require.NoError(m.t, m.env.GetWorkflowResult(&res))
	}
	return res, err
}

func appErrType(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Type()
	}
	return ""
}

// lastFinish is the last ledger ending the workflow wrote.
func (m *mgsTest) lastFinish() ledger.Finish {
	m.t.Helper()
	for i := len(m.records) - 1; i >= 0; i-- {
		if f := m.records[i].FinishNext; f != nil {
			return *f
		}
		if f := m.records[i].Finish; f != nil {
			return *f
		}
	}
	m.t.Fatal("no ledger finish recorded")
	return ledger.Finish{}
}

func TestSPFirmwareHappyPath(t *testing.T) {
	m := newMGSTest(t)
	res, err := m.runSP(spInput())
	require.NoError(t, err)
	assert.Equal(t, MGSOutcomeCompletedUpdate, res.Outcome)
	assert.Equal(t, "1.0.0", res.PreviousVersion)
	require.Len(t, res.AttemptIDs, 1)
	// Intent first: the attempt is in the ledger before the start call, and
	// the start carries the attempt's UUID.
	require.GreaterOrEqual(t, len(m.records), 2)
	require.NotNil(t, m.records[0].Next)
	id := m.records[0].Next.ID
	assert.Equal(t, id.String(), res.AttemptIDs[0])
	assert.Equal(t, "sp/sled/2", m.records[0].Next.Target)
	assert.Equal(t, string(workflows.KindSPFirmware), m.records[0].Next.Kind)
	require.Len(t, m.starts, 1)
	assert.Equal(t, id, m.starts[0].UpdateID)
	assert.Equal(t, uint16(0), m.starts[0].FirmwareSlot)
	// The start activity goes on to wait for our update (one task, not two).
	require.NotNil(t, m.starts[0].ThenWait)
	assert.Equal(t, id, m.starts[0].ThenWait.UpdateID)
	assert.True(t, m.waits[0].Ours)
	require.Len(t, m.posts, 1)
	assert.Equal(t, id, m.posts[0].UpdateID)
	assert.Equal(t, 60*time.Second, m.posts[0].NewVersionTimeout)
	f := m.lastFinish()
	assert.Equal(t, ledger.StateCompleted, f.State)
	assert.Equal(t, MGSOutcomeCompletedUpdate, f.Outcome)
	assert.Equal(t, id, f.AttemptID)

	var p MGSProgress
	v, err := m.env.QueryWorkflow(workflows.ProgressQuery)
	require.NoError(t, err)
	require.NoError(t, v.Get(&p))
	assert.Equal(t, workflows.StateCompleted, p.State)
	assert.Equal(t, MGSOutcomeCompletedUpdate, p.Outcome)
	assert.EqualValues(t, 1024, p.Done)
}

func TestSPFirmwareNoChangeNeeded(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", precheckAt("1.1.0", "1.0.0"))
	res, err := m.runSP(spInput())
	require.NoError(t, err)
	assert.Equal(t, MGSOutcomeNoChangeNeeded, res.Outcome)
	assert.Empty(t, m.starts, "the device is not touched")
	require.Len(t, m.records, 1)
	assert.NotNil(t, m.records[0].Next, "still recorded in the ledger")
	assert.Equal(t, MGSOutcomeNoChangeNeeded, m.records[0].FinishNext.Outcome)
}

func TestSPFirmwarePrecheckFailures(t *testing.T) {
	cases := []struct {
		name   string
		pre    func(context.Context, PrecheckInput) (PrecheckResult, error)
		mutate func(*SPFirmwareInput)
		typ    string
		msg    string
	}{
		{"wrong serial", func(ctx context.Context, in PrecheckInput) (PrecheckResult, error) {
			r, _ := precheckAt("1.0.0", "0.9.0")(ctx, in)
			r.Serial = "BRM-OTHER"
			return r, nil
		}, nil, failure.WrongDevice, "BRM-OTHER"},
		{"wrong part", precheckAt("1.0.0", "0.9.0"), func(in *SPFirmwareInput) { in.SP.Part = "913-9999" }, failure.WrongDevice, "913-9999"},
		{"active not as expected", precheckAt("1.0.0", "0.9.0"), func(in *SPFirmwareInput) { in.ExpectedActive = "0.8.0" },
			failure.WrongActiveVersion, "expected 0.8.0, found 1.0.0"},
		{"inactive not as expected", precheckAt("1.0.0", ""), func(in *SPFirmwareInput) { in.ExpectedInactive = "0.9.0" },
			failure.WrongInactiveVersion, "expected 0.9.0, found invalid"},
		{"never roll back", precheckAt("1.2.0", "1.0.0"), nil, failure.WouldDowngrade, "1.2.0"},
		{"artifact digest", func(context.Context, PrecheckInput) (PrecheckResult, error) {
			return PrecheckResult{}, temporal.NewNonRetryableApplicationError("sha mismatch", failure.ArtifactMismatch, nil)
		}, nil, failure.ArtifactMismatch, "sha mismatch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newMGSTest(t)
			m.script("MGSPrecheck", c.pre)
			in := spInput()
			if c.mutate != nil {
				c.mutate(&in)
			}
			_, err := m.runSP(in)
			require.Error(t, err)
			assert.Equal(t, c.typ, appErrType(err), "%v", err)
			assert.Contains(t, err.Error(), c.msg)
			assert.Empty(t, m.starts)
			f := m.lastFinish()
			assert.Equal(t, ledger.StateFailed, f.State)
		})
	}
	// Expecting no valid inactive version passes when there is none.
	m := newMGSTest(t)
	m.script("MGSPrecheck", precheckAt("1.0.0", ""))
	in := spInput()
	in.ExpectedInactive, in.ExpectedActive = NoValidVersion, "1.0.0"
	_, err := m.runSP(in)
	require.NoError(t, err)
}

func TestSPFirmwareNewAttemptAfterLostFailedStuck(t *testing.T) {
	for _, outcome := range []string{WaitLost, WaitFailed, WaitStuck, WaitAborted, WaitReplaced} {
		t.Run(outcome, func(t *testing.T) {
			m := newMGSTest(t)
			m.script("MGSWaitUpdate", waitDone(outcome), waitDone(WaitComplete))
			res, err := m.runSP(spInput())
			require.NoError(t, err)
			assert.Equal(t, MGSOutcomeCompletedUpdate, res.Outcome)
			require.Len(t, res.AttemptIDs, 2)
			assert.NotEqual(t, res.AttemptIDs[0], res.AttemptIDs[1], "every attempt has a new UUID")
			require.Len(t, m.starts, 2)
			assert.Equal(t, res.AttemptIDs[1], m.starts[1].UpdateID.String())
			// The first attempt ended failed, with the reason, before the second was recorded.
			require.NotNil(t, m.records[1].Finish)
			assert.Equal(t, res.AttemptIDs[0], m.records[1].Finish.AttemptID.String())
			assert.Equal(t, ledger.StateFailed, m.records[1].Finish.State)
			assert.NotEmpty(t, m.records[1].Finish.Error)
			assert.Equal(t, 2, m.records[1].Next.Attempt)
			assert.Equal(t, m.posts[0].UpdateID.String(), res.AttemptIDs[1])
		})
	}
}

func TestSPFirmwareAttemptsAreBounded(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSWaitUpdate", waitDone(WaitLost))
	_, err := m.runSP(spInput())
	require.Error(t, err)
	assert.Equal(t, failure.AttemptsExhausted, appErrType(err))
	assert.Len(t, m.starts, 3)
	assert.Equal(t, ledger.StateFailed, m.lastFinish().State)
}

func TestSPFirmwareResetDidNotActivate(t *testing.T) {
	m := newMGSTest(t)
	m.script("SPPostUpdate", func(context.Context, PostUpdateInput) (PostUpdateResult, error) {
		return PostUpdateResult{Outcome: PostNotActivated, Active: "1.0.0"}, nil
	}, func(_ context.Context, in PostUpdateInput) (PostUpdateResult, error) {
		return PostUpdateResult{Outcome: PostActivated, Active: in.TargetVersion}, nil
	})
	res, err := m.runSP(spInput())
	require.NoError(t, err)
	assert.Len(t, res.AttemptIDs, 2)
}

func TestSPFirmwareWaitsForConcurrentUpdate(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSStartUpdate", busyWith(mgs.UpdateInProgress))
	m.script("MGSWaitUpdate", waitDone(WaitForeignDone))
	m.script("MGSPrecheck", precheckAt("1.0.0", "0.9.0"), precheckAt("1.1.0", "1.0.0"))
	res, err := m.runSP(spInput())
	require.NoError(t, err)
	assert.Equal(t, MGSOutcomeWaitedConcurrent, res.Outcome)
	assert.Equal(t, foreignID.String(), res.UpdateID)
	require.Len(t, m.waits, 1)
	assert.False(t, m.waits[0].Ours)
	assert.Equal(t, foreignID, m.waits[0].UpdateID)
	assert.Empty(t, m.posts, "someone else reset it")
	assert.Equal(t, MGSOutcomeWaitedConcurrent, m.lastFinish().Outcome)
}

func TestSPFirmwareTakesOverConcurrentUpdate(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSStartUpdate", busyWith(mgs.UpdateComplete))
	m.script("MGSWaitUpdate", waitDone(WaitTakeover))
	m.script("MGSPrecheck", precheckAt("1.0.0", "0.9.0"), precheckAt("1.0.0", "1.1.0"), precheckAt("1.1.0", "1.0.0"))
	res, err := m.runSP(spInput())
	require.NoError(t, err)
	assert.Equal(t, MGSOutcomeTookOver, res.Outcome)
	require.Len(t, m.posts, 1)
	assert.Equal(t, foreignID, m.posts[0].UpdateID, "the reset activates the concurrent update")
	assert.Equal(t, "1.1.0", m.posts[0].TargetVersion)
}

func TestSPFirmwareRefusesTakeoverThatRollsBack(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSStartUpdate", busyWith(mgs.UpdateComplete))
	m.script("MGSWaitUpdate", waitDone(WaitTakeover))
	m.script("MGSPrecheck", precheckAt("1.0.0", "0.9.0"), precheckAt("1.0.0", "0.8.0"))
	_, err := m.runSP(spInput())
	require.Error(t, err)
	assert.Equal(t, failure.ConcurrentDowngrade, appErrType(err))
	assert.Empty(t, m.posts)
}

func TestSPFirmwareConcurrentUpdateEndsThenOursRuns(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSStartUpdate", busyWith(mgs.UpdateInProgress), started)
	m.script("MGSWaitUpdate", waitDone(WaitFree), waitDone(WaitComplete))
	res, err := m.runSP(spInput())
	require.NoError(t, err)
	assert.Equal(t, MGSOutcomeCompletedUpdate, res.Outcome)
	require.Len(t, m.starts, 2)
	assert.Equal(t, m.starts[0].UpdateID, m.starts[1].UpdateID, "the attempt never reached the SP: same UUID")
	assert.Len(t, res.AttemptIDs, 1)
}

func TestSPFirmwareCheckpointsShowProgress(t *testing.T) {
	m := newMGSTest(t)
	var seen MGSProgress
	m.script("MGSWaitUpdate", func(_ context.Context, in WaitUpdateInput) (WaitUpdateResult, error) {
		return WaitUpdateResult{Outcome: WaitCheckpoint, Bytes: 300, Total: 1000, LastBytes: 300, LastChange: time.Unix(100, 0)}, nil
	}, func(_ context.Context, in WaitUpdateInput) (WaitUpdateResult, error) {
		v, err := m.env.QueryWorkflow(workflows.ProgressQuery)
		require.NoError(t, err)
		require.NoError(t, v.Get(&seen))
		assert.EqualValues(t, 300, in.LastBytes, "stuck detection carries across checkpoints")
		assert.Equal(t, time.Unix(100, 0).UTC(), in.LastChange.UTC())
		return WaitUpdateResult{Outcome: WaitComplete, Bytes: 1000, Total: 1000, Status: mgs.UpdateStatus{State: mgs.UpdateComplete, ID: in.UpdateID}}, nil
	})
	_, err := m.runSP(spInput())
	require.NoError(t, err)
	assert.EqualValues(t, 300, seen.Done)
	assert.EqualValues(t, 1000, seen.Total)
	assert.Equal(t, MGSPhaseUpdating, seen.Phase)
	assert.Equal(t, 1, seen.Attempt)
	assert.Equal(t, workflows.StateRunning, seen.State)
}

func TestSPFirmwareCancelAbortsOurUpdate(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSWaitUpdate", func(ctx context.Context, in WaitUpdateInput) (WaitUpdateResult, error) {
		m.env.CancelWorkflow()
		<-ctx.Done()
		return WaitUpdateResult{}, ctx.Err()
	})
	_, err := m.runSP(spInput())
	require.Error(t, err)
	var ce *temporal.CanceledError
	require.ErrorAs(t, err, &ce)
	require.Len(t, m.aborts, 1)
	assert.Equal(t, m.starts[0].UpdateID, m.aborts[0].UpdateID, "abort our in-flight attempt by its ID")
	f := m.lastFinish()
	assert.Equal(t, ledger.StateCancelled, f.State)
	assert.Contains(t, f.Error, "abort "+m.starts[0].UpdateID.String()+": aborted")
}

func TestSPFirmwareCancelBeforeStartAbortsNothing(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", func(ctx context.Context, in PrecheckInput) (PrecheckResult, error) {
		m.env.CancelWorkflow()
		<-ctx.Done()
		return PrecheckResult{}, ctx.Err()
	})
	_, err := m.runSP(spInput())
	var ce *temporal.CanceledError
	require.ErrorAs(t, err, &ce)
	assert.Empty(t, m.aborts)
	assert.Equal(t, ledger.StateCancelled, m.lastFinish().State)
}

func TestSPFirmwareInvalidInput(t *testing.T) {
	m := newMGSTest(t)
	in := spInput()
	in.Artifact.SHA256 = "xyz"
	in.SP.Serial = ""
	_, err := m.runSP(in)
	require.Error(t, err)
	assert.Equal(t, failure.InvalidInput, appErrType(err))
	assert.Zero(t, m.count("MGSPrecheck"))
}

func TestSPFirmwareInputContract(t *testing.T) {
	in := spInput()
	assert.Equal(t, "sp/sled/2", in.Target())
	assert.Equal(t, "1.1.0", in.ArtifactVersion())
	require.NoError(t, in.Validate())
	in.Artifact.URL = "http://x"
	assert.ErrorContains(t, in.Validate(), "exactly one of path and url")
	sw := spInput()
	sw.SP.Type = mgs.SpTypeSwitch
	assert.Equal(t, 120*time.Second, sw.newVersionTimeout())
}

func TestSPFirmwareFailureAbortsOurUpdate(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSWaitUpdate", func(context.Context, WaitUpdateInput) (WaitUpdateResult, error) {
		return WaitUpdateResult{}, temporal.NewNonRetryableApplicationError("rejected", failure.MGSRejected, nil)
	})
	_, err := m.runSP(spInput())
	require.Error(t, err)
	assert.Equal(t, failure.MGSRejected, appErrType(err))
	require.Len(t, m.aborts, 1)
	assert.Equal(t, m.starts[0].UpdateID, m.aborts[0].UpdateID)
	f := m.lastFinish()
	assert.Equal(t, ledger.StateFailed, f.State)
	assert.Contains(t, f.Error, "abort "+m.starts[0].UpdateID.String())
}
