//go:build tools

// Package tools pins the versions of the binaries the dev stack builds:
// the Temporal CLI (dev server + Web UI) and the workflowcheck analyzer.
package tools

import (
	_ "github.com/temporalio/cli/cmd/temporal"
	_ "go.temporal.io/sdk/contrib/tools/workflowcheck"
)
