package kinds

import (
	"strings"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// rolloutType is the rollout's workflow type. The rollout honours
// pause/resume too, but it is not in Kinds: a plan cannot name it, and the
// catalogue never imports it (rollout.Registrations adds it to a worker).
// Its targets are plan/<name>.
const rolloutType, rolloutTargetClass = "Rollout", "plan"

// PausableType reports whether workflows of this type honour pause/resume:
// a rollout, and the kinds the catalogue says are pausable.
func PausableType(workflowType string) bool {
	if workflowType == rolloutType {
		return true
	}
	for _, k := range Kinds {
		if k.Pausable && workflowName(k.Workflow) == workflowType {
			return true
		}
	}
	return false
}

// PausableID tells from a workflow ID alone whether that workflow honours
// pause/resume: a rollout (plan/<name>) and the parent of a pausable kind
// (dc/<agents> for an agent install: the class its input's Target gives)
// do; a pausable kind's children (IDs under the parent's) and every other
// kind do not. known is false when the ID is not a fleetsaga update ID (ask
// Temporal for its type instead).
func PausableID(workflowID string) (pausable, known bool) {
	kind, target, ok := workflows.ParseWorkflowID(workflowID)
	if !ok {
		return false, false
	}
	if kind == workflows.KindRollout {
		return isParent(target, rolloutTargetClass), true
	}
	info, ok := Kinds[kind]
	if !ok {
		return false, false
	}
	if !info.Pausable {
		return false, true
	}
	class, _, _ := strings.Cut(info.NewInput().Target(), "/")
	return isParent(target, class), true
}

// isParent: a parent's target is "<class>/<name>"; its children's IDs add
// segments to the parent's.
func isParent(target, class string) bool {
	name, ok := strings.CutPrefix(target, class+"/")
	return ok && name != "" && !strings.Contains(name, "/")
}
