package rollout_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/fleetsaga/fleetsaga/health"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
)

// A gate's check cut off while the monitor has not answered, by a graceful
// worker shutdown or a pause of the activity, has no verdict: it ends with
// an error (Temporal runs it again), never with an inconclusive round that
// the gate would count.
func TestCheckHealthCutOffGivesNoVerdict(t *testing.T) {
	for _, cause := range []error{worker.ErrWorkerShutdown, activity.ErrActivityPaused} {
		t.Run(cause.Error(), func(t *testing.T) {
			bg, end := context.WithCancelCause(context.Background())
			defer end(nil)
			monitor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				end(cause) // the context ends while the monitor has not answered
				<-r.Context().Done()
			}))
			defer monitor.Close()
			acts := &rollout.HealthActivities{AllowedHosts: []string{"127.0.0.1"}}

			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			env.SetWorkerOptions(worker.Options{BackgroundActivityContext: bg})
			env.RegisterActivity(acts)
			v, err := env.ExecuteActivity(acts.CheckHealth, rollout.HealthCheck{Name: "api", URL: monitor.URL})
			if err == nil {
				var res rollout.HealthResult
				require.NoError(t, v.Get(&res))
				require.NotEqual(t, health.Inconclusive, res.Verdict, "a cut-off check became a round: %+v", res)
			}
			require.Error(t, err)
		})
	}
}
