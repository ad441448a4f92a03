package workerapp

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/interceptor"
)

// keepAlive keeps a running activity's heartbeat going between the beats
// it records itself. A device step heartbeats at every poll, but one
// request inside it may take the whole fleet.RequestTimeout (MGS waits up to
// 60 s for an SP): without this, the heartbeat timeout would have to
// exceed the longest request, and a worker that died would be noticed
// only that late. With it, a live worker beats every third of the
// heartbeat timeout, and a dead one stops beating at once, so the timeout
// says how soon a dead worker's step moves on (MGSTiming's
// HeartbeatTimeout), not how long one
// request may take. An activity that hangs is still bounded by its
// start-to-close timeout and its requests by the HTTP timeout.
//
// The repeat carries the details the activity recorded last: the SDK
// keeps only the latest beat's details for a retry to read, so a repeat
// without them would erase them. Nothing is sent before the activity's
// own first beat (a retry reads the previous try's details first).
type keepAlive struct {
	interceptor.WorkerInterceptorBase
}

func (keepAlive) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &keepAliveInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}}
}

// keepAliveInbound is one activity execution's repeater.
type keepAliveInbound struct {
	interceptor.ActivityInboundInterceptorBase
	out *keepAliveOutbound
}

func (i *keepAliveInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	i.out = &keepAliveOutbound{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: outbound}}
	return i.Next.Init(i.out)
}

func (i *keepAliveInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	timeout := i.out.GetInfo(ctx).HeartbeatTimeout
	if timeout <= 0 {
		return i.Next.ExecuteActivity(ctx, in)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		i.out.repeat(ctx, timeout/3, done)
	}()
	// No beat after the activity's end: it would reach a finished task.
	defer wg.Wait()
	defer close(done)
	return i.Next.ExecuteActivity(ctx, in)
}

// keepAliveOutbound remembers the details of the activity's last beat.
type keepAliveOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	mu      sync.Mutex
	details []any
	beaten  bool
}

func (o *keepAliveOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	o.mu.Lock()
	o.details, o.beaten = details, true
	o.mu.Unlock()
	o.Next.RecordHeartbeat(ctx, details...)
}

// repeat beats with the last details every period until done.
func (o *keepAliveOutbound) repeat(ctx context.Context, every time.Duration, done <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			o.mu.Lock()
			details, beaten := o.details, o.beaten
			o.mu.Unlock()
			if beaten {
				o.Next.RecordHeartbeat(ctx, details...)
			}
		}
	}
}
