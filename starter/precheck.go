package main

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// precheckTimeout bounds the read-only precheck before a start: a few reads
// of one target, normally well under a second; a worker that died holding
// it is replaced within the activity's retries.
const precheckTimeout = 2 * time.Minute

// precheck runs u's dry run before it starts and refuses (exit 2, one line)
// an update its own precheck would end on: no such target, the wrong
// device, a downgrade, invalid input. Nothing is written: no workflow, no
// ledger row. A busy target or one that did not answer is not refused
// here: the update waits for or retries those itself.
func (a *app) precheck(ctx context.Context, c client.Client, u update) error {
	res, err := a.runDryRun(ctx, c, u, precheckTimeout)
	if err != nil {
		return fmt.Errorf("%w (--no-precheck starts it without)", err)
	}
	var final []workflows.PlanRow
	for _, r := range res.Rows() {
		if r.Action == activities.PlanRefuse && r.Final {
			final = append(final, r)
		}
	}
	if len(final) == 0 {
		return nil
	}
	where := final[0].Target
	if final[0].Device != "" {
		where += " " + final[0].Device
	}
	more := ""
	if len(final) > 1 {
		more = fmt.Sprintf(" (and %d more: --dry-run lists them)", len(final)-1)
	}
	return usageErr("refused before starting, nothing was changed: %s: %s%s", where, final[0].Reason, more)
}
