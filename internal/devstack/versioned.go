package devstack

import "fmt"

// WorkerVersion makes a worker a Worker Deployment version (its
// --deployment-name and --build-id); the zero value is an unversioned
// worker.
type WorkerVersion struct {
	Deployment, BuildID string
}

func (v WorkerVersion) args() []string {
	if v.BuildID == "" {
		return nil
	}
	return []string{"--deployment-name", v.Deployment, "--build-id", v.BuildID}
}

// AddWorker starts one more worker, of version v, the way an operator
// deploys a new build beside the running one; it returns its index.
// Restarts keep each worker's version.
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
