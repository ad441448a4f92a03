package workflows

// Phase names the step an update is in. Phases are a closed set: they are
// published as the FleetsagaPhase Keyword search attribute, which the Web UI
// and `starter list` filter on, so free text (hostnames, counts, durations)
// never goes there; it goes to the progress query's Message and the
// workflow's current details instead (setSearchState's detail).
type Phase string

// Phases shared by the fan-outs and the rollout. Each device kind names its
// own phases in its package's contract and adds them with DeclarePhases.
const (
	PhaseStarting         Phase = "starting"
	PhaseDone             Phase = "done"
	PhaseAwaitingApproval Phase = "awaiting-approval" // rollout: at a gate (detail: the stage)
	PhaseRunningStage     Phase = "running-stage"     // rollout: a stage's updates run (detail: the stage)
	PhasePlanning         Phase = "planning"          // agent install: validate and store the plan
	PhaseInstalling       Phase = "installing"        // agent install / drift repair (detail: stragglers, agents)
	PhaseBudgetExceeded   Phase = "failure-budget-exceeded"
	PhaseContinuingAsNew  Phase = "continuing-as-new"
	PhaseRecordingIntent  Phase = "recording-intent"
	PhaseWaitingForTarget Phase = "waiting-for-target" // another update holds the ledger target
	PhaseCheckingServer   Phase = "checking-server"
	PhaseRecordingAgents  Phase = "recording-agents" // refresh CNAPI, move the SAPI intent
	PhaseCheckingDrift    Phase = "checking"
	PhaseRepairingIntents Phase = "repairing-intents"
	PhaseCheckingAgain    Phase = "checking-again"
	PhaseRemovingOrphans  Phase = "removing-orphans" // drift repair: SAPI instances of deleted servers
)

// knownPhases is the closed set setSearchState publishes.
var knownPhases = map[Phase]bool{}

func init() {
	for _, p := range []Phase{
		PhaseStarting, PhaseDone, PhaseAwaitingApproval, PhaseRunningStage, PhasePlanning, PhaseInstalling,
		PhaseBudgetExceeded, PhaseContinuingAsNew, PhaseRecordingIntent, PhaseWaitingForTarget, PhaseCheckingServer,
		PhaseRecordingAgents, PhaseCheckingDrift, PhaseRepairingIntents, PhaseCheckingAgain, PhaseRemovingOrphans,
	} {
		knownPhases[p] = true
	}
}

// Known reports whether p belongs to the closed set of phases.
func (p Phase) Known() bool { return knownPhases[p] }

// Phases lists every phase (for documentation and tests).
func Phases() []Phase {
	out := make([]Phase, 0, len(knownPhases))
	for p := range knownPhases {
		out = append(out, p)
	}
	return out
}

// filteredPhases are the phases an operator filters by: the long waits
// (on a device, another update, an approval, a fleet of children) where an
// update may sit for minutes or hours. Only they (and every change of
// state) are published as the search attribute (each upsert
// costs an event and a visibility write); a
// short phase (a precheck, a ledger write, a commit) shows in the progress
// query and the current details, and the attribute keeps the last long one.
var filteredPhases = map[Phase]bool{
	PhaseAwaitingApproval: true, PhaseRunningStage: true, PhasePlanning: true, PhaseInstalling: true,
	PhaseBudgetExceeded: true, PhaseWaitingForTarget: true, PhaseCheckingDrift: true,
}

// Filtered reports whether p is a phase operators filter by.
func (p Phase) Filtered() bool { return filteredPhases[p] }

// DeclarePhases adds a kind's phases to the closed set; filtered are the
// ones operators filter by (its long waits). Each kind's package declares
// its phases once, in an init beside their constants.
func DeclarePhases(known []Phase, filtered ...Phase) {
	for _, p := range known {
		knownPhases[p] = true
	}
	for _, p := range filtered {
		filteredPhases[p] = true
	}
}
