package bootimage

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"

	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
)

// changeOnFreshRead is the read-decide-write step of an activity that
// changes a MachineSet (ScaleMachineSet, ReconcileBootImage): it reads the
// MachineSet and lets decide say what to write (nil: nothing, with decide's
// error or none), then writes it with the read resourceVersion. A write
// that lost to another writer (a conflict: the MachineSet moved on since
// the read) is decided again on a fresh read, at most conflictRetries
// times; what names the change in the error after that ("scale "), verb in
// the heartbeat before the write ("scaling"). Heartbeats carry a cancel
// to the activity between calls, and a cancelled activity starts no write.
func changeOnFreshRead(ctx context.Context, c *machineapi.Client, name, what, verb string,
	decide func(ms *machineapi.MachineSet) (write func() error, err error)) error {
	for try := 0; try < conflictRetries; try++ {
		activity.RecordHeartbeat(ctx, "reading "+name)
		ms, err := c.GetMachineSet(ctx, name)
		if err != nil {
			return classifyKube(err)
		}
		write, err := decide(ms)
		if write == nil {
			return err
		}
		activity.RecordHeartbeat(ctx, verb+" "+name)
		if err := ctx.Err(); err != nil {
			return err // cancelled: do not start the write
		}
		if err := write(); !machineapi.IsConflict(err) {
			return classifyKube(err)
		}
	}
	return fmt.Errorf("machineset %s: %sstill conflicting after %d fresh reads", name, what, conflictRetries)
}
