package failure

import (
	"errors"
	"strings"

	"go.temporal.io/sdk/temporal"
)

// Of is what went wrong in err, as the operator reads it: the type and
// message of the first application error whose type says more than a
// plain Go error's "Error", without the SDK's "(type: …, retryable: …)"
// framing or the activity error around it, which repeat or hide it. An
// error with no application error is its innermost message.
func Of(err error) (typ, msg string) {
	if err == nil {
		return "", ""
	}
	var app *temporal.ApplicationError
	inner := err
	for e := err; e != nil; e = errors.Unwrap(e) {
		inner = e
		if a, ok := e.(*temporal.ApplicationError); ok && (app == nil || app.Type() == "" || app.Type() == "Error") {
			app = a
		}
	}
	if app != nil {
		return app.Type(), oneLine(app.Message())
	}
	return "", oneLine(inner.Error())
}

// Line is Of on one line: "WrongDevice: SP sled/1 is serial …".
func Line(err error) string {
	typ, msg := Of(err)
	if typ == "" || typ == "Error" {
		return msg
	}
	return typ + ": " + msg
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
