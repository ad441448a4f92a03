package rollout

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/failure"
)

// Red team 2. A start whose ID token is in plain text is in the history
// before any worker sees it; RefuseRawStart's mark in exposed_statement is
// what makes a copy of that token, sealed by a history reader, useless.
// While the ledger does not answer (down, or its owner holding a lock on
// exposed_statement) for longer than verifyRetryBound (5 minutes), the
// rollout gives up on the mark and ends anyway: the token stays readable
// in its start event, no mark is ever written, and a resealed copy starts
// the same plan as the victim (an operator, same workflow ID, within the
// token's life and the max age). The mark must be written before the run
// may end, as SpendGateApprovals' record is (unbounded retries).
//
// The test environment stops an unlimited retry policy after 10 attempts
// (temporalio/sdk-go internal/internal_workflow_testsuite.go,
// defaultMaximumAttemptsForUnitTest), and LedgerRetry's first 9 take
// about 90 s: so the ledger answers at the 10th attempt here, and the test
// asserts the bound the rollout gives those attempts, as the activity
// sees it, is not minutes.
func TestARawStartTokenIsMarkedExposedEvenWhenTheLedgerIsDownForMinutes(t *testing.T) {
	env := newRolloutEnv(t)
	var aa *activities.ApprovalActivities
	attempts, marked := 0, false
	var bound time.Duration
	env.OnActivity(aa.RefuseRawStart, mock.Anything, mock.Anything).Return(func(ctx context.Context, _ activities.RawStartInput) error {
		attempts++
		bound = activity.GetInfo(ctx).ScheduleToCloseTimeout
		if attempts < 10 {
			return errors.New("ledger: record exposed statement: dial tcp: connection refused")
		}
		marked = true
		return temporal.NewNonRetryableApplicationError(approval.ErrRawIDToken.Error(), failure.ApprovalRefused, nil, string(approval.ReasonUnsealedToken))
	})
	st := approval.Statement{Rollout: "default-test-workflow-id", PlanDigest: strings.Repeat("ab", 32), Decision: approval.DecisionStart, At: time.Now(), Nonce: "n1"}
	in := RolloutInput{Name: "raw", Stages: []Stage{{Name: "canary", Kind: kindTest, Concurrency: 1, Updates: updates(testInput{Name: "a", Take: time.Minute})}},
		StartSignature: &approval.Signed{Payload: string(st.Payload()), IDToken: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ2aWN0aW0ifQ.c2ln"}}
	env.ExecuteWorkflow(Rollout, in)
	require.Error(t, env.GetWorkflowError(), "a raw start is refused")
	require.True(t, marked, "the rollout ended after %d attempts with its raw start token never marked exposed: a resealed copy counts", attempts)
	require.Greater(t, bound, 24*time.Hour, "the rollout gives up on the exposed mark after %s of a ledger that does not answer: a resealed copy counts", bound)
}
