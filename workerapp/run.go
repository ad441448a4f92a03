package workerapp

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// Options tune one worker.
type Options struct {
	TaskQueue string
	Identity  string
	// StopTimeout is how long a stopping worker lets running activities
	// finish before it cancels them; their tasks then retry on other workers.
	StopTimeout time.Duration
	// MaxConcurrentActivities bounds activity executions (0 = SDK default).
	MaxConcurrentActivities int
}

// Run registers everything and polls TaskQueue until ctx ends, then stops
// gracefully.
func Run(ctx context.Context, c client.Client, o Options, d Deps) error {
	if o.StopTimeout == 0 {
		o.StopTimeout = 20 * time.Second
	}
	w := worker.New(c, o.TaskQueue, worker.Options{
		Identity:                           o.Identity,
		WorkerStopTimeout:                  o.StopTimeout,
		MaxConcurrentActivityExecutionSize: o.MaxConcurrentActivities,
	})
	d.Temporal = c
	if err := Register(w, d); err != nil {
		return fmt.Errorf("register: %w", err)
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	d.Log.Info().Str("task_queue", o.TaskQueue).Str("identity", o.Identity).Msg("worker polling")
	<-ctx.Done()
	d.Log.Info().Dur("stop_timeout", o.StopTimeout).Msg("worker stopping: finishing or handing back in-flight tasks")
	w.Stop()
	return nil
}
