package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The e2e core on the cluster stack: the real Temporal server (the version
// the dev server embeds) with history and visibility in PostgreSQL, as
// operators run it. The same tests as on the dev server, plus a restart of
// the server mid-update.

func TestClusterWorkerKilledMidActivityUpdateFinishesOnTheOther(t *testing.T) {
	workerKilledMidActivity(t, devstack.TemporalCluster)
}

func TestClusterStarterStartsAttachesRefusesAndCancels(t *testing.T) {
	startsAttachesRefusesAndCancels(t, devstack.TemporalCluster)
}

// make demo STACK=cluster, from a directory of its own: the demo rollout
// over every update kind, with its gate approved, ends with every update's
// expected outcome.
func TestClusterDemoRolloutOverEveryKind(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	root, err := devstack.RepoRoot()
	require.NoError(t, err)
	// demo/run.sh works from the directory above it, with bin/ and .stack/
	// there: a fresh one, so a developer's make demo is left alone.
	dir := t.TempDir()
	require.NoError(t, os.Symlink(binaries(t), filepath.Join(dir, "bin")))
	require.NoError(t, os.Symlink(filepath.Join(root, "demo"), filepath.Join(dir, "demo")))
	database := "e2e_demo_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	if named := os.Getenv("DATABASE_URL"); named != "" { // else a private cluster, removed at the end
		t.Cleanup(func() {
			for _, db := range []string{database, database + "_temporal", database + "_temporal_visibility"} {
				_ = devstack.DropDatabase(context.Background(), named, db)
			}
		})
	}
	cmd := exec.Command(filepath.Join(dir, "bin", "devstack"), "run", "--temporal", devstack.TemporalCluster,
		"--dir", ".stack/demo", "--ui-port", "0", "--workers", "2", "--database", database, "--demo-signer", "--prometheus",
		"--fleetsim-spec", filepath.Join(root, "fleetsim/specs/demo.yaml"), "--", "demo/run.sh")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, tail(string(out), 6000))
	require.Contains(t, string(out), "== demo: every update ended as expected")
	want, err := os.ReadFile(filepath.Join(root, "demo/expected-outcomes.txt"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(dir, ".stack/demo/outcomes.txt"))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

// The Temporal server stopped and started while an activity runs: history
// and visibility are in PostgreSQL, so the update finishes, every server
// got the new agent exactly once, the ledger records one completed attempt,
// and visibility still finds the update by its search attributes.
func TestClusterTemporalRestartMidUpdateLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	s := slowInstallFleet(t)
	stack := startStackOn(t, devstack.TemporalCluster, s, 2, 0)
	c, err := client.Dial(client.Options{HostPort: stack.Temporal.FrontendHostPort()})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run, newImage := startAgentInstall(ctx, t, c, s)

	waitForRunningActivity(ctx, t, c)
	t.Log("restart the Temporal server while an activity runs")
	require.NoError(t, stack.RestartTemporal(ctx))

	require.NoError(t, run.Get(ctx, nil), "the update finishes after the restart")
	requireInstalledOnce(t, stack, newImage)

	var st struct {
		Status   string `json:"status"`
		Attempts []struct {
			State string `json:"state"`
		} `json:"attempts"`
	}
	operator{t, stack}.json(&st, "status", run.GetID())
	require.Equal(t, "Completed", st.Status)
	require.Len(t, st.Attempts, 1, "one attempt in the ledger")
	require.Equal(t, "completed", st.Attempts[0].State)

	query := fmt.Sprintf("%s = %q AND ExecutionStatus = 'Completed'", workflows.SAKind.GetName(), workflows.KindAgentInstall)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		require.NoError(ct, err)
		var ids []string
		for _, e := range resp.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		// The update and its child per server carry the kind.
		require.Len(ct, ids, 1+len(s.Datacenter.Servers), "%v", ids)
		require.Contains(ct, ids, run.GetID())
	}, 30*time.Second, 500*time.Millisecond, "visibility finds the update and its children by their search attribute: %s", query)
}
