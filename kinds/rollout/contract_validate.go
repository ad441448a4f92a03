package rollout

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/kinds"
)

var planName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// Validate checks a plan fully before it starts: names, kinds, concurrency,
// budgets, each update's input (through its kind), duplicate targets, and
// exclusive groups that name targets outside their stage.
func (in RolloutInput) Validate() error { return in.ValidateDecoded(nil) }

// ValidateDecoded is Validate for a plan whose reader decoded the updates
// itself: stages in undecoded lost updates that did not decode (already
// reported), so the checks that depend on a stage's updates are skipped
// there rather than reported as wrong follow-ons ("no updates"); a reader
// cannot decode the updates of a stage of an unknown kind either.
func (in RolloutInput) ValidateDecoded(undecoded map[int]bool) error {
	var errs []error
	if !planName.MatchString(in.Name) {
		errs = append(errs, fmt.Errorf("plan name %q must be lower-case letters, digits, '.', '_' or '-' (at most 63)", in.Name))
	}
	if len(in.Stages) == 0 {
		errs = append(errs, errors.New("plan has no stages"))
	}
	stages := map[string]bool{}
	total := 0
	for i, st := range in.Stages {
		where := fmt.Sprintf("stages[%d] (%s)", i, st.Name)
		if st.Name == "" || stages[st.Name] {
			errs = append(errs, fmt.Errorf("%s: stage names must be present and unique", where))
		}
		stages[st.Name] = true
		partial := undecoded[i]
		if _, ok := kinds.Kinds[st.Kind]; !ok {
			errs = append(errs, fmt.Errorf("%s: unknown or unavailable kind %q", where, st.Kind))
		}
		if st.Concurrency < 1 {
			errs = append(errs, fmt.Errorf("%s: concurrency must be >= 1", where))
		}
		if st.ApprovalPolicy != nil && !st.Approval {
			errs = append(errs, fmt.Errorf("%s: an approval policy needs a gate (approval: true)", where))
		} else if st.ApprovalPolicy != nil {
			if err := st.ApprovalPolicy.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("%s: approval: %w", where, err))
			}
		}
		if st.FailureBudget < 0 {
			errs = append(errs, fmt.Errorf("%s: failureBudget must be >= 0", where))
		}
		for _, e := range st.validateGates() {
			errs = append(errs, fmt.Errorf("%s: %w", where, e))
		}
		if len(st.Updates) == 0 && !partial {
			errs = append(errs, fmt.Errorf("%s: no updates", where))
		}
		total += len(st.Updates)
		targets := map[string]bool{}
		for j, u := range st.Updates {
			if u.Target == "" || len(u.Input) == 0 {
				errs = append(errs, fmt.Errorf("%s updates[%d]: target and input are required", where, j))
			}
			if targets[u.Target] {
				errs = append(errs, fmt.Errorf("%s updates[%d]: target %s appears twice", where, j, u.Target))
			}
			targets[u.Target] = true
		}
		grouped := map[string]bool{}
		for g, group := range st.Exclusive {
			if len(group) < 2 {
				errs = append(errs, fmt.Errorf("%s exclusive[%d]: a group needs at least two targets", where, g))
			}
			for _, t := range group {
				if !targets[t] && !partial {
					errs = append(errs, fmt.Errorf("%s exclusive[%d]: %s is not a target of this stage", where, g, t))
				}
				if grouped[t] {
					errs = append(errs, fmt.Errorf("%s exclusive[%d]: %s is in two groups", where, g, t))
				}
				grouped[t] = true
			}
		}
	}
	if in.Calendar != nil {
		errs = append(errs, flatten(in.Calendar.Validate())...)
	}
	if in.Notify != nil {
		errs = append(errs, flatten(in.Notify.Validate())...)
	}
	if total > maxRolloutUpdates {
		errs = append(errs, fmt.Errorf("plan has %d updates; at most %d per rollout (split it, or use a fan-out kind)", total, maxRolloutUpdates))
	}
	return errors.Join(errs...)
}

// StartDigest is the digest `starter rollout` signs and the rollout
// verifies: approval.DigestJSON of the plan without its signature.
func (in RolloutInput) StartDigest() (string, error) {
	in.StartSignature = nil
	// The digest of a struct's JSON depends on its values alone (json
	// sorts map keys; workflowcheck flags the reflection it uses).
	//workflowcheck:ignore
	return approval.DigestJSON(in)
}

// validateGates checks a stage's gate, ramp, threshold and calendar fields: one error each.
func (st Stage) validateGates() []error {
	var errs []error
	if st.Health != nil {
		errs = append(errs, flatten(st.Health.Validate())...)
	}
	for i, t := range st.Thresholds {
		for _, e := range flatten(t.Validate()) {
			errs = append(errs, fmt.Errorf("thresholds[%d]: %w", i, e))
		}
	}
	if st.Ramp != nil {
		errs = append(errs, flatten(st.Ramp.Validate(st.Concurrency))...)
	}
	return errs
}
