package chaos

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// The new-build attack: the workers run as a Worker
// Deployment version, and during a seeded stage a worker of a new build is
// started beside them and made the current version, as docs/DEPLOYING.md
// tells an operator to deploy. The old workers stay (pinned device updates
// finish on them) and keep being killed; the rollout, Auto-Upgrade, moves
// to the new build.

// chaosDeployment is the Worker Deployment the chaos workers belong to.
const chaosDeployment = "fleetsaga-chaos"

var firstBuild = devstack.WorkerVersion{Deployment: chaosDeployment, BuildID: "chaos-1"}
var newBuild = devstack.WorkerVersion{Deployment: chaosDeployment, BuildID: "chaos-2"}

// newBuildState is what the attack did, for the invariants.
type newBuildState struct {
	stage int       // the stage during which it fires (-1: not planned)
	at    time.Time // when the new build became current (zero: it did not)
}

// setCurrentBuild makes build the deployment's current version, once a
// worker of it has polled (the version exists only then).
func (h *harness) setCurrentBuild(ctx context.Context, v devstack.WorkerVersion) error {
	dh := h.c.WorkerDeploymentClient().GetHandle(v.Deployment)
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := dh.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: v.BuildID})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("make %s current in %s: %w", v.BuildID, v.Deployment, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// deployNewBuild starts a worker of the new build and makes it current.
func (h *harness) deployNewBuild(ctx context.Context, during string) {
	h.mu.Lock()
	i, err := h.stack.AddWorker(newBuild)
	h.mu.Unlock()
	if err != nil {
		h.say("deploy a new build: %v", err)
		return
	}
	if err := h.setCurrentBuild(ctx, newBuild); err != nil {
		h.say("deploy a new build: %v", err)
		return
	}
	h.mu.Lock()
	h.newBuild.at = time.Now()
	h.rep.NewBuilds++
	h.mu.Unlock()
	h.say("new build %s deployed (worker-%d) and made current during %q", newBuild.BuildID, i, during)
}
