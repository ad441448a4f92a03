package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// operator runs the real starter binary against a stack.
type operator struct {
	t     *testing.T
	stack *devstack.Stack
}

type cliResult struct {
	code           int
	stdout, stderr string
}

func (o operator) run(args ...string) cliResult {
	o.t.Helper()
	return o.runWith(nil, args...)
}

// runWith runs starter with env added to the stack's.
func (o operator) runWith(env []string, args ...string) cliResult {
	o.t.Helper()
	cmd := exec.Command(filepath.Join(binaries(o.t), "starter"), args...)
	cmd.Env = append(append(os.Environ(), o.stack.Env()...), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(o.t, err)
	}
	return cliResult{code, out.String(), errb.String()}
}

func (o operator) json(v any, args ...string) {
	o.t.Helper()
	r := o.run(append(args, "--json")...)
	require.Equal(o.t, 0, r.code, "starter %v: %s", args, r.stderr)
	require.NoError(o.t, json.Unmarshal([]byte(r.stdout), v), r.stdout)
}

func (o operator) arm(f faults.Fault) {
	o.t.Helper()
	b, _ := json.Marshal(f)
	resp, err := http.Post(o.stack.FleetsimURL+"/faults", "application/json", bytes.NewReader(b))
	require.NoError(o.t, err)
	resp.Body.Close()
	require.Equal(o.t, http.StatusCreated, resp.StatusCode)
}

// spImage writes a simulated SP image and returns its path.
func spImage(t *testing.T, version string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "e2e-art-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "sp-"+version+".img")
	out, err := exec.Command(filepath.Join(binaries(t), "fleetsim"), "artifact", "--component", "sp", "--version", version, "--out", path).CombinedOutput()
	require.NoError(t, err, string(out))
	return path
}

type started struct {
	WorkflowID string `json:"workflowId"`
	Attached   bool   `json:"attached"`
}

// Starting the same update twice attaches; another update of a busy target
// is refused (exit 5) with the running one's ID; cancel runs the
// compensation (our update aborted on the SP) and watch exits 3.
func TestStarterStartsAttachesRefusesAndCancels(t *testing.T) {
	startsAttachesRefusesAndCancels(t, devstack.TemporalDev)
}

func startsAttachesRefusesAndCancels(t *testing.T, temporal string) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	s, err := spec.Generate(spec.GenerateOptions{Sleds: 4, Servers: 4, Seed: 3, SpeedUp: 1})
	require.NoError(t, err)
	stack := startStackOn(t, temporal, s, 2, 0)
	op := operator{t, stack}
	sled := s.Racks[0].Sleds[2]
	img := spImage(t, "1.1.0")
	// The SP stops making progress: the update stays in flight until cancelled.
	op.arm(faults.Fault{Kind: faults.SPStuck, Target: "sp/sled/2", AfterPercent: 30})
	args := []string{"sp-firmware", "--sled", "2", "--serial", sled.Serial, "--artifact", img, "--version", "1.1.0"}

	var first, second started
	op.json(&first, args...)
	require.Equal(t, "fleetsaga/sp-firmware/sp/sled/2", first.WorkflowID)
	require.False(t, first.Attached)
	op.json(&second, args...)
	require.True(t, second.Attached, "the same update started twice attaches to the running one")

	other := op.run("sp-firmware", "--sled", "2", "--serial", sled.Serial, "--artifact", spImage(t, "1.2.0"), "--version", "1.2.0")
	require.Equal(t, 5, other.code, other.stderr)
	require.Contains(t, other.stderr, first.WorkflowID)

	host := op.run("host-flash", "--sled", "2", "--serial", sled.Serial, "--phase1", img, "--phase1-version", "2.0.0",
		"--phase2", img, "--phase2-version", "2.0.0")
	require.Equal(t, 5, host.code, "a host flash of the same SP is refused while its SP firmware runs: %s", host.stderr)
	require.Contains(t, host.stderr, first.WorkflowID)

	// Wait until our update is on the SP, then cancel.
	var updateID string
	require.Eventually(t, func() bool {
		var st struct {
			Attempts []struct {
				ID    string `json:"id"`
				State string `json:"state"`
			} `json:"attempts"`
		}
		op.json(&st, "status", first.WorkflowID)
		if len(st.Attempts) > 0 && st.Attempts[0].State == "running" {
			updateID = st.Attempts[0].ID
			return true
		}
		return false
	}, time.Minute, 300*time.Millisecond)
	require.Equal(t, 0, op.run("cancel", first.WorkflowID).code)
	w := op.run("watch", first.WorkflowID)
	require.Equal(t, 3, w.code, "watch exits 3 for a cancelled update: %s", w.stderr)

	// The compensation aborted our update on the SP itself.
	resp, err := http.Get(stack.FleetsimURL + "/truth/mgs/sp/sled/2")
	require.NoError(t, err)
	defer resp.Body.Close()
	var truth map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&truth))
	b, _ := json.Marshal(truth)
	require.Contains(t, string(b), updateID)
	require.Contains(t, strings.ToLower(string(b)), "aborted", "SP truth: %s", b)

	var list []map[string]any
	op.json(&list, "list", "--kind", "sp-firmware")
	require.NotEmpty(t, list)
	require.Equal(t, first.WorkflowID, list[0]["workflowId"])
	require.Equal(t, "Canceled", list[0]["status"])

	var attempts []map[string]any
	op.json(&attempts, "list", "--ledger", "--target", "sp/sled/2")
	require.Len(t, attempts, 1, "one attempt, recorded before the device was touched")
	require.Equal(t, updateID, attempts[0]["id"])
	require.Equal(t, "cancelled", attempts[0]["state"])
}

// Pause holds new servers of a fan-out (running ones finish); resume lets
// it complete; the progress query shows the state.
func TestStarterPausesAndResumesAFanOut(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	s, err := spec.Generate(spec.GenerateOptions{Servers: 4, Seed: 9, SpeedUp: 1})
	require.NoError(t, err)
	s.Timings.AgentInstallTime = spec.Duration{Duration: 3 * time.Second}
	stack := startStack(t, s, 1, 0)
	op := operator{t, stack}

	var st started
	op.json(&st, "agent-install", "--agent", "vm-agent", "--all", "--concurrency", "1", "--poll", "500ms")
	require.Equal(t, 0, op.run("pause", st.WorkflowID).code)
	type progress struct {
		Progress struct {
			State  string         `json:"state"`
			Counts map[string]int `json:"counts"`
		} `json:"progress"`
	}
	var p progress
	require.Eventually(t, func() bool {
		op.json(&p, "status", st.WorkflowID)
		return p.Progress.State == "paused"
	}, 30*time.Second, 300*time.Millisecond)
	time.Sleep(8 * time.Second) // longer than two installs: a paused rollout starts none
	op.json(&p, "status", st.WorkflowID)
	paused := p.Progress.Counts["done"] + p.Progress.Counts["running"]
	require.LessOrEqual(t, paused, 2, "at most the server running at pause time (and the one before) finished: %+v", p.Progress.Counts)

	require.Equal(t, 0, op.run("resume", st.WorkflowID).code)
	w := op.run("watch", st.WorkflowID)
	require.Equal(t, 0, w.code, "watch exits 0 once the fan-out completes: %s", w.stderr)
	op.json(&p, "status", st.WorkflowID)
	require.Equal(t, 4, p.Progress.Counts["done"], fmt.Sprintf("%+v", p.Progress.Counts))
}
