package rollout

import (
	"fmt"
	"strings"
)

// StartSummary is the rollout's static summary in the Web UI (one line,
// fixed when it starts: Temporal has no way to change it later, so it says
// where the gates are; the current details say when the rollout waits at
// one).
func (in RolloutInput) StartSummary() string {
	var names, gates []string
	for _, st := range in.Stages {
		names = append(names, st.Name)
		if st.Approval {
			gates = append(gates, st.Name)
		}
	}
	s := fmt.Sprintf("rollout %s: %s (%s)", in.Name, plural(len(in.Stages), "stage"), strings.Join(names, ", "))
	if len(gates) > 0 {
		s += "; awaits approval before " + strings.Join(gates, ", ")
	}
	return s
}

// StartDetails is the rollout's static details (Markdown): its stages and
// how a gate is approved.
func (in RolloutInput) StartDetails() string {
	var b strings.Builder
	for _, st := range in.Stages {
		gate := ""
		if st.Approval {
			gate = " — **approval gate**"
		}
		fmt.Fprintf(&b, "- stage %s: %s, %d at a time%s\n", st.Name, plural(len(st.Updates), string(st.Kind)+" update"), st.Concurrency, gate)
	}
	id := RolloutWorkflowID(in.Name)
	fmt.Fprintf(&b, "\nAt a gate the current details show \"awaiting approval\", the stage's plan and its digest. "+
		"Read it with `starter status %s`, approve with `starter approve %s --plan-digest DIGEST --reason \"…\"`.\n", id, id)
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
