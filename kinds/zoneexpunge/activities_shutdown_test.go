package zoneexpunge_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
)

// The wait for a zone's removal proof is cut off while a sled-agent read
// is in flight: by a graceful worker shutdown, or a pause of the activity.
// That is no answer of the sled's: the step ends with a retryable error
// (Temporal runs it again on a worker that stays, or after the unpause),
// never with a verdict that fails the expunge.
func TestAwaitZoneGoneCutOffIsNoVerdict(t *testing.T) {
	for _, cause := range []error{worker.ErrWorkerShutdown, activity.ErrActivityPaused} {
		t.Run(cause.Error(), func(t *testing.T) {
			bg, end := context.WithCancelCause(context.Background())
			defer end(nil)
			sled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				end(cause) // the context ends while the sled has not answered
				<-r.Context().Done()
			}))
			defer sled.Close()
			acts := zoneexpunge.NewZoneActivities(nil, fleet.Endpoints{SledAgent: sled.URL + "/sled-agent/{sled}"}, nil, "test")

			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			env.SetWorkerOptions(worker.Options{BackgroundActivityContext: bg})
			env.RegisterActivity(acts)
			_, err := env.ExecuteActivity(acts.AwaitZoneGone, zoneexpunge.ZoneGoneInput{AttemptID: uuid.New(), Sled: uuid.New(),
				Zone: uuid.New(), ExpungedAsOf: 4, Deadline: time.Now().Add(time.Minute), PollInterval: 20 * time.Millisecond})
			require.Error(t, err)
			var ae *temporal.ApplicationError
			require.False(t, errors.As(err, &ae) && ae.NonRetryable(), "a cut-off read became a verdict: %v", err)
		})
	}
}
