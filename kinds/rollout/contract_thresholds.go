package rollout

import (
	"errors"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
)

// FailureClass groups the failure types of the update kinds, so a plan
// can bound each kind of trouble without naming every kind's errors.
type FailureClass string

const (
	// ClassTimeout: the device or its service did not answer in time.
	ClassTimeout FailureClass = "timeout"
	// ClassRefused: the device or its service refused the change.
	ClassRefused FailureClass = "device-refused"
	// ClassVerification: the change ran, and the device then did not show
	// what it should (wrong version, digest, release).
	ClassVerification FailureClass = "verification-failed"
	// ClassOther: any other failure.
	ClassOther FailureClass = "other"
	// ClassAny counts every failure (a threshold only).
	ClassAny FailureClass = "any"
)

var failureClasses = []FailureClass{ClassTimeout, ClassRefused, ClassVerification, ClassOther, ClassAny}

func (c FailureClass) known() bool { return slices.Contains(failureClasses, c) }

func failureClassNames() string {
	names := make([]string, len(failureClasses))
	for i, c := range failureClasses {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// classOfType maps the failure catalogue's types to classes.
var classOfType = map[string]FailureClass{
	failure.HostBootTimeout: ClassTimeout, failure.ZoneRemovalTimedOut: ClassTimeout,
	failure.InventoryProofTimedOut: ClassTimeout, failure.BootImagePrecondition: ClassTimeout,

	failure.MGSRejected: ClassRefused, failure.ImageRefused: ClassRefused, failure.SledAgentRejected: ClassRefused,
	failure.WouldDowngrade: ClassRefused, failure.WrongDevice: ClassRefused, failure.OwnedByNexus: ClassRefused,
	failure.ConcurrentDowngrade: ClassRefused, failure.TritonAPI: ClassRefused, failure.AgentTaskFailed: ClassRefused,
	failure.ServerNotRunning: ClassRefused, failure.ServerNotSetup: ClassRefused, failure.LastNexusZone: ClassRefused,
	failure.OwnerUnknown: ClassRefused, failure.TargetDisabled: ClassRefused,

	failure.WrongActiveVersion: ClassVerification, failure.WrongInactiveVersion: ClassVerification,
	failure.ArtifactMismatch: ClassVerification, failure.BootImageRelease: ClassVerification,
	failure.GateNotProven: ClassVerification, failure.UnexpectedWaitOutcome: ClassVerification,
	failure.AgentNotConfirmed: ClassVerification,
}

// classify names a failed update's error type and class.
func classify(err error) (string, FailureClass) {
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "Timeout", ClassTimeout
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		if c, ok := classOfType[app.Type()]; ok {
			return app.Type(), c
		}
		return app.Type(), ClassOther
	}
	return "", ClassOther
}
