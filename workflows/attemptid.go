package workflows

import (
	"strconv"

	"github.com/google/uuid"
	"go.temporal.io/sdk/workflow"
)

// attemptNamespace scopes the attempt IDs fleetsaga derives.
var attemptNamespace = uuid.MustParse("5b0f3c1e-8f6a-4d2b-9c57-3e1f0a6d2b84")

// DerivedID is a UUID named by the workflow ID, the run's original run ID
// and name. The original run ID is the one thing about a run that a reset
// does not change (the run ID does, while the reset run replays), and a
// continue-as-new does: the same name gives the same ID in every replay,
// in a re-run of a local activity whose workflow task was lost, and in a
// run reset to any point, so a reset run finds its own attempt, in the
// ledger and on the device, instead of taking it for a foreign one.
func DerivedID(ctx workflow.Context, name string) uuid.UUID {
	info := workflow.GetInfo(ctx)
	run := info.OriginalRunID
	if run == "" { // the SDK's test environment sets none
		run = info.WorkflowExecution.RunID
	}
	return uuid.NewSHA1(attemptNamespace, []byte(info.WorkflowExecution.ID+"/"+run+"/"+name))
}

// newAttemptID is the run's next attempt ID (also the device-side update
// ID where the device takes one): derivedID of the run's count of attempt
// IDs. It is the one generator of attempt IDs.
func (l *Lifecycle) newAttemptID(ctx workflow.Context) uuid.UUID {
	l.attemptIDs++
	return DerivedID(ctx, strconv.Itoa(l.attemptIDs))
}
