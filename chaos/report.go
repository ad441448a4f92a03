package chaos

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Report is what a chaos run did and found.
type Report struct {
	Seed     int64         `json:"seed"`
	Duration time.Duration `json:"duration"`
	// Targets are the devices the rollout updates, per kind.
	Targets       map[workflows.Kind]int `json:"targets"`
	Updates       int                    `json:"updates"`
	RolloutStatus enumspb.WorkflowExecutionStatus
	// Outcomes of the ledger's last attempt of every update, by state.
	Outcomes map[string]int `json:"outcomes"`
	// Failed lists updates whose last attempt failed (expected ones too:
	// offline servers, the failing canary).
	Failed []string `json:"failed,omitempty"`

	Kills            int `json:"kills"`
	GracefulRestarts int `json:"gracefulRestarts"`
	WorkerRevivals   int `json:"workerRevivals"`
	PostgresRestarts int `json:"postgresRestarts"`
	TemporalRestarts int `json:"temporalRestarts"`
	// Blind-spot attacks: children cancelled, children terminated and
	// started again, duplicate starter pairs.
	Cancels           int `json:"cancels"`
	TerminateRestarts int `json:"terminateRestarts"`
	DuplicateStarts   int `json:"duplicateStarts"`
	// NewBuilds is 1 when a new worker build was deployed mid-rollout.
	NewBuilds int `json:"newBuilds"`
	// Resets are the children reset, by reset point;
	// ResetsPlanned what the schedule promised.
	Resets        map[string]int `json:"resets"`
	ResetsPlanned map[string]int `json:"resetsPlanned"`
	// PGBlips are the PostgreSQL blips, each with SP or host starts in
	// flight (BlipStarts in all).
	PGBlips    int `json:"pgBlips"`
	BlipStarts int `json:"blipStarts"`
	// FaultsReaimed are API faults taken back unfired at the end of their
	// stage and armed again in the next that they could bite.
	FaultsReaimed int                 `json:"faultsReaimed"`
	FaultsArmed   int                 `json:"faultsArmed"`
	FaultKinds    map[faults.Kind]int `json:"faultKinds"`
	// FaultsUnfired are armed faults that never fired (their target was
	// not touched while they were armed).
	FaultsUnfired []string `json:"faultsUnfired,omitempty"`
	// Spans are, per workflow type, from the first start to the last close.
	Spans map[string]time.Duration `json:"spans"`
	// ActivityRetries is the sum of activity attempts beyond the first;
	// TaskTimeouts the workflow tasks lost with a worker; ReAttempts the
	// updates' device-level attempts beyond the first (ledger).
	ActivityRetries int `json:"activityRetries"`
	TaskTimeouts    int `json:"taskTimeouts"`
	ReAttempts      int `json:"reAttempts"`
	Workflows       int `json:"workflows"`

	Invariants []*invariant `json:"invariants"`
	// Coverage is, per attack kind, how many were scheduled and fired.
	Coverage []coverageRow `json:"coverage"`

	cfg    Config
	expect *expectations
}

func newReport(cfg Config, e *expectations) *Report {
	return &Report{Seed: cfg.Seed, Targets: e.targets, Updates: e.updates, FaultKinds: map[faults.Kind]int{},
		Resets: map[string]int{}, ResetsPlanned: map[string]int{}, cfg: cfg, expect: e}
}

// Violations is the total over every invariant.
func (r *Report) Violations() int {
	n := 0
	for _, iv := range r.Invariants {
		n += len(iv.Violations)
	}
	return n
}

// ChaosShortfall says what chaos the run promised but did not deliver
// (the rollout ended too soon), "" when none.
func (r *Report) ChaosShortfall() string {
	var miss []string
	if r.Kills < r.cfg.Kills {
		miss = append(miss, fmt.Sprintf("%d of %d kills", r.Kills, r.cfg.Kills))
	}
	if r.GracefulRestarts < r.cfg.GracefulRestarts {
		miss = append(miss, fmt.Sprintf("%d of %d graceful restarts", r.GracefulRestarts, r.cfg.GracefulRestarts))
	}
	if r.cfg.RestartPostgres && r.PostgresRestarts == 0 {
		miss = append(miss, "no PostgreSQL restart")
	}
	if r.cfg.RestartTemporal && r.TemporalRestarts == 0 {
		miss = append(miss, "no Temporal restart")
	}
	if r.cfg.NewBuild && r.NewBuilds == 0 {
		miss = append(miss, "no new build deployed")
	}
	if r.cfg.DuplicateStarts && r.expect.dupZone != [16]byte{} && r.DuplicateStarts == 0 {
		miss = append(miss, "no duplicate starters")
	}
	return strings.Join(miss, ", ")
}

// OK: zero violations, all the promised chaos happened, and every attack
// kind and applicable invariant was exercised.
func (r *Report) OK() bool {
	return r.Violations() == 0 && r.ChaosShortfall() == "" && r.Uncovered() == ""
}

func (r *Report) fill(e *evidence, af armedFaults) {
	armed := af.left
	r.Invariants = evaluate(e)
	r.Coverage = r.coverage(af)
	r.Outcomes = map[string]int{}
	for id, a := range e.latestByUpdate {
		r.Outcomes[a.State]++
		if a.State == "failed" || a.State == "cancelled" {
			msg := a.Error
			if len(msg) > 160 {
				msg = msg[:160] + "…"
			}
			r.Failed = append(r.Failed, fmt.Sprintf("%s: %s", id, msg))
		}
	}
	sort.Strings(r.Failed)
	for _, a := range e.attempts {
		if a.Attempt > 1 {
			r.ReAttempts++
		}
	}
	for _, w := range e.workflows {
		r.ActivityRetries += w.ActivityRetries
		r.TaskTimeouts += w.TaskTimeouts
	}
	r.Workflows = len(e.workflows)
	for _, f := range armed {
		if f.Fired == 0 {
			r.FaultsUnfired = append(r.FaultsUnfired, string(f.Kind)+" "+f.Target)
		}
	}
	first, last := map[string]time.Time{}, map[string]time.Time{}
	for _, w := range e.workflows {
		if t, ok := first[w.Type]; !ok || w.Start.Before(t) {
			first[w.Type] = w.Start
		}
		if w.Close.After(last[w.Type]) {
			last[w.Type] = w.Close
		}
	}
	r.Spans = map[string]time.Duration{}
	for t, f := range first {
		if l := last[t]; l.After(f) {
			r.Spans[t] = l.Sub(f).Round(time.Second)
		}
	}
}

func (r *Report) totalTargets() int { return r.expect.totalTargets() }

// print writes the summary table.
func (r *Report) print(out io.Writer) {
	fmt.Fprintf(out, "\nchaos run, seed %d (replay: make chaos SEED=%d), %s\n\n", r.Seed, r.Seed, r.Duration.Round(time.Second))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	var kinds []string
	for k, n := range r.Targets {
		if n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
	}
	sort.Strings(kinds)
	fmt.Fprintf(tw, "targets\t%d\t(%s)\n", r.totalTargets(), strings.Join(kinds, ", "))
	fmt.Fprintf(tw, "updates in the rollout\t%d\t(rollout %s; ledger: %s)\n", r.Updates,
		strings.ToLower(strings.TrimPrefix(r.RolloutStatus.String(), "WORKFLOW_EXECUTION_STATUS_")), mapString(r.Outcomes))
	fmt.Fprintf(tw, "workflows\t%d\t(span first start → last close: %s)\n", r.Workflows, mapString(r.Spans))
	fmt.Fprintf(tw, "worker SIGKILLs\t%d\t(+%d restarts of workers that exited by themselves)\n", r.Kills, r.WorkerRevivals)
	fmt.Fprintf(tw, "worker SIGTERM restarts\t%d\t(each exited within its stop timeout)\n", r.GracefulRestarts)
	fmt.Fprintf(tw, "PostgreSQL restarts\t%d\t\n", r.PostgresRestarts)
	fmt.Fprintf(tw, "Temporal restarts\t%d\t\n", r.TemporalRestarts)
	fmt.Fprintf(tw, "blind-spot attacks\t%d\t(%d children cancelled, %d terminated and started again, %d duplicate starter pairs)\n",
		r.Cancels+r.TerminateRestarts+r.DuplicateStarts, r.Cancels, r.TerminateRestarts, r.DuplicateStarts)
	fmt.Fprintf(tw, "new worker builds\t%d\t(deployed and made current mid-rollout)\n", r.NewBuilds)
	fmt.Fprintf(tw, "workflow resets\t%d\t(%s)\n", sum(r.Resets), mapString(r.Resets))
	fmt.Fprintf(tw, "PostgreSQL blips\t%d\t(%d SP/host starts in flight)\n", r.PGBlips, r.BlipStarts)
	fk := map[string]int{}
	for k, n := range r.FaultKinds {
		fk[string(k)] = n
	}
	fmt.Fprintf(tw, "faults armed\t%d\t(%d kinds: %s; %d never fired; %d taken back unfired and armed again)\n", r.FaultsArmed,
		len(r.FaultKinds), mapString(fk), len(r.FaultsUnfired), r.FaultsReaimed)
	fmt.Fprintf(tw, "retries\t%d\t(activity retries; + %d workflow tasks lost with a worker, %d device re-attempts)\n",
		r.ActivityRetries, r.TaskTimeouts, r.ReAttempts)
	tw.Flush()
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "attack\tscheduled\tfired\t\n")
	for _, c := range r.Coverage {
		mark := ""
		if c.Scheduled > 0 && c.Fired == 0 {
			mark = "NEVER FIRED"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", c.Attack, c.Scheduled, c.Fired, mark)
	}
	tw.Flush()
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "invariant\tchecked\tviolations\t\n")
	for _, iv := range r.Invariants {
		mark := ""
		switch {
		case iv.Applies && iv.Checked == 0:
			mark = "CHECKED NOTHING"
		case !iv.Applies && iv.Checked == 0:
			mark = "(does not apply)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", iv.Name, iv.Checked, len(iv.Violations), mark)
	}
	tw.Flush()
	for _, iv := range r.Invariants {
		for i, v := range iv.Violations {
			if i == 20 {
				fmt.Fprintf(out, "  … %d more\n", len(iv.Violations)-20)
				break
			}
			fmt.Fprintf(out, "  VIOLATION (%s): %s\n", iv.Name, v)
		}
	}
	if len(r.FaultsUnfired) > 0 {
		fmt.Fprintf(out, "\nfaults that never fired: %s\n", strings.Join(r.FaultsUnfired, "; "))
	}
	if len(r.Failed) > 0 {
		fmt.Fprintf(out, "\nupdates that ended failed (%d; offline servers and the failing canary are expected):\n", len(r.Failed))
		for i, f := range r.Failed {
			if i == 15 {
				fmt.Fprintf(out, "  … %d more\n", len(r.Failed)-15)
				break
			}
			fmt.Fprintf(out, "  %s\n", f)
		}
	}
	switch {
	case r.Violations() > 0:
		fmt.Fprintf(out, "\nFAIL: %d violation(s)\n", r.Violations())
	case r.ChaosShortfall() != "":
		fmt.Fprintf(out, "\nFAIL: the rollout ended before the chaos did: %s\n", r.ChaosShortfall())
	case r.Uncovered() != "":
		fmt.Fprintf(out, "\nFAIL: the run did not exercise what it claims: %s\n", r.Uncovered())
	default:
		fmt.Fprintf(out, "\nOK: every invariant held\n")
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func mapString[V any](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %v", k, m[k])
	}
	return strings.Join(parts, ", ")
}
