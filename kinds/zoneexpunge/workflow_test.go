package zoneexpunge

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"strings"
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
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// zxTest is a ZoneExpunge run against stubbed activities that records the
// order of the steps.
type zxTest struct {
	t     *testing.T
	env   *testsuite.TestWorkflowEnvironment
	za    *ZoneActivities
	la    *activities.LedgerActivities
	in    ZoneExpungeInput
	mu    sync.Mutex
	calls []string
	stubs map[string]zxStub
	// finishes records FinishAttempt calls.
	finishes []ledger.Finish
}

var (
	zxSled  = uuid.MustParse("11111111-1111-4111-8111-111111111111")
	zxZone  = uuid.MustParse("22222222-2222-4222-8222-222222222222")
	zxOwner = uuid.MustParse("33333333-3333-4333-8333-333333333333")
	zxSagas = []uuid.UUID{uuid.MustParse("44444444-4444-4444-8444-444444444441"), uuid.MustParse("44444444-4444-4444-8444-444444444442")}
)

func newZXTest(t *testing.T, kind string) *zxTest {
	var s testsuite.WorkflowTestSuite
	x := &zxTest{t: t, env: s.NewTestWorkflowEnvironment(), za: &ZoneActivities{}, la: &activities.LedgerActivities{},
		in: ZoneExpungeInput{Sled: zxSled, Zone: zxZone, RackSleds: []uuid.UUID{zxSled}}, stubs: map[string]zxStub{}}
	x.env.RegisterWorkflow(ZoneExpunge)
	x.env.RegisterActivity(x.za)
	x.env.RegisterActivity(x.la)
	// Defaults: a happy expunge at generation 3 -> 4.
	x.on(x.za.PrecheckZoneExpunge, func(_ context.Context, in ZonePrecheckInput) (ZonePrecheck, error) {
		return ZonePrecheck{Kind: kind, LedgeredGeneration: 3, InConfig: true, Present: true, NextAttempt: 1}, nil
	})
	x.on(x.la.RecordIntent, func(_ context.Context, a ledger.Attempt) error { return nil })
	x.on(x.la.SetProgress, func(_ context.Context, p ledger.Progress) error { return nil })
	x.on(x.la.FinishAttempt, func(_ context.Context, f ledger.Finish) error {
		x.mu.Lock()
		x.finishes = append(x.finishes, f)
		x.mu.Unlock()
		return nil
	})
	x.on(x.za.RecordZoneExpungeIntent, func(_ context.Context, in ZoneIntentInput) (ledger.ZoneDisposition, error) {
		return ledger.ZoneDisposition{ZoneID: in.Zone, SledID: in.Sled, Kind: in.Kind, Disposition: ledger.ZoneExpunged, ExpungedAsOf: in.ExpungedAsOf, AttemptID: in.AttemptID}, nil
	})
	x.on(x.za.RebaseZoneExpunge, func(_ context.Context, in ZoneRebaseInput) (ledger.ZoneDisposition, error) {
		return ledger.ZoneDisposition{ZoneID: in.Zone, ExpungedAsOf: in.To}, nil
	})
	x.on(x.za.PutConfigWithoutZone, func(_ context.Context, in ZonePutInput) (ZonePutResult, error) {
		return ZonePutResult{LedgeredGeneration: in.ExpungedAsOf, Attempts: 1}, nil
	})
	x.on(x.za.AwaitZoneGone, func(_ context.Context, in ZoneGoneInput) (ZoneGoneResult, error) {
		return ZoneGoneResult{ObservedGeneration: in.ExpungedAsOf}, nil
	})
	x.on(x.za.ChooseSagaOwner, func(_ context.Context, in ZoneOwnerInput) (uuid.UUID, error) { return zxOwner, nil })
	x.on(x.za.ReassignNexusSagas, func(_ context.Context, in ZoneReassignInput) (ZoneReassignResult, error) {
		return ZoneReassignResult{Moved: zxSagas}, nil
	})
	x.on(x.za.CountUnfinishedSagas, func(_ context.Context, zone uuid.UUID) (int64, error) { return 0, nil })
	x.on(x.za.ZoneRemovalLedgered, func(context.Context, ZoneRemovedInput) (bool, error) { return false, nil })
	x.on(x.za.CommitZoneExpunge, func(_ context.Context, in ZoneCommitInput) (ledger.ZoneDisposition, error) {
		return ledger.ZoneDisposition{ZoneID: in.Zone, SagasMoved: 2, SagaNewOwner: in.NewOwner}, nil
	})
	return x
}

// on stubs an activity (a later on() for the same activity replaces the
// earlier one); run() installs the stubs, which record each call.
func (x *zxTest) on(act any, fn any) {
	x.stubs[zxActivityName(act)] = zxStub{act: act, fn: fn}
}

type zxStub struct{ act, fn any }

// zxActivityName is the SDK's name for an activity method value.
func zxActivityName(act any) string {
	full := runtime.FuncForPC(reflect.ValueOf(act).Pointer()).Name()
	parts := strings.Split(full, ".")
	return strings.TrimSuffix(parts[len(parts)-1], "-fm")
}

func (x *zxTest) run() (ZoneExpungeResult, error) {
	for name, st := range x.stubs {
		x.env.OnActivity(st.act, mock.Anything, mock.Anything).Return(st.fn).Run(func(mock.Arguments) {
			x.mu.Lock()
			x.calls = append(x.calls, name)
			x.mu.Unlock()
		})
	}
	x.env.ExecuteWorkflow(ZoneExpunge, x.in)
	require.True(x.t, x.env.IsWorkflowCompleted())
	var res ZoneExpungeResult
	err := x.env.GetWorkflowError()
	if err == nil {
		require.NoError(x.t, x.env.GetWorkflowResult(&res))
	}
	return res, err
}

func (x *zxTest) steps() []string {
	var out []string
	for _, c := range x.calls {
		if c != "SetProgress" {
			out = append(out, c)
		}
	}
	return out
}

func (x *zxTest) progress() ZoneExpungeProgress {
	v, err := x.env.QueryWorkflow(workflows.ProgressQuery)
	require.NoError(x.t, err)
	var p ZoneExpungeProgress
	require.NoError(x.t, v.Get(&p))
	return p
}

func errType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	return ""
}

func TestZoneExpungeNexusRunsEveryStepInOrder(t *testing.T) {
	x := newZXTest(t, "nexus")
	res, err := x.run()
	require.NoError(t, err)
	assert.Equal(t, []string{
		"PrecheckZoneExpunge", "RecordIntent", "RecordZoneExpungeIntent", "PutConfigWithoutZone", "AwaitZoneGone",
		"ChooseSagaOwner", "ReassignNexusSagas", "CountUnfinishedSagas", "CommitZoneExpunge", "FinishAttempt",
	}, x.steps(), "reassignment only after the inventory proof; commit last")
	assert.Equal(t, ZoneOutcomeExpunged, res.Outcome)
	assert.Equal(t, uint64(4), res.ExpungedAsOf)
	assert.Equal(t, uint64(4), res.ObservedGeneration)
	assert.Equal(t, zxOwner, res.NewOwner)
	assert.Equal(t, 2, res.SagasMoved)
	assert.Equal(t, "nexus", res.Kind)
	require.Len(t, x.finishes, 1)
	assert.Equal(t, ledger.StateCompleted, x.finishes[0].State)

	p := x.progress()
	assert.Equal(t, workflows.StateCompleted, p.State)
	assert.Equal(t, ZonePhaseDone, p.Phase)
	assert.Equal(t, int64(2), p.Done)
	assert.Equal(t, uint64(4), p.ExpungedAsOf)
	assert.Equal(t, zxOwner, p.NewOwner)
	assert.Contains(t, p.Message, "2 sagas moved")
}

func TestZoneExpungeNonNexusSkipsSagaSteps(t *testing.T) {
	x := newZXTest(t, "crucible")
	res, err := x.run()
	require.NoError(t, err)
	assert.Equal(t, []string{
		"PrecheckZoneExpunge", "RecordIntent", "RecordZoneExpungeIntent", "PutConfigWithoutZone", "AwaitZoneGone",
		"CommitZoneExpunge", "FinishAttempt",
	}, x.steps())
	assert.Equal(t, ZoneOutcomeExpunged, res.Outcome)
	assert.Equal(t, uuid.Nil, res.NewOwner)
}

func TestZoneExpungePassesIntentGenerationAndDeadline(t *testing.T) {
	x := newZXTest(t, "nexus")
	x.in.Timing = ZoneExpungeTiming{PutTimeout: 7 * time.Minute, RetryInitial: time.Second, RetryMax: 5 * time.Second}
	var intent ZoneIntentInput
	var put ZonePutInput
	x.on(x.za.RecordZoneExpungeIntent, func(_ context.Context, in ZoneIntentInput) (ledger.ZoneDisposition, error) {
		intent = in
		return ledger.ZoneDisposition{ExpungedAsOf: in.ExpungedAsOf}, nil
	})
	x.on(x.za.PutConfigWithoutZone, func(_ context.Context, in ZonePutInput) (ZonePutResult, error) {
		put = in
		return ZonePutResult{}, nil
	})
	_, err := x.run()
	require.NoError(t, err)
	assert.Equal(t, uint64(4), intent.ExpungedAsOf, "expunged as of G+1")
	assert.Equal(t, "nexus", intent.Kind)
	assert.NotEqual(t, uuid.Nil, intent.AttemptID)
	assert.Equal(t, intent.AttemptID, put.AttemptID)
	assert.Equal(t, uint64(4), put.ExpungedAsOf)
	assert.Equal(t, 5*time.Second, put.RetryMax)
	assert.WithinDuration(t, x.env.Now().Add(7*time.Minute), put.Deadline, time.Minute)
}

func staleErr(gen uint64) error {
	return temporal.NewNonRetryableApplicationError("stale", failure.StaleGeneration, nil, gen)
}

// Direct mode (no enabled target blueprint): a sled another writer moved on
// with the zone still in stops the expunge with that reason; it never
// fights the other writer.
func TestZoneExpungeDirectStopsWhenAnotherWriterMovesTheSled(t *testing.T) {
	x := newZXTest(t, "nexus")
	x.on(x.za.PutConfigWithoutZone, func(_ context.Context, in ZonePutInput) (ZonePutResult, error) {
		return ZonePutResult{}, staleErr(7)
	})
	_, err := x.run()
	require.Error(t, err)
	assert.Equal(t, failure.ConfigChangedUnderExpunge, errType(err))
	assert.Contains(t, err.Error(), "another writer changed sled "+zxSled.String()+"'s config")
	assert.NotContains(t, x.steps(), "RebaseZoneExpunge")
	assert.NotContains(t, x.steps(), "AwaitZoneGone")
	require.Len(t, x.finishes, 1)
	assert.Equal(t, ledger.StateFailed, x.finishes[0].State)
}

// Owner mode: the expunge goes through the target blueprint and Nexus moves
// the sagas; fleetsaga proves it and never writes the saga table.
func TestZoneExpungeOwnerModeGoesThroughTheBlueprint(t *testing.T) {
	x := newZXTest(t, "nexus")
	bp := uuid.MustParse("55555555-5555-4555-8555-555555555555")
	x.on(x.za.PrecheckZoneExpunge, func(_ context.Context, in ZonePrecheckInput) (ZonePrecheck, error) {
		return ZonePrecheck{Kind: "nexus", LedgeredGeneration: 3, InConfig: true, Present: true, NextAttempt: 1,
			Mode: ModeOwner, ModeReason: "enabled target", TargetID: bp, NexusGeneration: 1}, nil
	})
	var through ZoneBlueprintInput
	x.on(x.za.ExpungeThroughBlueprint, func(_ context.Context, in ZoneBlueprintInput) (ZoneBlueprintResult, error) {
		through = in
		return ZoneBlueprintResult{TargetID: bp, Sagas: zxSagas}, nil
	})
	var cleanup ZoneOwnerCleanupInput
	x.on(x.za.AwaitOwnerCleanup, func(_ context.Context, in ZoneOwnerCleanupInput) (ZoneOwnerCleanupResult, error) {
		cleanup = in
		return ZoneOwnerCleanupResult{TargetID: bp, SagasMoved: zxSagas, NewOwner: zxOwner}, nil
	})
	res, err := x.run()
	require.NoError(t, err)
	assert.Equal(t, []string{
		"PrecheckZoneExpunge", "RecordIntent", "RecordZoneExpungeIntent", "ExpungeThroughBlueprint", "AwaitZoneGone",
		"AwaitOwnerCleanup", "CommitZoneExpunge", "FinishAttempt",
	}, x.steps(), "no config PUT, no saga write by fleetsaga; Nexus's work proven after the inventory proof")
	assert.Equal(t, uint64(4), through.ExpungedAsOf)
	assert.Equal(t, zxSagas, cleanup.Sagas)
	assert.True(t, cleanup.Nexus)
	assert.Equal(t, ModeOwner, res.Mode)
	assert.Equal(t, bp, res.Blueprint)
	assert.Equal(t, zxOwner, res.NewOwner)
	p := x.progress()
	assert.Equal(t, ModeOwner, p.Mode)
	assert.Contains(t, p.Message, "through target blueprint "+bp.String())
}

// Owner mode: a target blueprint that moved the sled past the ledger's
// generation rebases the ledger, bounded.
func TestZoneExpungeOwnerGivesUpAfterTooManyRebases(t *testing.T) {
	x := newZXTest(t, "crucible")
	x.on(x.za.PrecheckZoneExpunge, func(_ context.Context, in ZonePrecheckInput) (ZonePrecheck, error) {
		return ZonePrecheck{Kind: "crucible", LedgeredGeneration: 3, InConfig: true, Present: true, NextAttempt: 1, Mode: ModeOwner}, nil
	})
	x.on(x.za.ExpungeThroughBlueprint, func(_ context.Context, in ZoneBlueprintInput) (ZoneBlueprintResult, error) {
		return ZoneBlueprintResult{}, staleErr(in.ExpungedAsOf + 1)
	})
	_, err := x.run()
	require.Error(t, err)
	assert.Equal(t, failure.TooManyRebases, errType(err))
	assert.NotContains(t, x.steps(), "AwaitZoneGone")
}

// A resumed direct-mode expunge (the operator ran it again after dealing
// with the other writer) rebases once past the sled's generation.
func TestZoneExpungeResumedRebasesOnStaleGeneration(t *testing.T) {
	x := newZXTest(t, "nexus")
	x.on(x.za.PrecheckZoneExpunge, func(_ context.Context, in ZonePrecheckInput) (ZonePrecheck, error) {
		return ZonePrecheck{Kind: "nexus", LedgeredGeneration: 3, InConfig: true, Present: true, NextAttempt: 2,
			Existing: &ledger.ZoneDisposition{ZoneID: zxZone, SledID: zxSled, Kind: "nexus", ExpungedAsOf: 4}}, nil
	})
	var puts []uint64
	var rebase ZoneRebaseInput
	x.on(x.za.PutConfigWithoutZone, func(_ context.Context, in ZonePutInput) (ZonePutResult, error) {
		puts = append(puts, in.ExpungedAsOf)
		if len(puts) == 1 {
			return ZonePutResult{}, staleErr(7)
		}
		return ZonePutResult{Attempts: 1}, nil
	})
	x.on(x.za.RebaseZoneExpunge, func(_ context.Context, in ZoneRebaseInput) (ledger.ZoneDisposition, error) {
		rebase = in
		return ledger.ZoneDisposition{ExpungedAsOf: in.To}, nil
	})
	var awaited uint64
	x.on(x.za.AwaitZoneGone, func(_ context.Context, in ZoneGoneInput) (ZoneGoneResult, error) {
		awaited = in.ExpungedAsOf
		return ZoneGoneResult{ObservedGeneration: in.ExpungedAsOf}, nil
	})
	res, err := x.run()
	require.NoError(t, err)
	assert.Equal(t, []uint64{4, 8}, puts, "re-read and rebase past the sled's generation, never overwrite it")
	assert.Equal(t, uint64(4), rebase.From)
	assert.Equal(t, uint64(8), rebase.To)
	assert.Equal(t, uint64(8), awaited)
	assert.Equal(t, 1, res.Rebases)
	assert.Equal(t, uint64(8), res.ExpungedAsOf)
}

// Every error of a device step ends the attempt as failed, and no later
// step runs: above all, no saga moves without the inventory proof.
func TestZoneExpungeStepErrorsStopBeforeLaterSteps(t *testing.T) {
	cases := []struct {
		name    string
		act     func(x *zxTest) any
		fn      any
		errType string
		absent  []string
		intent  bool // an attempt was recorded (so it is finished as failed)
	}{
		{"zone removal timed out", func(x *zxTest) any { return x.za.PutConfigWithoutZone },
			func(context.Context, ZonePutInput) (ZonePutResult, error) {
				return ZonePutResult{}, temporal.NewNonRetryableApplicationError("x", failure.ZoneRemovalTimedOut, nil, 12)
			}, failure.ZoneRemovalTimedOut, []string{"AwaitZoneGone", "ReassignNexusSagas", "CommitZoneExpunge"}, true},
		{"sled agent rejected", func(x *zxTest) any { return x.za.PutConfigWithoutZone },
			func(context.Context, ZonePutInput) (ZonePutResult, error) {
				return ZonePutResult{}, temporal.NewNonRetryableApplicationError("x", failure.SledAgentRejected, nil)
			}, failure.SledAgentRejected, []string{"AwaitZoneGone", "ReassignNexusSagas"}, true},
		{"inventory proof timed out", func(x *zxTest) any { return x.za.AwaitZoneGone },
			func(context.Context, ZoneGoneInput) (ZoneGoneResult, error) {
				return ZoneGoneResult{}, temporal.NewNonRetryableApplicationError("x", failure.InventoryProofTimedOut, nil)
			}, failure.InventoryProofTimedOut, []string{"ChooseSagaOwner", "ReassignNexusSagas", "CommitZoneExpunge"}, true},
		{"zone reinstated", func(x *zxTest) any { return x.za.AwaitZoneGone },
			func(context.Context, ZoneGoneInput) (ZoneGoneResult, error) {
				return ZoneGoneResult{}, temporal.NewNonRetryableApplicationError("x", failure.ZoneReinstated, nil)
			}, failure.ZoneReinstated, []string{"ReassignNexusSagas", "CommitZoneExpunge"}, true},
		{"no live nexus", func(x *zxTest) any { return x.za.ChooseSagaOwner },
			func(context.Context, ZoneOwnerInput) (uuid.UUID, error) {
				return uuid.Nil, temporal.NewNonRetryableApplicationError("x", failure.NoLiveNexus, nil)
			}, failure.NoLiveNexus, []string{"ReassignNexusSagas", "CommitZoneExpunge"}, true},
		{"gate not proven", func(x *zxTest) any { return x.za.ReassignNexusSagas },
			func(context.Context, ZoneReassignInput) (ZoneReassignResult, error) {
				return ZoneReassignResult{}, temporal.NewNonRetryableApplicationError("x", failure.GateNotProven, nil)
			}, failure.GateNotProven, []string{"CountUnfinishedSagas", "CommitZoneExpunge"}, true},
		{"nexus db not configured", func(x *zxTest) any { return x.za.ReassignNexusSagas },
			func(context.Context, ZoneReassignInput) (ZoneReassignResult, error) {
				return ZoneReassignResult{}, temporal.NewNonRetryableApplicationError("x", failure.NexusDBNotConfigured, nil)
			}, failure.NexusDBNotConfigured, []string{"CommitZoneExpunge"}, true},
		{"last nexus", func(x *zxTest) any { return x.za.PrecheckZoneExpunge },
			func(context.Context, ZonePrecheckInput) (ZonePrecheck, error) {
				return ZonePrecheck{}, temporal.NewNonRetryableApplicationError("x", failure.LastNexusZone, nil)
			}, failure.LastNexusZone, []string{"RecordIntent", "RecordZoneExpungeIntent", "PutConfigWithoutZone"}, false},
		{"zone not found", func(x *zxTest) any { return x.za.PrecheckZoneExpunge },
			func(context.Context, ZonePrecheckInput) (ZonePrecheck, error) {
				return ZonePrecheck{}, temporal.NewNonRetryableApplicationError("x", failure.ZoneNotFound, nil)
			}, failure.ZoneNotFound, []string{"RecordIntent", "PutConfigWithoutZone"}, false},
		{"sled not found", func(x *zxTest) any { return x.za.PrecheckZoneExpunge },
			func(context.Context, ZonePrecheckInput) (ZonePrecheck, error) {
				return ZonePrecheck{}, temporal.NewNonRetryableApplicationError("x", failure.SledNotFound, nil)
			}, failure.SledNotFound, []string{"RecordIntent", "PutConfigWithoutZone"}, false},
		{"target busy", func(x *zxTest) any { return x.la.RecordIntent },
			func(context.Context, ledger.Attempt) error {
				return temporal.NewNonRetryableApplicationError("x", failure.TargetBusy, nil)
			}, failure.TargetBusy, []string{"RecordZoneExpungeIntent", "PutConfigWithoutZone"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := newZXTest(t, "nexus")
			x.on(tc.act(x), tc.fn)
			_, err := x.run()
			require.Error(t, err)
			assert.Equal(t, tc.errType, errType(err), "%v", err)
			for _, a := range tc.absent {
				assert.NotContains(t, x.steps(), a)
			}
			if tc.intent {
				require.Len(t, x.finishes, 1)
				assert.Equal(t, ledger.StateFailed, x.finishes[0].State)
				assert.NotEmpty(t, x.finishes[0].Error)
			} else {
				assert.Empty(t, x.finishes)
			}
			assert.Equal(t, workflows.StateFailed, x.progress().State)
		})
	}
}

func TestZoneExpungeReassignsAgainUntilNoneRemain(t *testing.T) {
	x := newZXTest(t, "nexus")
	counts := []int64{1, 0}
	x.on(x.za.CountUnfinishedSagas, func(context.Context, uuid.UUID) (int64, error) {
		n := counts[0]
		counts = counts[1:]
		return n, nil
	})
	_, err := x.run()
	require.NoError(t, err)
	n := 0
	for _, s := range x.steps() {
		if s == "ReassignNexusSagas" {
			n++
		}
	}
	assert.Equal(t, 2, n)
}

func TestZoneExpungeFailsWhenSagasRemain(t *testing.T) {
	x := newZXTest(t, "nexus")
	x.on(x.za.CountUnfinishedSagas, func(context.Context, uuid.UUID) (int64, error) { return 2, nil })
	_, err := x.run()
	require.Error(t, err)
	assert.Equal(t, failure.SagasRemain, errType(err))
	assert.NotContains(t, x.steps(), "CommitZoneExpunge")
}

func TestZoneExpungeAlreadyCompletedIsANoOp(t *testing.T) {
	x := newZXTest(t, "nexus")
	done := time.Now()
	x.on(x.za.PrecheckZoneExpunge, func(context.Context, ZonePrecheckInput) (ZonePrecheck, error) {
		return ZonePrecheck{Kind: "nexus", LedgeredGeneration: 9, Existing: &ledger.ZoneDisposition{
			ZoneID: zxZone, SledID: zxSled, Kind: "nexus", Disposition: ledger.ZoneExpunged, ExpungedAsOf: 4,
			ReadyForCleanup: true, CompletedAt: &done, SagasMoved: 5, SagaNewOwner: zxOwner}}, nil
	})
	res, err := x.run()
	require.NoError(t, err)
	assert.Equal(t, []string{"PrecheckZoneExpunge"}, x.steps())
	assert.Equal(t, ZoneOutcomeAlreadyExpunged, res.Outcome)
	assert.Equal(t, 5, res.SagasMoved)
	assert.Equal(t, uint64(4), res.ExpungedAsOf)
}

// A zone already expunged but not finished: resume with the recorded
// generation and the active attempt of the previous run.
func TestZoneExpungeResumesRecordedExpunge(t *testing.T) {
	x := newZXTest(t, "nexus")
	prev := ledger.Attempt{ID: uuid.New(), Attempt: 1, State: ledger.StateRunning}
	x.on(x.za.PrecheckZoneExpunge, func(context.Context, ZonePrecheckInput) (ZonePrecheck, error) {
		return ZonePrecheck{Kind: "nexus", LedgeredGeneration: 4, Present: false, ActiveAttempt: &prev, NextAttempt: 2,
			Existing: &ledger.ZoneDisposition{ZoneID: zxZone, SledID: zxSled, Kind: "nexus", Disposition: ledger.ZoneExpunged, ExpungedAsOf: 4}}, nil
	})
	x.on(x.za.RecordZoneExpungeIntent, func(_ context.Context, in ZoneIntentInput) (ledger.ZoneDisposition, error) {
		assert.Equal(t, prev.ID, in.AttemptID)
		return ledger.ZoneDisposition{ExpungedAsOf: 4}, nil // the record stands, not 5
	})
	var put ZonePutInput
	x.on(x.za.PutConfigWithoutZone, func(_ context.Context, in ZonePutInput) (ZonePutResult, error) {
		put = in
		return ZonePutResult{LedgeredGeneration: 4}, nil
	})
	res, err := x.run()
	require.NoError(t, err)
	assert.NotContains(t, x.steps(), "RecordIntent", "the previous run's attempt is continued")
	assert.Equal(t, uint64(4), put.ExpungedAsOf)
	assert.Equal(t, prev.ID, res.AttemptID)
	assert.Equal(t, ZoneOutcomeExpunged, res.Outcome)
}

func TestZoneExpungeNewAttemptNumberAfterFailedRun(t *testing.T) {
	x := newZXTest(t, "crucible")
	x.on(x.za.PrecheckZoneExpunge, func(context.Context, ZonePrecheckInput) (ZonePrecheck, error) {
		return ZonePrecheck{Kind: "crucible", LedgeredGeneration: 3, NextAttempt: 3,
			Existing: &ledger.ZoneDisposition{Kind: "crucible", ExpungedAsOf: 4}}, nil
	})
	var rec ledger.Attempt
	x.on(x.la.RecordIntent, func(_ context.Context, a ledger.Attempt) error { rec = a; return nil })
	_, err := x.run()
	require.NoError(t, err)
	assert.Equal(t, 3, rec.Attempt)
	assert.Equal(t, "zone/"+zxZone.String(), rec.Target)
	assert.Equal(t, string(workflows.KindZoneExpunge), rec.Kind)
}

func TestZoneExpungeRejectsInvalidInput(t *testing.T) {
	for name, in := range map[string]ZoneExpungeInput{
		"no sled":         {Zone: zxZone},
		"no zone":         {Sled: zxSled},
		"nil rack sled":   {Sled: zxSled, Zone: zxZone, RackSleds: []uuid.UUID{uuid.Nil}},
		"owner is zone":   {Sled: zxSled, Zone: zxZone, NewOwner: zxZone},
		"negative timing": {Sled: zxSled, Zone: zxZone, Timing: ZoneExpungeTiming{PutTimeout: -time.Second}},
	} {
		t.Run(name, func(t *testing.T) {
			x := newZXTest(t, "nexus")
			x.in = in
			_, err := x.run()
			require.Error(t, err)
			assert.Equal(t, failure.InvalidInput, errType(err))
			assert.Empty(t, x.steps())
		})
	}
}

// Cancelled while the sled keeps failing the removal (before the zone is
// removed): the PUT is awaited, the sled still has the zone, so the attempt
// is recorded as cancelled (on a disconnected context), nothing else runs.
func TestZoneExpungeCancelledRecordsCancelledAttempt(t *testing.T) {
	x := newZXTest(t, "nexus")
	x.on(x.za.PutConfigWithoutZone, func(ctx context.Context, in ZonePutInput) (ZonePutResult, error) {
		x.env.CancelWorkflow() // the operator cancels while the PUT is retrying
		<-ctx.Done()
		return ZonePutResult{}, ctx.Err()
	})
	_, err := x.run()
	require.Error(t, err)
	assert.True(t, temporal.IsCanceledError(err), "%v", err)
	require.Len(t, x.finishes, 1)
	assert.Equal(t, ledger.StateCancelled, x.finishes[0].State)
	assert.NotContains(t, x.steps(), "AwaitZoneGone")
	assert.Equal(t, workflows.StateCancelled, x.progress().State)
}

func TestZoneExpungeInputContract(t *testing.T) {
	in := ZoneExpungeInput{Sled: zxSled, Zone: zxZone}
	assert.Equal(t, "zone/"+zxZone.String(), in.Target())
	assert.Empty(t, in.ArtifactVersion())
	assert.NoError(t, in.Validate())
}

// The chosen owner was expunged before the move (nothing
// moved): the workflow chooses again and moves the sagas to the live one,
// instead of failing or stranding them.
func TestZoneExpungeChoosesAgainWhenTheOwnerIsGone(t *testing.T) {
	x := newZXTest(t, "nexus")
	gone, live := zxOwner, uuid.MustParse("55555555-5555-4555-8555-555555555555")
	var mu sync.Mutex
	chosen := 0
	x.on(x.za.ChooseSagaOwner, func(_ context.Context, in ZoneOwnerInput) (uuid.UUID, error) {
		mu.Lock()
		defer mu.Unlock()
		chosen++
		if chosen == 1 {
			return gone, nil
		}
		return live, nil
	})
	var movedTo []uuid.UUID
	x.on(x.za.ReassignNexusSagas, func(_ context.Context, in ZoneReassignInput) (ZoneReassignResult, error) {
		mu.Lock()
		defer mu.Unlock()
		if in.NewOwner == gone {
			return ZoneReassignResult{}, temporal.NewNonRetryableApplicationError("gone", failure.OwnerGone, nil)
		}
		movedTo = append(movedTo, in.NewOwner)
		return ZoneReassignResult{Moved: zxSagas}, nil
	})
	res, err := x.run()
	require.NoError(t, err)
	assert.Equal(t, ZoneOutcomeExpunged, res.Outcome)
	assert.Equal(t, live, res.NewOwner)
	assert.Equal(t, []uuid.UUID{live}, movedTo)
	assert.Equal(t, 2, chosen)
}

// A gap chaos found ("a cancelled Nexus zone expunge strands its sagas"):
// the operator cancels after the sled ledgered the config without the zone.
// An expunge is never undone, so the steps that keep the fleet safe
// (inventory proof, saga move, verify, commit) still run, and the update
// ends completed, saying the cancel came too late to stop it.
func TestZoneExpungeCancelAfterRemovalFinishesTheSafeSteps(t *testing.T) {
	x := newZXTest(t, "nexus")
	x.on(x.za.AwaitZoneGone, func(_ context.Context, in ZoneGoneInput) (ZoneGoneResult, error) {
		x.env.CancelWorkflow() // the operator cancels while inventory is being read
		return ZoneGoneResult{ObservedGeneration: in.ExpungedAsOf}, nil
	})
	res, err := x.run()
	require.NoError(t, err)
	assert.Equal(t, []string{
		"PrecheckZoneExpunge", "RecordIntent", "RecordZoneExpungeIntent", "PutConfigWithoutZone", "AwaitZoneGone",
		"ChooseSagaOwner", "ReassignNexusSagas", "CountUnfinishedSagas", "CommitZoneExpunge", "FinishAttempt",
	}, x.steps(), "no saga is left on the removed Nexus")
	assert.Equal(t, ZoneOutcomeExpunged, res.Outcome)
	assert.True(t, res.CancelIgnored)
	require.Len(t, x.finishes, 1)
	assert.Equal(t, ledger.StateCompleted, x.finishes[0].State, "the ledger says what the sled did")
	p := x.progress()
	assert.Equal(t, workflows.StateCompleted, p.State)
	assert.Contains(t, p.Message, "cancel")
}

// The cancel reaches the config PUT after the sled accepted it: the PUT
// activity is awaited, the sled is asked, and as it ledgered the config
// without the zone the expunge is finished.
func TestZoneExpungeCancelDuringALandedPutFinishesTheSafeSteps(t *testing.T) {
	x := newZXTest(t, "nexus")
	x.on(x.za.PutConfigWithoutZone, func(ctx context.Context, in ZonePutInput) (ZonePutResult, error) {
		x.env.CancelWorkflow() // the sled ledgers our PUT, the cancel stops the activity before it sees that
		<-ctx.Done()
		return ZonePutResult{}, ctx.Err()
	})
	x.on(x.za.ZoneRemovalLedgered, func(_ context.Context, in ZoneRemovedInput) (bool, error) {
		assert.Equal(t, uint64(4), in.ExpungedAsOf)
		return true, nil
	})
	res, err := x.run()
	require.NoError(t, err)
	assert.Contains(t, x.steps(), "CommitZoneExpunge")
	assert.Contains(t, x.steps(), "ReassignNexusSagas")
	assert.True(t, res.CancelIgnored)
	require.Len(t, x.finishes, 1)
	assert.Equal(t, ledger.StateCompleted, x.finishes[0].State)
}

// A zone expunge cancelled while it validates (before its intent) still
// leaves its attempt in the ledger, written and ended cancelled at once,
// as the MGS kinds do: every update an operator started has a row.
func TestZoneExpungeCancelledWhileValidatingLeavesACancelledAttempt(t *testing.T) {
	x := newZXTest(t, "nexus")
	var written []activities.RecordAttemptInput
	x.on(x.la.RecordAttempt, func(_ context.Context, in activities.RecordAttemptInput) error {
		written = append(written, in)
		return nil
	})
	x.on(x.za.PrecheckZoneExpunge, func(ctx context.Context, in ZonePrecheckInput) (ZonePrecheck, error) {
		x.env.CancelWorkflow()
		<-ctx.Done()
		return ZonePrecheck{}, ctx.Err()
	})
	_, err := x.run()
	require.Error(t, err)
	assert.True(t, temporal.IsCanceledError(err), "%v", err)
	require.Len(t, written, 1, "the attempt is written and ended in one step")
	require.NotNil(t, written[0].Next)
	require.NotNil(t, written[0].FinishNext)
	assert.Equal(t, "zone/"+zxZone.String(), written[0].Next.Target)
	assert.Equal(t, ledger.StateCancelled, written[0].FinishNext.State)
	assert.NotContains(t, x.steps(), "RecordZoneExpungeIntent")
}
