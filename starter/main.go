// Command starter is the operator CLI: it starts fleetsaga updates, watches
// them and steers them while they run.
//
// Exit codes (scripts can trust them):
//
//	0  success (the update completed, or the command did what it was asked)
//	1  the update failed (or timed out / was terminated)
//	2  usage error or invalid input: nothing was changed (and, unless
//	   Temporal itself called the request invalid, nothing contacted)
//	3  the update was cancelled
//	4  Temporal (or the ledger) is unreachable
//	5  refused: the target is busy with another update
//	6  --dry-run: changes planned (nothing refused)
//	7  --dry-run: some target would be refused
//	8  not authorised: Temporal refused access (permission denied, or the
//	   client certificate or API key was not accepted)
//
// A --dry-run that would change nothing exits 0.
package main

import (
	// Maintenance windows name IANA time zones: the binary carries the
	// zone database, so a container without one reads them the same.
	_ "time/tzdata"

	"errors"
	"fmt"
	"os"
)

const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitCancelled   = 3
	exitUnreachable = 4
	exitRefused     = 5
	exitPlanChanges = 6
	exitPlanRefused = 7
	// exitUnauthorised: retrying will not help, access must be granted.
	exitUnauthorised = 8
)

// exitError carries an exit code and one message line.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, args...)}
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintln(os.Stderr, "starter:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "starter:", err)
	return exitFailed
}
