package failure

import "strings"

// Rerun says whether running the same update again, unchanged, can end
// otherwise.
type Rerun int

const (
	_ Rerun = iota
	// MayPass: the cause may pass by itself (a busy target, a device or
	// service that did not answer in time, a target that moved): the same
	// update run again later can succeed.
	MayPass
	// NeedsChange: the cause stays until someone changes something (the
	// input, the artifact, the device, the configuration, an owner's
	// consent): running it again gives the same answer.
	NeedsChange
)

// Class groups the failure types of the update kinds, so a rollout's plan
// can bound each kind of trouble (its thresholds) without naming every
// kind's errors.
type Class string

const (
	// ClassTimeout: the device or its service did not answer in time.
	ClassTimeout Class = "timeout"
	// ClassRefused: the device or its service refused the change.
	ClassRefused Class = "device-refused"
	// ClassVerification: the change ran, and the device then did not show
	// what it should (wrong version, digest, release).
	ClassVerification Class = "verification-failed"
	// ClassOther: any other failure.
	ClassOther Class = "other"
)

// Info is what the catalogue says about one type.
type Info struct {
	Rerun Rerun
	Class Class
}

// types is the catalogue: every type of failure.go with its rerun rule and
// its class (failure/types_test.go checks that none is missing).
var types = map[string]Info{
	// Any kind.
	InvalidInput:        {NeedsChange, ClassOther},
	TargetBusy:          {MayPass, ClassOther},
	AttemptEnded:        {MayPass, ClassOther},
	HealthCheckInvalid:  {NeedsChange, ClassOther},
	NotificationRefused: {NeedsChange, ClassOther},
	APIVersionRefused:   {NeedsChange, ClassOther},
	// SP firmware and host boot flash (MGS).
	ArtifactUnavailable:   {MayPass, ClassOther},
	ArtifactMismatch:      {NeedsChange, ClassVerification},
	ArtifactInvalid:       {NeedsChange, ClassOther},
	MGSNotConfigured:      {NeedsChange, ClassOther},
	MGSRejected:           {NeedsChange, ClassRefused},
	HostBootTimeout:       {MayPass, ClassTimeout},
	HostBootDiskMismatch:  {NeedsChange, ClassOther},
	Phase2WriteTimeout:    {MayPass, ClassOther},
	WrongDevice:           {NeedsChange, ClassRefused},
	OwnedByNexus:          {MayPass, ClassRefused},
	OwnedByTargetRelease:  {NeedsChange, ClassRefused}, // a target release is never unset
	ZoneUnsafeToShutdown:  {MayPass, ClassRefused},
	ZoneSafetyUnknown:     {NeedsChange, ClassRefused},
	WrongActiveVersion:    {NeedsChange, ClassVerification},
	WrongActiveSlot:       {NeedsChange, ClassVerification},
	WrongInactiveVersion:  {NeedsChange, ClassVerification},
	WouldDowngrade:        {NeedsChange, ClassRefused},
	ImageRefused:          {NeedsChange, ClassRefused},
	ConcurrentDowngrade:   {NeedsChange, ClassRefused},
	AttemptsExhausted:     {MayPass, ClassOther},
	UnexpectedWaitOutcome: {NeedsChange, ClassVerification},
	ResultRejected:        {NeedsChange, ClassOther}, // an operator's typed results, not the device
	// Agent install and drift (CNAPI, SAPI, IMGAPI).
	InvalidAgentRequest: {NeedsChange, ClassOther},
	ImageInvalid:        {NeedsChange, ClassOther},
	ServerNotFound:      {NeedsChange, ClassOther},
	ServerNotRunning:    {MayPass, ClassRefused},
	ServerNotSetup:      {NeedsChange, ClassRefused},
	AgentTaskFailed:     {MayPass, ClassRefused},
	AgentNotConfirmed:   {NeedsChange, ClassVerification},
	TritonAPI:           {NeedsChange, ClassRefused},
	// A fan-out's budget: each failed update says whether it may pass.
	FailureBudget: {MayPass, ClassOther},
	// The release the gate judged is bad: a rerun only spreads it.
	HealthGateFailed: {NeedsChange, ClassOther},
	FailureThreshold: {MayPass, ClassOther},
	// The next window opens by itself.
	WindowClosed: {MayPass, ClassOther},
	// MachineSet boot image bump.
	BootImagePrecondition: {MayPass, ClassTimeout},
	BootImageRelease:      {NeedsChange, ClassVerification},
	BootImageMalformed:    {NeedsChange, ClassOther},
	BootImageNotFound:     {NeedsChange, ClassOther},
	BootImageInvalid:      {NeedsChange, ClassOther},
	BootImageReplicas:     {NeedsChange, ClassOther},
	// Zone expunge (sled-agent, Nexus sagas).
	SledNotFound:  {NeedsChange, ClassOther},
	ZoneNotFound:  {NeedsChange, ClassOther},
	LastNexusZone: {NeedsChange, ClassRefused},
	// Internal steps a workflow takes itself; should one end a run, the
	// next run starts afresh: StaleGeneration, OwnerGone, AttemptEnded.
	StaleGeneration:           {MayPass, ClassOther},
	ZoneRemovalTimedOut:       {MayPass, ClassTimeout},
	InventoryProofTimedOut:    {MayPass, ClassTimeout},
	ZoneReinstated:            {NeedsChange, ClassOther},
	GateNotProven:             {NeedsChange, ClassVerification},
	NoLiveNexus:               {MayPass, ClassOther},
	OwnerGone:                 {MayPass, ClassOther},
	SagasRemain:               {MayPass, ClassOther},
	SledAgentRejected:         {NeedsChange, ClassRefused},
	NexusDBNotConfigured:      {NeedsChange, ClassOther},
	InvalidZoneExpunge:        {NeedsChange, ClassOther},
	ExpungeConflict:           {NeedsChange, ClassOther},
	TooManyRebases:            {MayPass, ClassOther},
	ConfigChangedUnderExpunge: {MayPass, ClassOther},
	NexusLockstepRejected:     {NeedsChange, ClassOther},
	NexusExternalRejected:     {NeedsChange, ClassOther},
	TargetMovedTooOften:       {MayPass, ClassOther},
	TargetDisabled:            {NeedsChange, ClassRefused},
	OwnerUnknown:              {NeedsChange, ClassRefused},
	OwnerCleanupTimedOut:      {MayPass, ClassOther},
	SagaWrongGeneration:       {NeedsChange, ClassOther},
	// Rollout gates.
	ApprovalRefused:    {NeedsChange, ClassOther},
	PlanTargetMismatch: {NeedsChange, ClassRefused},
}

// WithCode is a type with the answer's own error code as its suffix
// ("MGSRejected:InvalidSp"): it reads as its base type everywhere.
func WithCode(typ, code string) string {
	if code == "" {
		return typ
	}
	return typ + ":" + code
}

// Base is a type without its code suffix (WithCode).
func Base(typ string) string {
	if i := strings.IndexByte(typ, ':'); i > 0 {
		return typ[:i]
	}
	return typ
}

// RerunMayHelp says whether running the same update again, unchanged, can
// end otherwise: false for a cause that needs a change first, true for one
// that may pass and for anything not in this catalogue (a plain error, a
// timeout of the workflow itself). A type with a code suffix is its base
// type's.
func RerunMayHelp(typ string) bool {
	info, ok := types[Base(typ)]
	return !ok || info.Rerun != NeedsChange
}

// ClassOf is a type's class (a type with a code suffix: its base type's);
// ClassOther for anything not in this catalogue.
func ClassOf(typ string) Class {
	if info, ok := types[Base(typ)]; ok {
		return info.Class
	}
	return ClassOther
}
