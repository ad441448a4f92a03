package workerapp

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
)

// DefaultStopTimeout is how long a stopping worker lets running
// activities finish by default; one still running then is handed back and
// retried on another worker (docs/CONTRIBUTING.md, "When an activity's
// context ends"). It stays well under the time a service manager gives
// the process before it kills it (deploy/fleetsaga-worker.service: 45 s).
const DefaultStopTimeout = 20 * time.Second

// Options tune one worker.
type Options struct {
	TaskQueue string
	Identity  string
	// StopTimeout is how long a stopping worker lets running activities
	// finish before it cancels them; their tasks then retry on other
	// workers (zero: DefaultStopTimeout).
	StopTimeout time.Duration
	// MaxConcurrentActivities bounds activity executions (0 = SDK default).
	MaxConcurrentActivities int
	// Metrics, when set, receives the worker's own counters (workflow
	// panics); the SDK's metrics go through the client's handler.
	Metrics *Metrics
	// DeploymentName and BuildID, both set, make this worker a Worker
	// Deployment Version (docs/DEPLOYING.md); both empty, unversioned.
	DeploymentName, BuildID string
}

// Run registers everything and polls TaskQueue until ctx ends, then stops
// gracefully.
func Run(ctx context.Context, c client.Client, o Options, d Deps) error {
	w, err := NewWorker(c, o, d)
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	if o.DeploymentName == "" {
		// Since 1.0 device kinds change without GetVersion markers: only
		// versioning keeps a new build from replaying their running updates.
		d.Log.Warn().Str("task_queue", o.TaskQueue).Str("identity", o.Identity).
			Msg("worker polling UNVERSIONED: a new build would replay running device updates with changed code and break them; " +
				"set --deployment-name and --build-id (docs/DEPLOYING.md)")
	} else {
		d.Log.Info().Str("task_queue", o.TaskQueue).Str("identity", o.Identity).
			Str("deployment", o.DeploymentName).Str("build_id", o.BuildID).
			Msg("worker polling; it gets tasks once its version is current (temporal worker deployment set-current-version)")
	}
	<-ctx.Done()
	d.Log.Info().Dur("stop_timeout", o.StopTimeout).Msg("worker stopping: finishing or handing back in-flight tasks")
	w.Stop()
	return nil
}

// NewWorker builds the worker with every workflow and activity registered
// (not started): Run's body, separate so tests can add workflows.
func NewWorker(c client.Client, o Options, d Deps) (worker.Worker, error) {
	if o.StopTimeout == 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	watch := &panicWatch{log: d.Log}
	if o.Metrics != nil {
		watch.counter = o.Metrics.WorkflowPanics
	}
	wo := worker.Options{
		Identity:                           o.Identity,
		WorkerStopTimeout:                  o.StopTimeout,
		MaxConcurrentActivityExecutionSize: o.MaxConcurrentActivities,
		WorkflowPanicPolicy:                PanicPolicy,
		Interceptors:                       []interceptor.WorkerInterceptor{watch, &keepAlive{}},
	}
	if (o.DeploymentName == "") != (o.BuildID == "") {
		return nil, fmt.Errorf("deployment name %q and build ID %q: set both or neither", o.DeploymentName, o.BuildID)
	}
	if o.DeploymentName != "" {
		// Every workflow type is registered with its own behaviour
		// (register.go), so no default is set here.
		wo.DeploymentOptions = worker.DeploymentOptions{
			UseVersioning: true,
			Version:       worker.WorkerDeploymentVersion{DeploymentName: o.DeploymentName, BuildID: o.BuildID},
		}
	}
	w := worker.New(c, o.TaskQueue, wo)
	d.Temporal = c
	if err := Register(w, d); err != nil {
		return nil, fmt.Errorf("register: %w", err)
	}
	return w, nil
}
