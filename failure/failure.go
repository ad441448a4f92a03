// Package failure is the catalogue of fleetsaga's application error types:
// the Type of every temporal.ApplicationError that workflows and activities
// raise, and that callers, the starter and tests match on. All of them are
// raised non-retryable: retrying cannot change the answer, so the workflow
// decides what each one means. Retryable trouble (a 5xx, a timeout, a
// database restart) is an ordinary error and is retried by the activity's
// retry policy.
package failure

// Any kind.
const (
	// InvalidInput: the update's input is invalid (checked again in the
	// workflow, after the starter's checks).
	InvalidInput = "InvalidInput"
	// TargetBusy: another update holds the target in the ledger.
	TargetBusy = "TargetBusy"
	// AttemptEnded: the intent of an attempt that already ended (a run
	// reset to before its end derives its ID again): record a new one.
	AttemptEnded = "AttemptEnded"
	// HealthCheckInvalid: a gate's health check cannot be run (Prometheus
	// refused its query, or none is configured).
	HealthCheckInvalid = "HealthCheckInvalid"
	// NotificationRefused: a webhook answered 4xx (its URL or secret is
	// wrong): retrying cannot help.
	NotificationRefused = "NotificationRefused"
	// APIVersionRefused: MGS or a sled-agent refused the API version our
	// client was written for (the rack runs an older service).
	APIVersionRefused = "APIVersionRefused"
)

// SP firmware and host boot flash (MGS).
const (
	ArtifactUnavailable = "ArtifactUnavailable"    // cannot read the artifact file/URL
	ArtifactMismatch    = "ArtifactDigestMismatch" // SHA-256 differs from the expected one
	// ArtifactInvalid: the artifact is not the kind of image it is given
	// as (a phase 2 image whose header does not check).
	ArtifactInvalid  = "ArtifactInvalid"
	MGSNotConfigured = "MGSNotConfigured"
	// MGSRejected: a 4xx answer or a malformed reply (type suffix
	// ":<error_code>").
	MGSRejected = "MGSRejected"
	// HostBootTimeout: the host did not come back on the new slot in time
	// (it is put back on its old slot).
	HostBootTimeout = "HostBootTimeout"
	// HostBootDiskMismatch: sled-agent booted from another disk than the
	// active phase 1 slot's: a reboot is pending, the update does not
	// start (omicron MismatchedHostOsActiveSlot).
	HostBootDiskMismatch = "HostBootDiskMismatch"
	// Phase2WriteTimeout: sled-agent did not write the phase 2 image to
	// the inactive slot's disk in time.
	Phase2WriteTimeout = "Phase2WriteTimeout"
	WrongDevice        = "WrongDevice"
	// OwnedByNexus: the target blueprint has a pending MGS update for the
	// device; Nexus's MGS update driver owns it (docs/CONFORMANCE.md §I).
	OwnedByNexus = "OwnedByNexus"
	// OwnedByTargetRelease: the device's rack has a target release (a
	// system version), so Nexus's planner plans its SP, RoT and host
	// updates toward it and would undo ours (docs/CONFORMANCE.md §I): the
	// device is updated through the rack's update system instead.
	OwnedByTargetRelease = "OwnedByTargetRelease"
	// ZoneUnsafeToShutdown: the sled holds a zone the planner would not
	// shut down now (omicron's zone safety checks); its host is not
	// rebooted.
	ZoneUnsafeToShutdown = "ZoneUnsafeToShutdown"
	// ZoneSafetyUnknown: the sled holds a zone whose kind's count the
	// worker cannot read (direct mode: no target blueprint).
	ZoneSafetyUnknown  = "ZoneSafetyUnknown"
	WrongActiveVersion = "WrongActiveVersion"
	// WrongActiveSlot: another client's host update moved the host's
	// active phase 1 slot since our precheck (omicron's
	// WrongActiveHostPhase1Slot).
	WrongActiveSlot      = "WrongActiveSlot"
	WrongInactiveVersion = "WrongInactiveVersion"
	WouldDowngrade       = "WouldDowngrade"
	// ImageRefused: the SP refused the image itself (it is for another
	// board): every attempt would be refused the same way.
	ImageRefused          = "ImageRefused"
	ConcurrentDowngrade   = "ConcurrentDowngradePending"
	AttemptsExhausted     = "AttemptsExhausted"
	UnexpectedWaitOutcome = "UnexpectedWaitOutcome"
	// ResultRejected: a step's result kept not being the answer to what
	// the workflow asked (an operator typed it, `temporal activity
	// complete`): it names another update, none, or an unknown outcome.
	ResultRejected = "ResultRejected"
)

// Agent install and drift (CNAPI, SAPI, IMGAPI).
const (
	InvalidAgentRequest = "InvalidAgentRequest" // bad input, unknown servers, unknown agents
	ImageInvalid        = "ImageInvalid"        // missing, not an agent, wrong name, size/digest mismatch
	ServerNotFound      = "ServerNotFound"
	ServerNotRunning    = "ServerNotRunning"
	ServerNotSetup      = "ServerNotSetup"
	AgentTaskFailed     = "AgentTaskFailed" // cn-agent's install task failed (backup restored)
	// AgentNotConfirmed: the install's task ended (or cn-agent's wait ran
	// out) and CNAPI's server.agents, which the server's cn-agent posts,
	// still does not show the image.
	AgentNotConfirmed = "AgentNotConfirmed"
	TritonAPI         = "TritonAPI" // a non-retryable CNAPI/SAPI/IMGAPI answer
	// FailureBudget ends a fan-out whose failures exceeded its budget.
	FailureBudget = "FailureBudgetExceeded"
	// HealthGateFailed: a rollout's health gate failed as often as its
	// plan allows; the rollout stopped starting updates.
	HealthGateFailed = "HealthGateFailed"
	// FailureThreshold: a class of failures passed its percentage.
	FailureThreshold = "FailureThresholdExceeded"
	// WindowClosed: a window with endBehavior cancel closed.
	WindowClosed = "MaintenanceWindowClosed"
)

// MachineSet boot image bump.
const (
	BootImagePrecondition = "BootImagePreconditionTimeout" // cluster kept upgrading / golden record not stamped
	BootImageRelease      = "BootImageReleaseMismatch"     // the cluster runs another release than asked
	BootImageMalformed    = "BootImageMalformed"           // an object has an unexpected shape
	BootImageNotFound     = "BootImageNotFound"            // MachineSet / record / cluster missing
	BootImageInvalid      = "BootImageInvalidRequest"
	BootImageReplicas     = "BootImageReplicasChanged" // someone else scaled the canary MachineSet
)

// Zone expunge (sled-agent, Nexus sagas).
const (
	SledNotFound = "SledNotFound"
	ZoneNotFound = "ZoneNotFound"
	// LastNexusZone: expunging would leave no in-service Nexus zone.
	LastNexusZone = "LastNexusZone"
	// StaleGeneration: the sled ledgered a config at or past ours that still
	// has the zone; details: the ledgered generation (uint64). Rebase.
	StaleGeneration = "StaleGeneration"
	// ZoneRemovalTimedOut: the config PUT kept failing past its bound.
	ZoneRemovalTimedOut = "ZoneRemovalTimedOut"
	// InventoryProofTimedOut: inventory never showed the zone gone.
	InventoryProofTimedOut = "InventoryProofTimedOut"
	// ZoneReinstated: a newer sled config put the zone back.
	ZoneReinstated = "ZoneReinstated"
	// GateNotProven: saga reassignment refused, the zone is not ready for
	// cleanup in the ledger.
	GateNotProven = "GateNotProven"
	NoLiveNexus   = "NoLiveNexus"
	// OwnerGone: the chosen new saga owner was expunged before the move;
	// nothing moved. Choose again.
	OwnerGone = "SagaOwnerGone"
	// SagasRemain: sagas still belong to the expunged Nexus after
	// reassignment.
	SagasRemain = "SagasRemain"
	// SledAgentRejected: a sled-agent answer that retrying cannot change.
	SledAgentRejected    = "SledAgentRejected"
	NexusDBNotConfigured = "NexusDBNotConfigured"
	InvalidZoneExpunge   = "InvalidZoneExpunge"
	// ExpungeConflict: the ledger has the expunge committed but the sled
	// still has the zone (the device is the truth: no success over it).
	ExpungeConflict = "ExpungeConflict"
	TooManyRebases  = "TooManyRebases"
	// ConfigChangedUnderExpunge (direct mode, no enabled target blueprint):
	// another writer ledgered a sled config with the zone while fleetsaga
	// was writing it; fleetsaga stops instead of fighting it.
	ConfigChangedUnderExpunge = "ConfigChangedUnderExpunge"
	// NexusLockstepRejected: Nexus's lockstep API refused a request that
	// retrying cannot change.
	NexusLockstepRejected = "NexusLockstepRejected"
	// NexusExternalRejected: Nexus's external API refused fleetsaga's
	// request (its API token, its user's roles, another 4xx) or answered
	// outside its document, or the token file holds no token.
	NexusExternalRejected = "NexusExternalRejected"
	// TargetMovedTooOften (owner mode): the target blueprint kept moving
	// under the expunge's child blueprint past the rebase bound.
	TargetMovedTooOften = "TargetMovedTooOften"
	// TargetDisabled: the target blueprint is disabled (an operator paused
	// Nexus's executor; its planner still runs): fleetsaga neither writes
	// sled configs behind it nor enables it.
	TargetDisabled = "TargetDisabled"
	// OwnerUnknown: who owns a rack's sled configs and SP updates is not
	// known (no Nexus lockstep endpoint and no direct mode, an endpoint that
	// is not the lockstep API, a sled whose rack or state says nothing):
	// the work stops until the configuration names the owner.
	OwnerUnknown = "OwnerUnknown"
	// OwnerCleanupTimedOut (owner mode): Nexus did not mark the zone ready
	// for cleanup, or did not move its sagas, within the bound.
	OwnerCleanupTimedOut = "OwnerCleanupTimedOut"
	// SagaWrongGeneration: a saga of the expunged Nexus is now owned by a
	// Nexus of another nexus_generation, which cannot run it.
	SagaWrongGeneration = "SagaWrongGeneration"
)

// Rollout gates.
const (
	// ApprovalRefused: a signed start or approval did not pass the worker's
	// checks (signature, gate, age, replay, policy); details: the
	// approval.Reason (string). Nothing was recorded.
	ApprovalRefused = "ApprovalRefused"
	// PlanTargetMismatch: a plan update's target (what the approver is
	// shown) is not the target its input makes the update act on; the
	// rollout refuses the plan before anything runs.
	PlanTargetMismatch = "PlanTargetMismatch"
)
