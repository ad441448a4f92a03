// Package plan reads rollout plans: YAML files that list stages of updates.
// A plan is validated fully (schema, kinds, every update's input, targets,
// exclusive groups) before anything starts.
package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"

	"sigs.k8s.io/yaml"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// File is the YAML shape of a plan. Each update is its kind's input.
type File struct {
	Name string `json:"name"`
	// Approval is the policy of every stage whose approval is `true`
	// (default: one approver, any allowed signer).
	Approval *approval.Policy `json:"approval,omitempty"`
	Stages   []Stage          `json:"stages"`
	// Calendar: maintenance windows and freezes.
	Calendar *rollout.Calendar `json:"calendar,omitempty"`
	// Notify: the worker's webhooks to tell of the rollout's events.
	Notify *rollout.Notify `json:"notify,omitempty"`
}

// Stage is one stage in the YAML: the rollout's own Stage, but for the two
// keys a plan writes in a shape of its own: approval (true, false or a
// policy, which give the rollout's Approval and ApprovalPolicy) and
// updates (each its kind's input, which gives a PlanUpdate).
type Stage struct {
	rollout.Stage
	Approval ApprovalSpec      `json:"approval"`
	Updates  []json.RawMessage `json:"updates"`
}

// derivedKeys are the rollout Stage's keys a plan does not write: the
// stage's approval gives them.
var derivedKeys = map[string]bool{jsonKey[rollout.Stage]("ApprovalPolicy"): true}

// Load reads and validates a plan file.
func Load(path string) (rollout.RolloutInput, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return rollout.RolloutInput{}, fmt.Errorf("read plan: %w", err)
	}
	return ParseFile(path, b)
}

// Parse decodes and validates a plan read from elsewhere than a file.
func Parse(b []byte) (rollout.RolloutInput, error) { return ParseFile("", b) }

// ParseFile decodes and validates a plan read from file; each error names
// the file, line and stage to fix.
func ParseFile(file string, b []byte) (rollout.RolloutInput, error) {
	in, _, err := ParseFileWithPolicies(file, b)
	return in, err
}

// ParseFileWithPolicies is ParseFile that also returns each stage's
// approval policy, by stage index: nil for a stage without a gate.
func ParseFileWithPolicies(file string, b []byte) (rollout.RolloutInput, []*approval.Policy, error) {
	pos := readPositions(file, b)
	if errs := pos.unknownKeys(b); len(errs) > 0 {
		return rollout.RolloutInput{}, nil, fmt.Errorf("invalid plan: %w", errors.Join(errs...))
	}
	f, err := decodeFile(b)
	if err != nil {
		return rollout.RolloutInput{}, nil, fmt.Errorf("plan: %w", err)
	}
	in := rollout.RolloutInput{Name: f.Name, Calendar: f.Calendar, Notify: f.Notify}
	policies, errs := stagePolicies(f, pos)
	// Stages whose updates did not all decode: the error is reported
	// once, here (or, for an unknown kind, by Validate), with no follow-on.
	undecoded := map[int]bool{}
	for i, st := range f.Stages {
		out := st.Stage
		out.Approval, out.ApprovalPolicy, out.Updates = st.Approval.Gate, policies[i], nil
		info, known := kinds.Kinds[st.Kind]
		undecoded[i] = !known
		for j, raw := range st.Updates {
			if !known {
				break // reported by RolloutInput.Validate
			}
			u, err := decodeUpdate(info, raw)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", pos.update(i, j, unknownField(err)), err))
				undecoded[i] = true
				continue
			}
			out.Updates = append(out.Updates, u)
		}
		in.Stages = append(in.Stages, out)
	}
	if err := in.ValidateDecoded(undecoded); err != nil {
		errs = append(errs, pos.locateAll(err)...)
	}
	if err := errors.Join(errs...); err != nil {
		return in, nil, fmt.Errorf("invalid plan: %w", err)
	}
	return in, policies, nil
}

// decodeFile decodes a plan strictly (duplicate and unknown keys are
// errors), with its own durations (bake, interval, a window's duration)
// written as operators write them ("90s", "4h").
func decodeFile(b []byte) (File, error) {
	var f File
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		return f, err
	}
	var generic any
	gdec := json.NewDecoder(bytes.NewReader(j))
	gdec.UseNumber()
	if err := gdec.Decode(&generic); err != nil {
		return f, err
	}
	if generic, err = durationsToNanos(generic, reflect.TypeOf(f)); err != nil {
		return f, err
	}
	if j, err = json.Marshal(generic); err != nil {
		return f, err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	err = dec.Decode(&f)
	return f, err
}

// decodeUpdate decodes one update strictly into its kind's input and
// validates it.
func decodeUpdate(info kinds.KindInfo, raw json.RawMessage) (rollout.PlanUpdate, error) {
	input := info.NewInput()
	var generic any
	gdec := json.NewDecoder(bytes.NewReader(raw))
	gdec.UseNumber()
	if err := gdec.Decode(&generic); err != nil {
		return rollout.PlanUpdate{}, fmt.Errorf("bad input: %v", err)
	}
	generic, err := durationsToNanos(generic, reflect.TypeOf(input))
	if err != nil {
		return rollout.PlanUpdate{}, fmt.Errorf("bad input: %v", err)
	}
	if raw, err = json.Marshal(generic); err != nil {
		return rollout.PlanUpdate{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(input); err != nil {
		return rollout.PlanUpdate{}, fmt.Errorf("bad input: %v", err)
	}
	if err := input.Validate(); err != nil {
		return rollout.PlanUpdate{}, err
	}
	if err := workflows.CheckStart(input); err != nil {
		return rollout.PlanUpdate{}, err
	}
	canonical, err := json.Marshal(input)
	if err != nil {
		return rollout.PlanUpdate{}, err
	}
	return rollout.PlanUpdate{Target: input.Target(), Artifact: input.ArtifactVersion(), Input: canonical}, nil
}
