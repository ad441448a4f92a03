package failure

import "strings"

// passing are the types whose cause may pass by itself: a busy target, a
// device or service that did not answer in time, a target that moved. The
// same update run again later can succeed. Every other type needs a change
// first (the input, the artifact, the device, the configuration, an
// owner's consent): running it again gives the same answer.
var passing = map[string]bool{
	TargetBusy:                true,
	ArtifactUnavailable:       true,
	HostBootTimeout:           true,
	Phase2WriteTimeout:        true,
	AttemptsExhausted:         true,
	ServerNotRunning:          true,
	AgentTaskFailed:           true,
	BootImagePrecondition:     true,
	ZoneRemovalTimedOut:       true,
	InventoryProofTimedOut:    true,
	OwnerCleanupTimedOut:      true,
	NoLiveNexus:               true,
	SagasRemain:               true,
	ConfigChangedUnderExpunge: true,
	TooManyRebases:            true,
	TargetMovedTooOften:       true,
	OwnedByNexus:              true,
	// Internal steps a workflow takes itself; should one end a run, the
	// next run starts afresh.
	StaleGeneration: true,
	OwnerGone:       true,
	AttemptEnded:    true,
	// A fan-out's budget: each failed update says whether it may pass.
	FailureBudget:    true,
	FailureThreshold: true,
	// The next window opens by itself.
	WindowClosed: true,
}

// RerunMayHelp says whether running the same update again, unchanged, can
// end otherwise: false for a cause that needs a change first, true for one
// that may pass and for anything not in this catalogue (a plain error, a
// timeout of the workflow itself). A type with a suffix (MGSRejected's
// ":<error_code>") is its catalogue type's.
func RerunMayHelp(typ string) bool {
	if i := strings.IndexByte(typ, ':'); i > 0 {
		typ = typ[:i]
	}
	return !needsChange[typ]
}

// needsChange are the types whose cause stays until someone changes
// something: running the same update again gives the same answer.
var needsChange = map[string]bool{
	InvalidInput:          true,
	HealthCheckInvalid:    true,
	NotificationRefused:   true,
	APIVersionRefused:     true,
	ArtifactMismatch:      true,
	ArtifactInvalid:       true,
	MGSNotConfigured:      true,
	MGSRejected:           true,
	HostBootDiskMismatch:  true,
	WrongDevice:           true,
	WrongActiveVersion:    true,
	WrongInactiveVersion:  true,
	WouldDowngrade:        true,
	ImageRefused:          true,
	ConcurrentDowngrade:   true,
	UnexpectedWaitOutcome: true,
	InvalidAgentRequest:   true,
	ImageInvalid:          true,
	ServerNotFound:        true,
	ServerNotSetup:        true,
	AgentNotConfirmed:     true,
	TritonAPI:             true,
	BootImageRelease:      true,
	BootImageMalformed:    true,
	BootImageNotFound:     true,
	BootImageInvalid:      true,
	BootImageReplicas:     true,
	SledNotFound:          true,
	ZoneNotFound:          true,
	LastNexusZone:         true,
	ZoneReinstated:        true,
	GateNotProven:         true,
	SledAgentRejected:     true,
	NexusDBNotConfigured:  true,
	InvalidZoneExpunge:    true,
	ExpungeConflict:       true,
	NexusLockstepRejected: true,
	TargetDisabled:        true,
	OwnerUnknown:          true,
	SagaWrongGeneration:   true,
	ApprovalRefused:       true,
	// The release the gate judged is bad: a rerun only spreads it.
	HealthGateFailed: true,
}
