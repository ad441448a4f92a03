package devstack

import (
	"fmt"
	"path/filepath"

	"github.com/fleetsaga/fleetsaga/internal/buildid"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// WorkerVersion is the Worker Deployment version a stack's workers poll as
// (their --deployment-name and --build-id). Every worker the stack starts
// is versioned: since 1.0 device kinds change without GetVersion markers,
// which is safe only on versioned workers.
type WorkerVersion struct {
	Deployment, BuildID string
}

// DeploymentFor names the Worker Deployment of the workers of a task
// queue: one deployment per task queue, as docs/DEPLOYING.md advises.
func DeploymentFor(taskQueue string) string { return taskQueue }

// defaultVersion is the version of the stack's workers when StackOptions
// names none: the deployment of fleetsaga's task queue, the build named by
// the worker binary the stack runs.
func defaultVersion(binDir string) WorkerVersion {
	return WorkerVersion{Deployment: DeploymentFor(workflows.TaskQueue), BuildID: buildid.Of(filepath.Join(binDir, "worker"))}
}

func (v WorkerVersion) args() []string {
	return []string{"--deployment-name", v.Deployment, "--build-id", v.BuildID}
}

// AddWorker starts one more worker, of version v, the way an operator
// deploys a new build beside the running one; it returns its index. The
// caller makes v current (MakeCurrent) when it chooses. Restarts keep each
// worker's version.
func (s *Stack) AddWorker(v WorkerVersion) (int, error) {
	i := len(s.Workers)
	s.versions = append(s.versions, v)
	w, err := s.startWorker(i)
	if err != nil {
		s.versions = s.versions[:i]
		return 0, fmt.Errorf("start worker-%d (build %s): %w", i, v.BuildID, err)
	}
	s.Workers = append(s.Workers, w)
	return i, nil
}

// maxDeployments is the Worker Deployments a stack's namespace may hold.
// Integration tests make one per task queue, hundreds per suite on one
// server; the server's default (100, matching.maxDeployments) is sized for
// a production namespace and would refuse the rest's workers.
const maxDeployments = 10000
