package bootimage

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
)

// CanaryBaseline is a MachineSet's replicas and machines before a canary.
type CanaryBaseline struct {
	Replicas int32    `json:"replicas"`
	Machines []string `json:"machines"`
}

// BootImageCanaryInput names the canary MachineSet.
type BootImageCanaryInput struct {
	Cluster    string `json:"cluster"`
	MachineSet string `json:"machineSet"`
}

// CanaryBaseline reads the canary MachineSet's replicas and machines.
func (a *BootImageActivities) CanaryBaseline(ctx context.Context, in BootImageCanaryInput) (CanaryBaseline, error) {
	var out CanaryBaseline
	c, err := a.client(in.Cluster)
	if err != nil {
		return out, err
	}
	ms, err := c.GetMachineSet(ctx, in.MachineSet)
	if err != nil {
		return out, classifyKube(err)
	}
	machines, err := c.Machines(ctx, in.MachineSet)
	if err != nil {
		return out, classifyKube(err)
	}
	out.Replicas = ms.Replicas
	out.Machines = []string{}
	for _, m := range machines {
		out.Machines = append(out.Machines, m.Name)
	}
	return out, nil
}

// BootImageScaleInput moves spec.replicas From → To.
type BootImageScaleInput struct {
	Cluster    string `json:"cluster"`
	MachineSet string `json:"machineSet"`
	From       int32  `json:"from"`
	To         int32  `json:"to"`
	// Down, when set, scales anything between To and From down to To: the
	// undo of an abandoned bump's canary scale-ups, some of which may never
	// have happened (From is the most they can have left).
	Down bool `json:"down,omitempty"`
}

// ScaleMachineSet sets replicas From → To; already at To is success (a retry
// after a lost reply), anything but From or To (or, scaling Down, between
// them) means someone else scaled it.
func (a *BootImageActivities) ScaleMachineSet(ctx context.Context, in BootImageScaleInput) error {
	c, err := a.client(in.Cluster)
	if err != nil {
		return err
	}
	return changeOnFreshRead(ctx, c, in.MachineSet, "scale ", "scaling", func(ms *machineapi.MachineSet) (func() error, error) {
		switch {
		case ms.Replicas == in.To:
			return nil, nil
		case ms.Replicas == in.From, in.Down && ms.Replicas > in.To && ms.Replicas < in.From:
		default:
			return nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("machineset %s has %d replicas, expected %d (someone else scaled it)", in.MachineSet, ms.Replicas, in.From),
				failure.BootImageReplicas, nil)
		}
		return func() error {
			_, err := c.SetReplicas(ctx, ms, in.To)
			return err
		}, nil
	})
}

// BootImageCanaryWaitInput waits for a new machine to join.
type BootImageCanaryWaitInput struct {
	Cluster    string               `json:"cluster"`
	MachineSet string               `json:"machineSet"`
	Baseline   []string             `json:"baseline"`
	Image      machineapi.BootImage `json:"image"`
	Deadline   time.Time            `json:"deadline"`
	// PollInterval between looks at the machines.
	PollInterval time.Duration `json:"pollInterval"`
}

// CanaryResult is how the canary went.
type CanaryResult struct {
	Joined  bool   `json:"joined"`
	Machine string `json:"machine,omitempty"`
	Phase   string `json:"phase,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// WaitCanaryJoin polls (heartbeating) until a machine that was not in the
// baseline, booting Image, has joined as a node; a machine that failed, or
// the deadline, ends the wait with Joined false.
func (a *BootImageActivities) WaitCanaryJoin(ctx context.Context, in BootImageCanaryWaitInput) (CanaryResult, error) {
	c, err := a.client(in.Cluster)
	if err != nil {
		return CanaryResult{}, err
	}
	old := map[string]bool{}
	for _, m := range in.Baseline {
		old[m] = true
	}
	var last CanaryResult
	late, err := pollUntil(ctx, pollEvery(in.PollInterval), in.Deadline, func() (bool, error) {
		machines, err := c.Machines(ctx, in.MachineSet)
		if err != nil {
			if cerr := classifyKube(err); cerr != err {
				return false, cerr
			}
		}
		last = CanaryResult{}
		for _, m := range machines {
			if old[m.Name] || !m.Image.Equal(in.Image) {
				continue
			}
			last = CanaryResult{Machine: m.Name, Phase: m.Phase, Detail: m.Error}
			if m.Joined() {
				last.Joined = true
				last.Detail = "joined as node " + m.NodeRef
				return true, nil
			}
			if m.Phase == "Failed" {
				if last.Detail == "" {
					last.Detail = "machine failed"
				}
				return true, nil
			}
		}
		activity.RecordHeartbeat(ctx, last)
		return false, nil
	})
	switch {
	case err != nil:
		return CanaryResult{}, err
	case late && last.Machine == "":
		last.Detail = "no new machine with the new image appeared"
	case late:
		last.Detail = fmt.Sprintf("machine %s still %s at the deadline", last.Machine, last.Phase)
	}
	return last, nil
}
