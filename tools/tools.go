//go:build tools

// Package tools pins the versions of the binaries the dev stack builds:
// the Temporal CLI (dev server + Web UI), the Temporal server, its SQL
// schema tool and Web UI server (the cluster stack), and workflowcheck.
package tools

import (
	_ "github.com/temporalio/cli/cmd/temporal"
	_ "github.com/temporalio/ui-server/v2/cmd/server"
	_ "go.temporal.io/sdk/contrib/tools/workflowcheck"
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
