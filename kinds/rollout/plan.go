package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// DryRun is the dry run of a plan: every update's kind prechecks the
// device read-only and says what it would do. Nothing is written to a
// device or to the ledger.
func DryRun(ctx workflow.Context, in RolloutInput) (PlanResult, error) {
	res := PlanResult{Name: in.Name}
	if err := in.Validate(); err != nil {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidPlan", nil)
	}
	if err := in.refuseMismatchedTargets(); err != nil {
		return res, err
	}
	if err := in.refuseRunState(); err != nil {
		return res, err
	}
	progress := workflows.Progress{Kind: workflows.KindRollout, Target: "plan/" + in.Name, State: workflows.StateRunning, Started: workflow.Now(ctx), Unit: "stages",
		Total: int64(len(in.Stages)), Message: "dry run"}
	if err := workflow.SetQueryHandler(ctx, workflows.ProgressQuery, func() (workflows.Progress, error) { return progress, nil }); err != nil {
		return res, err
	}
	measured := measuredDeviceTimes(ctx, in)
	for _, st := range in.Stages {
		sp := planStage(ctx, st, measured)
		res.Stages = append(res.Stages, sp)
		res.Changes += sp.Changes
		res.Refused += sp.Refused
		res.Estimate += sp.Estimate
		progress.Done++
	}
	progress.State, progress.Outcome = workflows.StateCompleted, res.summary()
	return res, nil
}

// planParallel bounds how many updates of a stage are prechecked at once
// (each is a few reads of one device or API).
const planParallel = 10

// measuredDeviceTimes reads, for the plan's device kinds, how long a
// change took on this fleet lately (a simulated fleet runs its devices
// many times faster than the catalogue's real ones). Fan-out kinds keep
// the catalogue's per-server time: their attempts span many servers. On
// any trouble the catalogue's times stand.
func measuredDeviceTimes(ctx workflow.Context, in RolloutInput) map[workflows.Kind]ledger.Measured {
	var names []string
	for _, st := range in.Stages {
		if info, ok := kinds.Kinds[st.Kind]; ok && !info.Agents && !slices.Contains(names, string(st.Kind)) {
			names = append(names, string(st.Kind))
		}
	}
	out := map[workflows.Kind]ledger.Measured{}
	if len(names) == 0 {
		return out
	}
	var got map[string]ledger.Measured
	if err := workflow.ExecuteActivity(workflows.PlanOptions(ctx, "measured device times"), dryRunActs.MeasuredDeviceTimes, names).
		Get(ctx, &got); err != nil {
		workflow.GetLogger(ctx).Warn("dry run: measured device times unreadable; the catalogue's stand", "error", err)
		return out
	}
	for _, k := range names {
		if m, ok := got[k]; ok && m.Samples >= minMeasured {
			out[workflows.Kind(k)] = m
		}
	}
	return out
}

// dryRunActs names the dry run's ledger read.
var dryRunActs *RolloutActivities

// planStage prechecks every update of st (read-only) in start order.
// measured are the kinds' measured change times (nil: the catalogue's).
func planStage(ctx workflow.Context, st Stage, measured map[workflows.Kind]ledger.Measured) StagePlan {
	sp := StagePlan{Stage: st.Name, Kind: st.Kind, Concurrency: st.Concurrency, Exclusive: st.Exclusive, Approval: st.Approval}
	plans := make([]workflows.UpdatePlan, len(st.Updates))
	running := 0
	wg := workflow.NewWaitGroup(ctx)
	for i, u := range st.Updates {
		_ = workflow.Await(ctx, func() bool { return running < planParallel })
		running++
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			plans[i] = planUpdate(ctx, st.Kind, u)
			if m, ok := measured[st.Kind]; ok {
				plans[i].Device = m.Median
			}
			running--
		})
	}
	wg.Wait(ctx)
	durations := make(map[string]time.Duration, len(plans))
	for i, u := range st.Updates {
		group := exclusiveGroup(st, u.Target)
		changes := 0
		for _, row := range plans[i].Rows {
			row.Stage, row.Kind, row.Target, row.Order, row.Group = st.Name, string(st.Kind), u.Target, i+1, group
			sp.Rows = append(sp.Rows, row)
			if row.Action.Changes() {
				changes++
			}
			if row.Action == activities.PlanRefuse {
				sp.Refused++
			}
		}
		sp.Changes += changes
		durations[u.Target] = plans[i].Duration(changes)
	}
	sp.Estimate = stageEstimate(st, durations)
	sp.EstimateBasis = "the kind's typical device time"
	if m, ok := measured[st.Kind]; ok {
		sp.EstimateBasis = fmt.Sprintf("%s per device, the median of this fleet's last %d changes", m.Median, m.Samples)
	}
	sp.Binding = bindStage(st)
	sp.Digest = sp.BoundDigest()
	return sp
}

// exclusiveGroup names target's exclusive group in st ("" = none).
func exclusiveGroup(st Stage, target string) string {
	for _, g := range st.Exclusive {
		for _, t := range g {
			if t == target {
				return strings.Join(g, "|")
			}
		}
	}
	return ""
}

// planDigest is the SHA-256 of the rows' fields alone: the digest of the
// runs started before boundDigestVersion (boundDigest binds more).
func planDigest(rows []workflows.PlanRow) string {
	h := sha256.New()
	writeRows(h, rows)
	return hex.EncodeToString(h.Sum(nil))
}

// writeRows writes the rows' fields to h, each field ended by a NUL and
// each row by a newline.
func writeRows(h io.Writer, rows []workflows.PlanRow) {
	for _, r := range rows {
		for _, f := range []string{r.Stage, r.Kind, r.Target, r.Device, r.Current, r.Desired, string(r.Action), r.Reason, r.Group, fmt.Sprint(r.Order)} {
			_, _ = h.Write([]byte(f))
			_, _ = h.Write([]byte{0})
		}
		_, _ = h.Write([]byte{'\n'})
	}
}

// planUpdate decodes u's input and runs its kind's dry run. What cannot
// be read is a refusal (the update would not get further either).
func planUpdate(ctx workflow.Context, kind workflows.Kind, u PlanUpdate) workflows.UpdatePlan {
	info, ok := kinds.Kinds[kind]
	if !ok || info.Plan == nil {
		return workflows.UpdatePlan{Rows: []workflows.PlanRow{{Action: activities.PlanUpdate, Reason: "kind " + string(kind) + " has no dry run: the update runs its own prechecks"}}}
	}
	in, err := decodeInput(kind, u)
	if err != nil {
		return workflows.UpdatePlan{Rows: []workflows.PlanRow{{Action: activities.PlanRefuse, Reason: "invalid input: " + err.Error(), Final: true}}}
	}
	p := info.Plan(ctx, in)
	p.Device = info.DeviceTime
	return p
}
