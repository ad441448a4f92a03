package workerapp

import (
	"fmt"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// PanicPolicy is deliberate: a workflow task that panics blocks its
// workflow (the task is retried) instead of failing it, so the update's
// state survives and a worker with the fix resumes it where it stopped.
// Blocking must not be silent: panicWatch logs each panic at error level
// and counts it in fleetsaga_workflow_panics_total (alert on any increase).
const PanicPolicy = worker.BlockWorkflow

// panicWatch is a worker interceptor that observes panics in workflow code
// (the workflow function, update handlers, and coroutines started with
// workflow.Go) and passes them on unchanged, so the SDK applies
// PanicPolicy. It emits no workflow commands.
type panicWatch struct {
	interceptor.WorkerInterceptorBase
	log     zerolog.Logger
	counter *prometheus.CounterVec // nil: log only
}

func (p *panicWatch) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &panicInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, w: p}
}

// observe is deferred around workflow code: it reports a panic, then
// panics again with the same value (the SDK's recovery still sees the
// original stack, which is still on this goroutine).
func (p *panicWatch) observe(ctx workflow.Context, where string) {
	r := recover()
	if r == nil {
		return
	}
	if unwinding(ctx) {
		// The SDK evicted this workflow (or it ended) and unwinds its
		// coroutine with runtime.Goexit, outside the workflow: a deferred
		// call that touches it, such as the cancel of a disconnected
		// context (workflows/lifecycle.go end), panics "illegal access
		// from outside of workflow context". No task failed and nothing is
		// blocked: the workflow resumes from its history.
		p.log.Debug().Str("in", where).Str("panic", fmt.Sprint(r)).Msg("a deferred call panicked while the SDK unwound an evicted workflow; not a workflow panic")
		panic(r)
	}
	info := workflow.GetInfo(ctx)
	if p.counter != nil {
		p.counter.WithLabelValues(info.WorkflowType.Name).Inc()
	}
	p.log.Error().Str("workflow_type", info.WorkflowType.Name).Str("workflow_id", info.WorkflowExecution.ID).
		Str("run_id", info.WorkflowExecution.RunID).Str("in", where).Str("panic", fmt.Sprint(r)).Str("stack", string(debug.Stack())).
		Msg("workflow task panicked: the workflow is blocked until a worker with a fix runs it")
	panic(r)
}

// unwinding reports whether ctx's workflow is no longer executing. A
// coroutine runs outside its workflow only while the SDK unwinds it, and
// then every workflow call panics; NewSelector is one that issues no
// command and writes no history.
func unwinding(ctx workflow.Context) (yes bool) {
	defer func() { yes = recover() != nil }()
	workflow.NewSelector(ctx)
	return false
}

type panicInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	w *panicWatch
}

func (i *panicInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&panicOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, w: i.w})
}

func (i *panicInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	defer i.w.observe(ctx, "workflow")
	return i.Next.ExecuteWorkflow(ctx, in)
}

func (i *panicInbound) ExecuteUpdate(ctx workflow.Context, in *interceptor.UpdateInput) (any, error) {
	defer i.w.observe(ctx, "update "+in.Name)
	return i.Next.ExecuteUpdate(ctx, in)
}

type panicOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	w *panicWatch
}

// rootCoroutine is the name of the coroutine the SDK runs the workflow
// function in, through this same Go: ExecuteWorkflow observes it already,
// and observing it twice would count each of its panics twice.
const rootCoroutine = "root"

func (o *panicOutbound) Go(ctx workflow.Context, name string, f func(ctx workflow.Context)) workflow.Context {
	if name == rootCoroutine {
		return o.Next.Go(ctx, name, f)
	}
	return o.Next.Go(ctx, name, func(ctx workflow.Context) {
		defer o.w.observe(ctx, "coroutine")
		f(ctx)
	})
}
