// Package replay guards workflow determinism: histories recorded from real
// runs (kinds/testdata/histories/*.json) are replayed against the
// current code: a long-lived parent's edit that changes its commands fails
// the tests until it is guarded with workflow.GetVersion; a pinned device
// kind's histories are re-recorded when it changes (docs/CONTRIBUTING.md).
package replay

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// RecordEnv is the variable that makes Record write histories.
const RecordEnv = "FLEETSAGA_RECORD_HISTORIES"

// Record writes the history of a finished workflow to path when
// FLEETSAGA_RECORD_HISTORIES=1 (otherwise it does nothing).
func Record(t *testing.T, c client.Client, workflowID, runID, path string) {
	t.Helper()
	if os.Getenv(RecordEnv) != "1" {
		return
	}
	iter := c.GetWorkflowHistory(context.Background(), workflowID, runID, false, 0)
	hist := &historypb.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		hist.Events = append(hist.Events, ev)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, b, 0o644))
	t.Logf("recorded %s", path)
}

// Check replays every history in dir against the given workflows.
func Check(t *testing.T, dir string, workflows ...any) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded histories in %s", dir)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			for _, w := range workflows {
				r.RegisterWorkflow(w)
			}
			fh, err := os.Open(f)
			require.NoError(t, err)
			defer fh.Close()
			hist, err := client.HistoryFromJSON(fh, client.HistoryJSONOptions{})
			require.NoError(t, err, "reading %s", f)
			// Replay under the recorded workflow ID: workflows that derive
			// child IDs from their own (agent install) replay as they ran.
			var opts worker.ReplayWorkflowHistoryOptions
			if started := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes(); started.GetWorkflowId() != "" {
				opts.OriginalExecution = workflow.Execution{ID: started.GetWorkflowId(), RunID: runID(hist)}
			}
			require.NoError(t, r.ReplayWorkflowHistoryWithOptions(nil, hist, opts), "replaying %s", f)
		})
	}
}

// runID is the run a history belongs to: the original run, or the run an
// operator's reset made (its failed workflow task names it), whose run ID
// differs from the original one as it did when it ran.
func runID(hist *historypb.History) string {
	id := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetOriginalExecutionRunId()
	for _, ev := range hist.GetEvents() {
		if f := ev.GetWorkflowTaskFailedEventAttributes(); f.GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW && f.GetNewRunId() != "" {
			id = f.GetNewRunId()
		}
	}
	return id
}
