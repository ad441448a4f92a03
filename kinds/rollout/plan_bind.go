package rollout

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// boundDigestVersion marks the runs whose plan digest binds what each
// update will really do (StageBinding) and that refuse a plan whose shown
// target is not its input's. A run started before it keeps the rows-only
// digest its gate already showed, so an approval signed for it still
// opens the gate. The DefaultVersion branch may go once no rollout
// started before it can be open.
const boundDigestVersion = "plan-digest-binds-inputs"

// StageBinding is what an approval of a stage binds beyond its rows:
// for each update the target its input acts on, the images it delivers
// by SHA-256 and the hash of the input the child receives, and the
// stage's safety settings (its concurrency, exclusive groups and gate
// are StagePlan's own fields).
type StageBinding struct {
	Updates        []UpdateBinding  `json:"updates"`
	FailureBudget  int              `json:"failureBudget"`
	ApprovalPolicy *approval.Policy `json:"approvalPolicy,omitempty"`
	Health         *HealthGate      `json:"health,omitempty"`
	Thresholds     []Threshold      `json:"thresholds,omitempty"`
	Ramp           *Ramp            `json:"ramp,omitempty"`
}

// UpdateBinding is one update as its child will run it.
type UpdateBinding struct {
	Order int `json:"order"`
	// Target is derived from the input ("" when the input does not
	// decode: the child would fail on it too).
	Target    string                     `json:"target"`
	Artifacts []workflows.ArtifactDigest `json:"artifacts,omitempty"`
	// Input is the SHA-256 of the input's bytes (compacted JSON).
	Input string `json:"input"`
}

// decodeInput decodes u's input into its kind's input type.
func decodeInput(kind workflows.Kind, u PlanUpdate) (workflows.UpdateInput, error) {
	info, ok := kinds.Kinds[kind]
	if !ok {
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	in := info.NewInput()
	// Decoding the plan's input into a fresh value depends on the bytes
	// alone (workflowcheck flags the reflection json uses).
	//workflowcheck:ignore
	if err := json.Unmarshal(u.Input, in); err != nil {
		return nil, err
	}
	return in, nil
}

// bindStage is st's binding: every update as its input reads.
func bindStage(st Stage) *StageBinding {
	b := &StageBinding{FailureBudget: st.FailureBudget, ApprovalPolicy: st.ApprovalPolicy, Health: st.Health, Thresholds: st.Thresholds, Ramp: st.Ramp}
	for i, u := range st.Updates {
		ub := UpdateBinding{Order: i + 1, Input: inputSum(u.Input)}
		if in, err := decodeInput(st.Kind, u); err == nil {
			ub.Target = in.Target()
			if d, ok := in.(workflows.Delivers); ok {
				for _, a := range d.Artifacts() {
					a.SHA256 = strings.ToLower(a.SHA256)
					ub.Artifacts = append(ub.Artifacts, a)
				}
			}
		}
		b.Updates = append(b.Updates, ub)
	}
	return b
}

// inputSum is the SHA-256 of an input's compacted JSON (whitespace aside,
// the bytes the child decodes).
func inputSum(raw json.RawMessage) string {
	var c bytes.Buffer
	if json.Compact(&c, raw) != nil {
		c.Reset()
		c.Write(raw)
	}
	h := sha256.Sum256(c.Bytes())
	return hex.EncodeToString(h[:])
}

// BoundDigest is the SHA-256 of the stage's rows and of everything it
// binds (StageBinding, concurrency, exclusive groups, gate): an approval
// of it opens no gate of a plan that differs in any of them.
func (sp StagePlan) BoundDigest() string {
	h := sha256.New()
	h.Write([]byte("fleetsaga stage plan, bound\n"))
	writeRows(h, sp.Rows)
	settings := struct {
		Kind        workflows.Kind `json:"kind"`
		Concurrency int            `json:"concurrency"`
		Exclusive   [][]string     `json:"exclusive"`
		Approval    bool           `json:"approval"`
		Binding     *StageBinding  `json:"binding"`
	}{sp.Kind, sp.Concurrency, sp.Exclusive, sp.Approval, sp.Binding}
	// The JSON of a struct depends on its values alone (json sorts map
	// keys; workflowcheck flags the reflection it uses).
	//workflowcheck:ignore
	b, err := json.Marshal(settings)
	if err != nil {
		b = []byte(err.Error()) // values decoded from JSON always encode
	}
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// Bound: sp's digest is the bound one of its rows and binding, so an
// approval of it binds the inputs (a plan from a build before binding, or
// one whose binding does not hash to its digest, is not).
func (sp StagePlan) Bound() bool { return sp.Binding != nil && sp.BoundDigest() == sp.Digest }

// CheckTargets refuses a plan update whose target, the one its plan rows
// and the approver show, is not the target its input makes the update act
// on. An input that does not decode is left to the update (it fails on it).
func (in RolloutInput) CheckTargets() error {
	return in.eachUpdate(func(st Stage, i int, u PlanUpdate, dec workflows.UpdateInput) error {
		if got := dec.Target(); got != u.Target {
			return fmt.Errorf("stage %s updates[%d]: shown as %s, but its input acts on %s", st.Name, i, u.Target, got)
		}
		return nil
	})
}

// eachUpdate runs check on every update whose input decodes, joining what
// it refuses.
func (in RolloutInput) eachUpdate(check func(st Stage, i int, u PlanUpdate, dec workflows.UpdateInput) error) error {
	var errs []error
	for _, st := range in.Stages {
		for i, u := range st.Updates {
			if dec, err := decodeInput(st.Kind, u); err == nil {
				errs = append(errs, check(st, i, u, dec))
			}
		}
	}
	return errors.Join(errs...)
}

// planRefused is a refusal of the plan as the workflow's typed error.
func planRefused(err error, errType string) error {
	if err == nil {
		return nil
	}
	return temporal.NewNonRetryableApplicationError("plan refused: "+strings.ReplaceAll(err.Error(), "\n", "; "), errType, nil)
}

// refuseMismatchedTargets is CheckTargets as the workflow's typed error.
func (in RolloutInput) refuseMismatchedTargets() error {
	return planRefused(in.CheckTargets(), failure.PlanTargetMismatch)
}

// BoundLines are what the binding adds to a plan's rows, for the
// approver to read: the stage's safety settings, then each update's
// target as its input reads and its images' full SHA-256s. None for a
// plan without a binding.
func (sp StagePlan) BoundLines() []string {
	b := sp.Binding
	if b == nil {
		return nil
	}
	settings := []string{fmt.Sprintf("concurrency %d", sp.Concurrency), fmt.Sprintf("failure budget %d", b.FailureBudget)}
	if b.ApprovalPolicy != nil {
		settings = append(settings, fmt.Sprintf("gate needs %d approvers", max(b.ApprovalPolicy.Approvers, 1)))
	}
	if b.Health != nil {
		settings = append(settings, fmt.Sprintf("health gate of %d checks, bake %s", len(b.Health.Checks), b.Health.Bake))
	}
	for _, t := range b.Thresholds {
		settings = append(settings, fmt.Sprintf("abort over %g%% %s (from %d ended)", t.Percent, t.Class, t.Minimum))
	}
	if b.Ramp != nil {
		settings = append(settings, fmt.Sprintf("ramp from %d ×%g", b.Ramp.Start, b.Ramp.Factor))
	}
	out := []string{"bound: " + strings.Join(settings, ", ")}
	for _, u := range b.Updates {
		line := fmt.Sprintf("%d %s: input sha256 %s", u.Order, dashEmpty(u.Target), u.Input[:12])
		for _, a := range u.Artifacts {
			line += fmt.Sprintf(", %s %s sha256 %s", a.Name, a.Version, a.SHA256)
		}
		out = append(out, line)
	}
	return out
}
