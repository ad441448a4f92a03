package logging_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/internal/logging"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

func loggingWorkflow(ctx workflow.Context) error {
	workflow.GetLogger(ctx).Info("step done", "step", "precheck")
	return nil
}

// On a real worker, the SDK's workflow logger goes through zerolog as JSON,
// with the workflow's identity on the line.
func TestTemporalLinesAreZerologJSONWithWorkflowIDs(t *testing.T) {
	var buf bytes.Buffer
	zl, err := logging.New(&buf, "info", logging.FormatJSON)
	require.NoError(t, err)
	env := testenv.New(t)
	c, err := client.Dial(client.Options{HostPort: env.TemporalAddress(), Logger: logging.Temporal(zl)})
	require.NoError(t, err)
	defer c.Close()
	w := worker.New(c, env.TaskQueue, worker.Options{})
	w.RegisterWorkflow(loggingWorkflow)
	require.NoError(t, w.Start())
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{TaskQueue: env.TaskQueue}, loggingWorkflow)
	require.NoError(t, err)
	require.NoError(t, run.Get(context.Background(), nil))
	w.Stop()

	found := false
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "every line is JSON: %s", sc.Text())
		if line["message"] == "step done" {
			found = true
			require.Equal(t, "precheck", line["step"])
			require.NotEmpty(t, line["WorkflowID"], "%s", sc.Text())
			require.NotEmpty(t, line["RunID"])
			require.Equal(t, "info", line["level"])
		}
	}
	require.True(t, found, "the workflow line was logged: %s", buf.String())
}

func TestBadLevelAndFormatAreErrors(t *testing.T) {
	_, err := logging.New(&bytes.Buffer{}, "loud", logging.FormatJSON)
	require.ErrorContains(t, err, "bad log level")
	_, err = logging.New(&bytes.Buffer{}, "info", "xml")
	require.ErrorContains(t, err, "bad log format")
}
