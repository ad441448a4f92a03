package devstack

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
)

// VersionCurrentTimeout bounds the wait for a new version to exist, from
// a worker's start to its first poll: a few seconds, even when the worker
// is a process that still migrates the ledger on a loaded machine.
const VersionCurrentTimeout = 2 * time.Minute

// versionRetryInterval paces the attempts while the version does not
// exist yet (the server refuses an unknown version or one without pollers).
const versionRetryInterval = 100 * time.Millisecond

// MakeCurrent makes v its deployment's current version, as an operator
// does with `temporal worker deployment set-current-version`, retrying
// until a worker of v has polled (the version exists only then). A
// versioned worker gets no tasks before this. Making the current version
// current again is a no-op.
func MakeCurrent(ctx context.Context, c client.Client, v WorkerVersion) error {
	ctx, cancel := context.WithTimeout(ctx, VersionCurrentTimeout)
	defer cancel()
	h := c.WorkerDeploymentClient().GetHandle(v.Deployment)
	for {
		_, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: v.BuildID})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("make build %s current in worker deployment %s (its workers never polled?): %w", v.BuildID, v.Deployment, err)
		case <-time.After(versionRetryInterval):
		}
	}
}
