// Package workflows is the library every kind's workflow shares; the
// workflows themselves live in kinds/ (a package per kind). It holds the
// update lifecycle (lifecycle.go), the saga helper (saga.go), ledger calls
// and derived attempt IDs, pause and resume, progress and phases, the dry
// run's row helpers, and this file's contract: the task queue, kinds,
// workflow IDs, search attributes and retry policies. All of it is
// workflow code, deterministic: I/O happens in activities.
package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/approval"
)

// TaskQueue is the default task queue the workers poll.
const TaskQueue = "fleetsaga"

// ProgressQuery is the query every fleetsaga workflow answers.
const ProgressQuery = "progress"

// Kind names an update kind. It is the first part of a workflow ID and the
// value of the FleetsagaKind search attribute.
type Kind string

const (
	KindSPFirmware    Kind = "sp-firmware"
	KindHostFlash     Kind = "host-flash"
	KindHostRecovery  Kind = "host-recovery"
	KindAgentInstall  Kind = "agent-install"
	KindAgentDrift    Kind = "agent-drift"
	KindBootImageBump Kind = "bootimage-bump"
	KindZoneExpunge   Kind = "zone-expunge"
	KindRollout       Kind = "rollout"
)

// WorkflowID derives an update's workflow ID from its kind and target, so
// Temporal refuses a second concurrent start of the same update.
func WorkflowID(kind Kind, target string) string {
	return "fleetsaga/" + string(kind) + "/" + target
}

// ParseWorkflowID splits a fleetsaga workflow ID into kind and target.
func ParseWorkflowID(id string) (Kind, string, bool) {
	rest, ok := strings.CutPrefix(id, "fleetsaga/")
	if !ok {
		return "", "", false
	}
	kind, target, ok := strings.Cut(rest, "/")
	return Kind(kind), target, ok && kind != "" && target != ""
}

// Search attributes (Keyword: SQL visibility gives ten slots; keep secrets
// out of them). The Web UI filters on these, e.g.
// FleetsagaKind="sp-firmware" AND FleetsagaState="running".
var (
	SAKind     = temporal.NewSearchAttributeKeyKeyword("FleetsagaKind")
	SATarget   = temporal.NewSearchAttributeKeyKeyword("FleetsagaTarget")
	SAArtifact = temporal.NewSearchAttributeKeyKeyword("FleetsagaArtifact")
	SAState    = temporal.NewSearchAttributeKeyKeyword("FleetsagaState")
	SAPhase    = temporal.NewSearchAttributeKeyKeyword("FleetsagaPhase")
	// SARollout names the rollout plan a child update belongs to.
	SARollout = temporal.NewSearchAttributeKeyKeyword("FleetsagaRollout")
)

// SearchAttributes lists every search attribute fleetsaga registers.
func SearchAttributes() []temporal.SearchAttributeKeyKeyword {
	return []temporal.SearchAttributeKeyKeyword{SAKind, SATarget, SAArtifact, SAState, SAPhase, SARollout}
}

// StartAttributes are the search attributes a starter sets on a new update.
// A rollout carries its own plan name as FleetsagaRollout too, so the one
// filter that lists its children lists it (and its gate) with them.
func StartAttributes(kind Kind, target, artifact string) temporal.SearchAttributes {
	attrs := []temporal.SearchAttributeUpdate{
		SAKind.ValueSet(string(kind)),
		SATarget.ValueSet(target),
		SAArtifact.ValueSet(artifact),
		SAState.ValueSet(string(StateRunning)),
	}
	if name, isRollout := strings.CutPrefix(target, "plan/"); isRollout && kind == KindRollout {
		attrs = append(attrs, SARollout.ValueSet(name))
	}
	return temporal.NewSearchAttributes(attrs...)
}

// State is an update's state as operators see it (search attribute and
// progress query).
type State string

const (
	StateRunning   State = "running"
	StatePaused    State = "paused"
	StateCompleted State = "completed"
	StateFailed    State = "failed"
	StateCancelled State = "cancelled"
)

// SetSearchState publishes the state and phase to the Web UI: the phase,
// one of a closed set, as the FleetsagaPhase search attribute; free text
// (detail) only in the workflow's current details. Failing to upsert must
// not fail the update, so the error is only logged.
func SetSearchState(ctx workflow.Context, state State, phase Phase, detail ...string) {
	setCurrentDetails(ctx, state, phase, detail...)
	attrs := []temporal.SearchAttributeUpdate{SAState.ValueSet(string(state))}
	if phase.Known() {
		attrs = append(attrs, SAPhase.ValueSet(string(phase)))
	} else {
		// A bug: an unlisted phase would put free text in a Keyword.
		workflow.GetLogger(ctx).Error("phase is not in the closed set: not published", "phase", phase)
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, attrs...); err != nil {
		workflow.GetLogger(ctx).Warn("upsert search attributes failed", "error", err)
	}
}

// setCurrentDetails shows state, phase and detail in the Web UI's current
// details (no history event).
func setCurrentDetails(ctx workflow.Context, state State, phase Phase, detail ...string) {
	text := fmt.Sprintf("**%s** — %s", state, phase)
	for _, d := range detail {
		if d != "" {
			text += ": " + d
		}
	}
	workflow.SetCurrentDetails(ctx, text)
}

// Retry policies, chosen per kind of activity.
var (
	// LedgerRetry: the database may restart; keep trying for a long while.
	LedgerRetry = &temporal.RetryPolicy{
		InitialInterval:    500 * time.Millisecond,
		BackoffCoefficient: 2,
		MaximumInterval:    30 * time.Second,
	}
	// DeviceRetry: device/API calls; non-retryable errors are typed by the
	// activities (the catalogue: package failure).
	DeviceRetry = &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    time.Minute,
	}
)

// LedgerOptions are the activity options for ledger writes.
func LedgerOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// A ledger write takes milliseconds; a short timeout bounds how long
		// a write lost with a dead worker waits before it is retried.
		StartToCloseTimeout:    10 * time.Second,
		ScheduleToCloseTimeout: 30 * time.Minute,
		RetryPolicy:            LedgerRetry,
	})
}

// Operator controls. Fan-outs and rollouts honour pause/resume (running steps
// finish, no new ones start); approve is an update handler on rollouts.
const (
	PauseSignal   = "pause"
	ResumeSignal  = "resume"
	ApproveUpdate = "approve"
)

// Approval is the argument of the approve update: who approved and why
// (recorded in the ledger).
type Approval struct {
	By     string `json:"by"`
	Reason string `json:"reason"`
	// Stage and PlanDigest are the gate's stage and plan the approver
	// looked at (the digest's first 12 characters or more): an approval
	// without a digest, or for another stage or plan, is refused.
	Stage      string `json:"stage,omitempty"`
	PlanDigest string `json:"planDigest,omitempty"`
	// Signed is the approver's signature over the gate's stage and full
	// digest (starter approve signs with the operator's key): the worker's
	// VerifyApproval checks it. nil: unsigned, accepted only by a worker
	// with no keyring (README, "Approvals").
	Signed *approval.Signed `json:"signed,omitempty"`
}

// UpdateInput is what every update kind's input provides, so plans and the
// starter can validate and start any kind by name.
type UpdateInput interface {
	// Target is the canonical target (ledger target, search attribute).
	Target() string
	// ArtifactVersion is what the update installs ("" when nothing).
	ArtifactVersion() string
	// Validate checks the input without I/O.
	Validate() error
}

// ArtifactDigest is one image an update delivers: its place in the input
// ("phase1"), its version and SHA-256 (hex, lower case), which the
// update checks the bytes against before delivering them.
type ArtifactDigest struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
}

// Delivers is an UpdateInput that delivers images: an approval of its
// plan binds their SHA-256s, not only their version labels.
type Delivers interface {
	Artifacts() []ArtifactDigest
}

// Continues is an UpdateInput with fields only its own workflow writes:
// the state one run hands the next at continue-as-new. A plan or a start
// that sets them would hand a first run a later run's state (a plan it
// never made), so they refuse it (CheckStart).
type Continues interface {
	// ValidateStart is nil unless the input holds such state.
	ValidateStart() error
}

// CheckStart refuses an input, given by a plan or an operator, that holds
// state only its own workflow writes (Continues); nil for every other.
func CheckStart(in any) error {
	if c, ok := in.(Continues); ok {
		return c.ValidateStart()
	}
	return nil
}
