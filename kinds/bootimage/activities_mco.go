package bootimage

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
)

// BootImageAwaitMCOInput asks to wait for the MCO to reconcile MachineSets
// it manages.
type BootImageAwaitMCOInput struct {
	Cluster      string        `json:"cluster"`
	Release      string        `json:"release"`
	MachineSets  []string      `json:"machineSets"`
	Deadline     time.Time     `json:"deadline"`
	PollInterval time.Duration `json:"pollInterval"`
}

// BootImageAwaitMCOResult says which the MCO brought to the golden image.
type BootImageAwaitMCOResult struct {
	Reconciled    []string          `json:"reconciled,omitempty"`
	NotReconciled []BootImageMember `json:"notReconciled,omitempty"`
}

// Reasons of a MachineSet the MCO did not reconcile.
const bumpReasonMCONotReconciled = "MCONotReconciled"

// AwaitMCOBootImages waits until every given MachineSet boots the golden
// image, read-only: the MCO patches them, fleetsaga only verifies. What is
// not at the golden image by the deadline is reported with its plan.
func (a *BootImageActivities) AwaitMCOBootImages(ctx context.Context, in BootImageAwaitMCOInput) (BootImageAwaitMCOResult, error) {
	var out BootImageAwaitMCOResult
	c, err := a.client(in.Cluster)
	if err != nil {
		return out, err
	}
	every := max(in.PollInterval, 10*time.Millisecond)
	_, err = pollUntil(ctx, every, in.Deadline, func() (bool, error) {
		golden, st, err := a.readContext(ctx, c, in.Release)
		if err != nil {
			return false, err
		}
		out = BootImageAwaitMCOResult{}
		for _, name := range in.MachineSets {
			activity.RecordHeartbeat(ctx, "reading "+name)
			ms, err := c.GetMachineSet(ctx, name)
			if err != nil {
				return false, classifyKube(err)
			}
			p := machineapi.PlanMCOManaged(ms, golden, st)
			if p.Action == machineapi.ActionUpToDate {
				out.Reconciled = append(out.Reconciled, name)
				continue
			}
			out.NotReconciled = append(out.NotReconciled, BootImageMember{MachineSet: name, Reason: bumpReasonMCONotReconciled,
				Detail: fmt.Sprintf("the MCO has not patched it to the golden image (%s %s: %s)", p.Action, p.Reason, p.Detail)})
		}
		return len(out.NotReconciled) == 0, nil
	})
	return out, err
}
