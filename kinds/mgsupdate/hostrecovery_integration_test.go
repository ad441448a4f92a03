package mgsupdate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// hostRecoveryInput is a trampoline for the sled in cubby: a phase 1 that
// names phase 2 image names ("": the phase 2 it comes with) and that
// phase 2.
func (st *mgsStack) hostRecoveryInput(cubby int, names string) mgsupdate.HostRecoveryInput {
	st.t.Helper()
	h := st.hostInputNaming(cubby, names)
	return mgsupdate.HostRecoveryInput{Sled: h.Sled, Phase1: h.Phase1, Phase2: h.Phase2, Timing: h.Timing}
}

// The seed scenario as the recovery operation it is: the
// trampoline boots with its phase 2 fetched through the SP, which attaches
// to mgs/1 (cubby 2 with seed 21) while every command of the workflow went
// to mgs/0 first, and mgs/0 records none of the fetch. The workflow's
// progress query and its current details (the Web UI) rise during the
// fetch, through at most one signal per tenth. Afterwards recovery mode is
// clear and the persistent slot is still the installed one: an ordinary
// power cycle boots the installed OS from disk A.
func TestHostRecoveryFetchesThroughTheOtherMGS(t *testing.T) {
	const cubby = 2
	st := newMGSStack(t, func(s *spec.Spec) {
		s.Timings.Phase2BytesPerSecond = 64 // ×100: the 132 KiB phase 2 in about 20 s
	})
	in := st.hostRecoveryInput(cubby, "")
	in.Timing.NewVersionTimeout = 2 * time.Minute
	installed := st.truth(cubby).Host.Slots[0]
	run := st.startWF(workflows.KindHostRecovery, in, mgsupdate.HostRecovery)
	res, seen := st.watchToCompletion(run, mgsupdate.MGSPhaseRecoveryFetch)
	seen.requireRose(t, "the fetch")

	tr := st.truth(cubby)
	require.NotNil(t, tr.Host.AttachedMGS)
	assert.Equal(t, 1, *tr.Host.AttachedMGS, "the SP attached to mgs/1")
	_, served := st.sim.Truth()[simmgs.Name].(simmgs.Truth).Racks[0].MGS[0].Served["sled/2"]
	assert.False(t, served, "mgs/0, which the workflow asked first, served none of it")
	assert.Equal(t, simmgs.HostRunning, tr.Host.State)
	assert.Equal(t, simmgs.Phase2FromRecovery, tr.Host.Phase2Source, "phase 2 came through the SP, not from disk")
	assert.Equal(t, phase2ID(t, in.Phase2.Path), tr.Host.BootedPhase2)
	assert.Equal(t, 1, tr.Host.BootedSlot, "the trampoline booted from the inactive slot")
	assert.Equal(t, in.Phase1.SHA256, tr.Host.Slots[1].SHA256)
	assert.False(t, tr.Host.StartupOptions.Phase2RecoveryMode, "recovery mode cleared after the boot")
	assert.Equal(t, 0, tr.Host.PersistentSlot, "the trampoline was never persisted")
	assert.Equal(t, installed.SHA256, tr.Host.Slots[0].SHA256, "the installed phase 1, untouched")

	atts := st.checkLedgerAgrees(run, cubby, res)
	last := atts[len(atts)-1]
	assert.Equal(t, string(mgsupdate.MGSPhaseRecoveryFetch), last.Phase)
	require.NotNil(t, tr.Host.Phase2)
	assert.EqualValues(t, tr.Host.Phase2.Total, last.Done, "the ledger shows the fetch at 100%")
	signals := st.progressSignals(run)
	t.Logf("history: %d events, %d progress signals", st.historyLen(run), signals)
	assert.LessOrEqual(t, signals, 2*(activities.ProgressSteps-1), "a tenth at most per long step (phase 1 delivery, phase 2 fetch)")

	st.powerCycle(cubby)
	st.requireRunning(cubby, 0, sled.Phase2HeaderID(sled.InitialPhase2(installed.Version)))
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/host-recovery-other-mgs.json")
}

// The MGS the SP fetches from goes down mid-fetch (mgs_down on mgs/0, to
// which cubby 3's SP attaches first with seed 21, and which the workflow
// asks first too): the SP moves to mgs/1, the workflow keeps following the
// fetch there, its progress keeps rising past the point of the outage, and
// the recovery completes with the trampoline booted from mgs/1's record.
func TestHostRecoveryFollowsTheFetchWhenItsMGSGoesDown(t *testing.T) {
	const cubby = 3
	st := newMGSStack(t, func(s *spec.Spec) {
		s.Timings.Phase2BytesPerSecond = 64 // a fetch of about 20 s
	})
	in := st.hostRecoveryInput(cubby, "")
	in.Timing.NewVersionTimeout = 2 * time.Minute
	run := st.startWF(workflows.KindHostRecovery, in, mgsupdate.HostRecovery)
	// Arm the outage once the fetch is a third of the way, through mgs/0.
	armedAt := make(chan uint64, 1)
	go func() {
		defer close(armedAt)
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			if p := st.truth(cubby).Host.Phase2; p != nil && p.Total > 0 && p.Offset*3 >= p.Total {
				if p.MGS != 0 {
					return // attached elsewhere: the test's premise failed (checked below)
				}
				if err := armFault(st.sim.URL, faults.Fault{Kind: faults.MGSDown, Target: "mgs/0"}); err == nil {
					armedAt <- p.Offset
				}
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	_, seen := st.watchToCompletion(run, mgsupdate.MGSPhaseRecoveryFetch)
	at, armed := <-armedAt
	require.True(t, armed, "the fetch went through mgs/0 first and mgs/0 went down mid-fetch")
	var after int
	for d := range seen.done {
		if uint64(d) > at {
			after++
		}
	}
	t.Logf("mgs/0 down at %d bytes; progress seen: %d byte counts, %d after the outage; details %q", at, len(seen.done), after, seen.details)
	assert.GreaterOrEqual(t, after, 3, "the progress query kept rising after the SP moved to mgs/1")
	tr := st.truth(cubby)
	require.NotNil(t, tr.Host.AttachedMGS)
	assert.Equal(t, 1, *tr.Host.AttachedMGS, "the SP moved to mgs/1")
	assert.Equal(t, simmgs.Phase2FromRecovery, tr.Host.Phase2Source)
	assert.Equal(t, phase2ID(t, in.Phase2.Path), tr.Host.BootedPhase2)
	assert.Equal(t, simmgs.HostRunning, tr.Host.State)
	assert.False(t, tr.Host.StartupOptions.Phase2RecoveryMode, "recovery mode cleared through mgs/1")
	assert.Equal(t, 0, tr.Host.PersistentSlot)
}

// armFault arms f on fleetsim at base (usable off the test goroutine).
func armFault(base string, f faults.Fault) error {
	b, _ := json.Marshal(f)
	resp, err := http.Post(base+"/faults", "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("arm %s: HTTP %d", f.Kind, resp.StatusCode)
	}
	return nil
}

// A trampoline whose phase 2 nobody serves (its phase 1 names another
// image): the host's fetch gives up, the recovery ends failed at its
// timeout with recovery mode cleared and the installed slot still
// persistent, and a power cycle boots the installed OS again.
func TestHostRecoveryFailedFetchLeavesTheInstalledOS(t *testing.T) {
	const cubby = 3
	st := newMGSStack(t)
	in := st.hostRecoveryInput(cubby, simmgs.SHA256Hex([]byte("a phase 2 nobody serves")))
	in.Timing.NewVersionTimeout = 5 * time.Second
	installed := st.truth(cubby).Host.Slots[0]
	run := st.startWF(workflows.KindHostRecovery, in, mgsupdate.HostRecovery)
	st.requireFailedWith(run, failure.HostBootTimeout)
	st.requireRecoveryUndone(run, cubby, installed, ledger.StateFailed)
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/host-recovery-fetch-failed.json")
}

// A cancel during the fetch: the recovery ends cancelled, its compensation
// clears recovery mode and puts the next boot on the installed slot; a
// power cycle boots the installed OS.
func TestHostRecoveryCancelDuringFetch(t *testing.T) {
	const cubby = 1
	st := newMGSStack(t, func(s *spec.Spec) {
		s.Timings.Phase2BytesPerSecond = 64 // a fetch of about 20 s, long enough to cancel in
	})
	in := st.hostRecoveryInput(cubby, "")
	in.Timing.NewVersionTimeout = 2 * time.Minute
	installed := st.truth(cubby).Host.Slots[0]
	run := st.startWF(workflows.KindHostRecovery, in, mgsupdate.HostRecovery)
	st.cancelInPhase(run, mgsupdate.MGSPhaseRecoveryFetch)
	_, err := st.result(run)
	var ce *temporal.CanceledError
	require.ErrorAs(t, err, &ce, "%v", err)
	st.requireRecoveryUndone(run, cubby, installed, ledger.StateCancelled)
}

// requireRecoveryUndone: the recovery ended in state, recovery mode clear,
// the installed slot persistent and its phase 1 untouched, the ledger
// saying so; a power cycle then boots the installed OS from disk A.
func (st *mgsStack) requireRecoveryUndone(run interface{ GetID() string }, cubby int, installed simmgs.SlotTruth, state ledger.State) {
	st.t.Helper()
	tr := st.truth(cubby)
	assert.False(st.t, tr.Host.StartupOptions.Phase2RecoveryMode, "recovery mode cleared")
	assert.Equal(st.t, 0, tr.Host.PersistentSlot, "the persistent slot is the installed one")
	assert.Equal(st.t, installed.SHA256, tr.Host.Slots[0].SHA256, "the installed phase 1, untouched")
	atts, err := st.env.Store.Attempts(context.Background(), run.GetID())
	require.NoError(st.t, err)
	last := atts[len(atts)-1]
	assert.Equal(st.t, state, last.State)
	assert.Contains(st.t, last.Error, "recovery mode cleared; the next boot uses slot 0, the installed OS")
	st.powerCycle(cubby)
	st.requireRunning(cubby, 0, sled.Phase2HeaderID(sled.InitialPhase2(installed.Version)))
}

// The starter's host-recovery: --dry-run shows what the recovery would do
// (exit 6: a change planned) and changes nothing; a wrong serial is refused before starting (exit 2,
// nothing written, no workflow).
func TestHostRecoveryStarterDryRunAndPrecheck(t *testing.T) {
	const cubby = 2
	st := newMGSStack(t)
	in := st.hostRecoveryInput(cubby, "")
	before := st.truth(cubby).Host
	args := []string{"host-recovery", "--sled", "2", "--serial", in.Sled.Serial, "--phase1", in.Phase1.Path, "--phase1-version", in.Phase1.Version,
		"--phase2", in.Phase2.Path, "--phase2-version", in.Phase2.Version}
	out, code := st.starterExit(append(args, "--dry-run")...)
	require.Equal(t, 6, code, "a dry run's exit for changes planned: %s", out)
	assert.Contains(t, out, "trampoline to slot 1, recovery boot, phase 2 through the SP")
	assert.Contains(t, out, "(installed, stays persistent)")
	after := st.truth(cubby).Host
	assert.Equal(t, before.Slots, after.Slots, "the dry run wrote nothing")
	assert.Equal(t, before.Boots, after.Boots)

	args[4] = "NOT-THE-SERIAL"
	out, code = st.starterExit(args...)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "refused before starting, nothing was changed")
	assert.Equal(t, before.Slots, st.truth(cubby).Host.Slots)
}

// starterExit runs the real starter binary against the test's stack (its
// worker's task queue) and returns its output and exit code.
func (st *mgsStack) starterExit(args ...string) (string, int) {
	st.t.Helper()
	bin := filepath.Join(st.dir, "starter")
	if _, err := os.Stat(bin); err != nil {
		out, err := osexec.Command("go", "build", "-o", bin, "github.com/fleetsaga/fleetsaga/starter").CombinedOutput()
		require.NoError(st.t, err, string(out))
	}
	cmd := osexec.Command(bin, args...)
	cmd.Env = append(os.Environ(), st.env.CLIEnv()...)
	out, err := cmd.CombinedOutput()
	var ee *osexec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	require.NoError(st.t, err, string(out))
	return string(out), 0
}

// An operator resets a recovery while the host fetches the trampoline's
// phase 2, to each point. The reset run takes its attempt over, finds its
// phase 1 written, and its recovery boot finds the host on with recovery
// mode set: the host is not power-cycled again; it follows the fetch to
// the boot. Phase 1 was sent once, the host booted once, recovery mode is
// clear, the persistent slot is the installed one, and nothing is left
// active on the target.
func TestHostRecoveryResetDuringTheFetch(t *testing.T) {
	for i, p := range resetPoints {
		t.Run(string(p), func(t *testing.T) {
			cubby := 1 + i
			st := newMGSStack(t, func(s *spec.Spec) {
				s.Timings.Phase2BytesPerSecond = 64 // a fetch of about 20 s to reset in
			})
			in := st.hostRecoveryInput(cubby, "")
			in.Timing.NewVersionTimeout = 2 * time.Minute
			boots := st.truth(cubby).Host.Boots
			run := st.startWF(workflows.KindHostRecovery, in, mgsupdate.HostRecovery)
			require.Eventually(t, func() bool {
				h := st.truth(cubby).Host
				return h.State == simmgs.HostFetching && h.Phase2 != nil && h.Phase2.Offset > 0
			}, time.Minute, 5*time.Millisecond)
			reset := resetWorkflow(t, st.env.Client, run.GetID(), p)

			tr := st.requireResetRunBooted(reset, cubby, in.Target(), in.Phase2)
			assert.Equal(t, simmgs.Phase2FromRecovery, tr.Host.Phase2Source)
			assert.Equal(t, boots+1, tr.Host.Boots, "the host was power-cycled once")
			assert.False(t, tr.Host.StartupOptions.Phase2RecoveryMode)
			assert.Equal(t, 0, tr.Host.PersistentSlot)
		})
	}
}
