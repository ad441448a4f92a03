package plan

import (
	"bytes"
	"encoding/json"
	"fmt"

	yaml "go.yaml.in/yaml/v3"

	"github.com/fleetsaga/fleetsaga/approval"
)

// ApprovalSpec is a stage's `approval:`: `true` (a gate under the plan's
// policy, by default one approver, any allowed signer), `false` (no
// gate), or a policy of its own, `{approvers: 2, fourEyes: true,
// allowed: [alice, group:sp-admins]}`, which is a gate.
type ApprovalSpec struct {
	Gate   bool
	Policy *approval.Policy // nil: the plan's
}

// UnmarshalJSON reads true, false or a policy.
func (a *ApprovalSpec) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch string(b) {
	case "null", "false":
		*a = ApprovalSpec{}
		return nil
	case "true":
		*a = ApprovalSpec{Gate: true}
		return nil
	}
	p, err := decodePolicy(b)
	if err != nil {
		return err
	}
	*a = ApprovalSpec{Gate: true, Policy: p}
	return nil
}

// MarshalJSON writes what UnmarshalJSON reads.
func (a ApprovalSpec) MarshalJSON() ([]byte, error) {
	if a.Policy != nil {
		return json.Marshal(a.Policy)
	}
	return json.Marshal(a.Gate)
}

func decodePolicy(b []byte) (*approval.Policy, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p approval.Policy
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("approval: want true, false or {approvers: N, fourEyes: true|false, allowed: [principal, group:NAME]}: %v", err)
	}
	return &p, nil
}

// stagePolicies resolves each stage's approval policy: nil for a stage
// with no gate, else the stage's own policy or the plan's.
func stagePolicies(f File, pos *positions) ([]*approval.Policy, []error) {
	var errs []error
	if f.Approval != nil {
		if err := f.Approval.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("approval: %w", err))
		}
	}
	out := make([]*approval.Policy, len(f.Stages))
	gates := 0
	for i, st := range f.Stages {
		if !st.Approval.Gate {
			continue
		}
		gates++
		p := st.Approval.Policy
		if p == nil {
			p = f.Approval
		}
		if p == nil {
			p = &approval.Policy{Approvers: 1}
		}
		if p.Approvers == 0 {
			c := *p
			c.Approvers = 1
			p = &c
		}
		if st.Approval.Policy != nil {
			if err := p.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("%s: approval: %w", pos.stage(i, pos.keyLine(i, "approval")), err))
			}
		}
		out[i] = p
	}
	if f.Approval != nil && gates == 0 {
		errs = append(errs, fmt.Errorf("approval: the plan gives an approval policy, but no stage has a gate (approval: true)"))
	}
	return out, errs
}

// keyLine is the line of stage i's own key (0: unknown).
func (p *positions) keyLine(i int, key string) int {
	if p == nil || i >= len(p.stages) || p.stages[i].node.Kind != yaml.MappingNode {
		return 0
	}
	m := p.stages[i].node
	for j := 0; j+1 < len(m.Content); j += 2 {
		if m.Content[j].Value == key {
			return m.Content[j].Line
		}
	}
	return 0
}
