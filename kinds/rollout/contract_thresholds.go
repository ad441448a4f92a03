package rollout

import (
	"errors"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
)

// FailureClass is a failure type's class (failure/types.go declares each
// type's), which a plan's thresholds bound.
type FailureClass = failure.Class

const (
	ClassTimeout      = failure.ClassTimeout
	ClassRefused      = failure.ClassRefused
	ClassVerification = failure.ClassVerification
	ClassOther        = failure.ClassOther
	// ClassAny counts every failure (a threshold only).
	ClassAny FailureClass = "any"
)

var failureClasses = []FailureClass{ClassTimeout, ClassRefused, ClassVerification, ClassOther, ClassAny}

func knownClass(c FailureClass) bool { return slices.Contains(failureClasses, c) }

func failureClassNames() string {
	names := make([]string, len(failureClasses))
	for i, c := range failureClasses {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// classify names a failed update's error type and class.
func classify(err error) (string, FailureClass) {
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "Timeout", ClassTimeout
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type(), failure.ClassOf(app.Type())
	}
	return "", ClassOther
}
