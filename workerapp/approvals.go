package workerapp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// CheckApprovalMinimum refuses a least policy naming a kind the
// catalogue does not know: a mistyped kind would gate nothing.
func CheckApprovalMinimum(m approval.Minimum) error {
	for _, k := range m.GatedKinds {
		if _, ok := kinds.Kinds[workflows.Kind(k)]; !ok {
			var known []string
			for name := range kinds.Kinds {
				known = append(known, string(name))
			}
			slices.Sort(known)
			return fmt.Errorf("--approval-gated-kinds: no kind %q (kinds: %s)", k, strings.Join(known, ", "))
		}
	}
	return nil
}
