package rollout

import (
	"fmt"
	"regexp"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// The kinds of a gate's ledger rows: a round, and the round that passed
// the gate.
const (
	eventGateRound  = "gate-round"
	eventGatePassed = "gate-passed"
)

func gateRow(passed bool) string {
	if passed {
		return eventGatePassed
	}
	return eventGateRound
}

func gateReason(passed bool, batch, round int, why string) string {
	if passed {
		return fmt.Sprintf("batch %d healthy after %d rounds: %s", batch, round, why)
	}
	return fmt.Sprintf("batch %d round %d: %s", batch, round, why)
}

// gateRoundRow reads a gate row's batch and round from its reason.
var gateRoundRow = regexp.MustCompile(`^batch (\d+) (?:round (\d+)|healthy after (\d+) rounds)`)

// gateRoundOf names the round a gate row judged ("2/3": batch 2, round
// 3), "" for any other row.
func gateRoundOf(e ledger.RolloutEvent) string {
	if e.Kind != eventGateRound && e.Kind != eventGatePassed {
		return ""
	}
	m := gateRoundRow.FindStringSubmatch(e.Reason)
	if m == nil {
		return ""
	}
	return m[1] + "/" + m[2] + m[3]
}

// sameDecision says whether the ledger's row at a point of the rollout
// decided what e decides there: the same round of a gate (its verdict
// may differ: the recorded one stands), or the same event.
func sameDecision(got, e ledger.RolloutEvent) bool {
	if got.Stage != e.Stage {
		return false
	}
	if round := gateRoundOf(e); round != "" {
		return gateRoundOf(got) == round
	}
	return got.Kind == e.Kind && got.Reason == e.Reason
}
