// Package bootimage is the boot image bump kind: its contract (input,
// phases, result: contract.go), its workflow (workflow.go) and steps
// (steps.go), the canary (canary.go), the version skew rule (skew.go), the
// adoption of an abandoned bump (adopt.go), its activities
// (activities*.go) and its dry run (plan.go, plan_activities.go).
package bootimage

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/internal/version"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Selection modes (which MachineSets the bump manages).
const (
	SelectAll     = "All"
	SelectPartial = "Partial"
	SelectNone    = "None"
)

// BootImageBumpInput is one bump of one cluster.
type BootImageBumpInput struct {
	Cluster string `json:"cluster"`
	// Release, when set, must be the cluster's current release (the bump
	// fails instead of bumping to another one).
	Release string `json:"release,omitempty"`
	// Selection: All (default), Partial (MachineSets matching Selector) or None.
	Selection string `json:"selection,omitempty"`
	Selector  string `json:"selector,omitempty"`
	// Skew enforcement: Automatic (default), Manual (with ManualOCPVersion
	// x.y.z or ManualRHCOSVersion major.minor) or None.
	Skew               string `json:"skew,omitempty"`
	ManualOCPVersion   string `json:"manualOCPVersion,omitempty"`
	ManualRHCOSVersion string `json:"manualRHCOSVersion,omitempty"`
	// Canary, when set, proves the new image boots before the bump records.
	Canary *BootImageCanary `json:"canary,omitempty"`
	// Concurrency bounds MachineSets reconciled at once (default 10).
	Concurrency int `json:"concurrency,omitempty"`
	// PreconditionTimeout bounds the wait for an upgrade to finish and the
	// golden record to be stamped (default 30 min).
	PreconditionTimeout time.Duration `json:"preconditionTimeout,omitempty"`
	// SettleInterval is how long after a patch the MachineSet is looked at
	// again to catch another actor reverting it (default 10 s).
	SettleInterval time.Duration `json:"settleInterval,omitempty"`
	// PollInterval of the waits (default 5 s).
	PollInterval time.Duration `json:"pollInterval,omitempty"`
	// HotLoopLimit is how many times the same patch is applied before the
	// MachineSet is reported as reverted by another actor (default 3).
	HotLoopLimit int `json:"hotLoopLimit,omitempty"`
	// AwaitMCO: wait (bounded by PreconditionTimeout) for the MCO's boot
	// image controller to bring the MachineSets it manages to the golden
	// image, and fail the ones it does not. Without it they are reported
	// (MCOManaged) and left to the MCO. fleetsaga never patches them.
	AwaitMCO bool `json:"awaitMCO,omitempty"`
}

// BootImageCanary is the optional canary scale-up.
type BootImageCanary struct {
	// MachineSet to scale up by one; default the first patched one.
	MachineSet string `json:"machineSet,omitempty"`
	// Timeout for the new machine to join (default 20 min).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Target implements UpdateInput.
func (in *BootImageBumpInput) Target() string { return "cluster/" + in.Cluster }

// ArtifactVersion implements UpdateInput: the release, when stated.
func (in *BootImageBumpInput) ArtifactVersion() string { return in.Release }

// Validate implements UpdateInput.
func (in *BootImageBumpInput) Validate() error {
	var errs []error
	if in.Cluster == "" || strings.ContainsAny(in.Cluster, "/ ") {
		errs = append(errs, errors.New("cluster is required and must not contain '/' or spaces"))
	}
	if in.Release != "" {
		if _, err := version.Parse(in.Release, version.Release); err != nil {
			errs = append(errs, err)
		}
	}
	switch in.Selection {
	case "", SelectAll, SelectNone:
		if in.Selector != "" {
			errs = append(errs, errors.New("selector is only used with selection Partial"))
		}
	case SelectPartial:
		if in.Selector == "" {
			errs = append(errs, errors.New("selection Partial needs a label selector"))
		}
	default:
		errs = append(errs, fmt.Errorf("selection must be All, Partial or None, not %q", in.Selection))
	}
	switch in.Skew {
	case "", SkewAutomatic, SkewNone:
		if in.ManualOCPVersion != "" || in.ManualRHCOSVersion != "" {
			errs = append(errs, errors.New("manual versions are only used with skew Manual"))
		}
	case SkewManual:
		switch {
		case (in.ManualOCPVersion == "") == (in.ManualRHCOSVersion == ""):
			errs = append(errs, errors.New("skew Manual needs exactly one of manualOCPVersion (x.y.z) or manualRHCOSVersion (major.minor)"))
		case in.ManualOCPVersion != "":
			if _, err := version.Parse(in.ManualOCPVersion, version.Release); err != nil {
				errs = append(errs, err)
			}
		default:
			if _, err := version.Parse(in.ManualRHCOSVersion, version.RHCOS); err != nil {
				errs = append(errs, err)
			}
		}
	default:
		errs = append(errs, fmt.Errorf("skew must be Automatic, Manual or None, not %q", in.Skew))
	}
	if in.Concurrency < 0 || in.Concurrency > 100 {
		errs = append(errs, errors.New("concurrency must be within 0..100 (0 = default 10)"))
	}
	if in.HotLoopLimit < 0 {
		errs = append(errs, errors.New("hotLoopLimit must be >= 0 (0 = default 3)"))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"preconditionTimeout", in.PreconditionTimeout}, {"settleInterval", in.SettleInterval}, {"pollInterval", in.PollInterval}} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("%s must be >= 0", d.name))
		}
	}
	if in.Canary != nil && in.Canary.Timeout < 0 {
		errs = append(errs, errors.New("canary timeout must be >= 0"))
	}
	return errors.Join(errs...)
}

func (in *BootImageBumpInput) defaults() {
	if in.Selection == "" {
		in.Selection = SelectAll
	}
	if in.Skew == "" {
		in.Skew = SkewAutomatic
	}
	if in.Concurrency == 0 {
		in.Concurrency = 10
	}
	if in.PreconditionTimeout == 0 {
		in.PreconditionTimeout = 30 * time.Minute
	}
	if in.SettleInterval == 0 {
		in.SettleInterval = 10 * time.Second
	}
	if in.PollInterval == 0 {
		in.PollInterval = 5 * time.Second
	}
	if in.HotLoopLimit == 0 {
		in.HotLoopLimit = 3
	}
	if in.Canary != nil && in.Canary.Timeout == 0 {
		in.Canary.Timeout = 20 * time.Minute
	}
}

// BootImageBumpResult is the summary: reconciled / skipped / failed.
type BootImageBumpResult struct {
	Cluster string `json:"cluster"`
	Release string `json:"release,omitempty"`
	// Outcome: Reconciled, ReconciledWithSkips, NothingSelected, Failed,
	// CanaryFailed, Cancelled.
	Outcome string `json:"outcome"`
	// UpToDate were already on the golden image; Patched were patched by this run.
	UpToDate []string          `json:"upToDate,omitempty"`
	Patched  []string          `json:"patched,omitempty"`
	Skipped  []BootImageMember `json:"skipped,omitempty"`
	Failed   []BootImageMember `json:"failed,omitempty"`
	// HotLoop lists MachineSets another actor kept reverting (also in Failed).
	HotLoop []string `json:"hotLoop,omitempty"`
	// OptIn is the cluster's MachineConfiguration opt-in the run applied.
	OptIn *machineapi.OptIn `json:"optIn,omitempty"`
	// Owner says who writes the selected MachineSets' boot images: "mco"
	// (the MCO's boot image controller; fleetsaga reports and verifies) or
	// "fleetsaga" (no controller resolved the opt-in; fleetsaga patches).
	Owner string `json:"owner,omitempty"`
	// MCOManaged are the MachineSets the MCO owns (never patched by
	// fleetsaga); MCOReconciled those AwaitMCO saw at the golden image.
	MCOManaged    []string `json:"mcoManaged,omitempty"`
	MCOReconciled []string `json:"mcoReconciled,omitempty"`
	// BootImageVersion is the cluster's boot image version after the run.
	BootImageVersion string                 `json:"bootImageVersion,omitempty"`
	Skew             SkewVerdict            `json:"skew"`
	Canary           *BootImageCanaryReport `json:"canary,omitempty"`
	// Restored lists compensation outcomes ("<machineset>: restored").
	Restored []string `json:"restored,omitempty"`
	// Adopted lists the changes of abandoned (terminated) bumps this run
	// took into its rollback ("<machineset> image|scale (from <attempt>)").
	Adopted []string `json:"adopted,omitempty"`
	// Waited says what the preconditions waited for.
	Waited []string `json:"waited,omitempty"`
}

// BootImageMember is one skipped or failed MachineSet with the reason.
type BootImageMember struct {
	MachineSet string `json:"machineSet"`
	Reason     string `json:"reason"`
	Detail     string `json:"detail,omitempty"`
}

// BootImageCanaryReport is the canary's story.
type BootImageCanaryReport struct {
	MachineSet string `json:"machineSet"`
	Joined     bool   `json:"joined"`
	Machine    string `json:"machine,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

// BootImageProgress is the progress query answer: the common progress plus
// the summary so far.
type BootImageProgress struct {
	workflows.Progress
	Summary BootImageBumpResult `json:"summary"`
}

// BootImageBumpWorkflowID is the bump's workflow ID for a cluster.
func BootImageBumpWorkflowID(cluster string) string {
	return workflows.WorkflowID(workflows.KindBootImageBump, "cluster/"+cluster)
}

// Bump phases, as the progress query, the ledger and the Web UI show them.
const (
	bumpPhasePreconditions workflows.Phase = "WaitingForPreconditions"
	bumpPhasePlanning      workflows.Phase = "Planning"
	bumpPhasePatching      workflows.Phase = "Patching"
	bumpPhaseCanary        workflows.Phase = "Canary"
	bumpPhaseRollingBack   workflows.Phase = "RollingBack"
	bumpPhaseSkew          workflows.Phase = "SkewEnforcement"
	// bumpPhaseAwaitingMCO: the operator asked to wait for the MCO to
	// reconcile the MachineSets it manages.
	bumpPhaseAwaitingMCO workflows.Phase = "AwaitingMCO"
	bumpPhaseDone        workflows.Phase = "Done"
)

func init() {
	workflows.DeclarePhases([]workflows.Phase{bumpPhasePreconditions, bumpPhasePlanning, bumpPhasePatching, bumpPhaseAwaitingMCO, bumpPhaseCanary,
		bumpPhaseRollingBack, bumpPhaseSkew, bumpPhaseDone},
		bumpPhasePreconditions, bumpPhasePatching, bumpPhaseAwaitingMCO, bumpPhaseCanary, bumpPhaseRollingBack, bumpPhaseSkew)
}

// Failure reasons beyond the plan's.
const (
	bumpReasonHotLoop = "HotLoop"
	bumpReasonError   = "Error"
)
