package main

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc/codes"
)

// temporalExit is the exit code for an error from a call to Temporal,
// sorted by what the operator does next: fix access (exitUnauthorised),
// fix the request (exitUsage), retry when the server answers
// (exitUnreachable), or read why it failed (exitFailed).
func temporalExit(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ns *serviceerror.NamespaceNotFound
	if errors.As(err, &ns) {
		return exitUsage // --namespace names none
	}
	switch serviceerror.ToStatus(err).Code() {
	case codes.PermissionDenied, codes.Unauthenticated:
		return exitUnauthorised
	case codes.InvalidArgument:
		return exitUsage
	case codes.Unavailable, codes.DeadlineExceeded:
		return exitUnreachable
	}
	return exitFailed
}

// temporalErr is the exit error for a failed call to Temporal (what names
// the call): its code from temporalExit, one line with the server's words.
// An error that already has its exit code is kept.
func (a *app) temporalErr(what string, err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	code, msg := temporalExit(err), serverMessage(err)
	var line error
	switch code {
	case exitUnauthorised:
		line = fmt.Errorf("%s: Temporal at %s refused access to namespace %s (%s): check the client certificate, API key or --temporal-api-key-file token and its permissions on the namespace",
			what, a.temporal.Address, a.temporal.Namespace, msg)
	case exitUnreachable:
		line = fmt.Errorf("%s: Temporal at %s is unreachable: %s", what, a.temporal.Address, msg)
	case exitUsage:
		line = fmt.Errorf("%s: Temporal refused the request as invalid: %s", what, msg)
	default:
		var app *temporal.ApplicationError
		if errors.As(err, &app) {
			line = fmt.Errorf("%s: %s", what, msg) // the workflow's own words
		} else {
			line = fmt.Errorf("%s: Temporal refused it: %s", what, msg)
		}
	}
	return &exitError{code, line}
}

// serverMessage is what the server (or the workflow) said, on one line:
// without gRPC's "rpc error: code = …" framing or the SDK's "(type: …,
// retryable: …)" suffix.
func serverMessage(err error) string {
	msg := err.Error()
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		msg = app.Message()
	} else if st := serviceerror.ToStatus(err); st.Code() != codes.Unknown {
		msg = st.Message()
	}
	return strings.Join(strings.Fields(msg), " ")
}
