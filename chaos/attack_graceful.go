package chaos

import (
	"context"
	"time"

	"github.com/fleetsaga/fleetsaga/workerapp"
)

// The graceful-restart attack: workers restarted in turn with SIGTERM, as a
// rolling deploy or a node drain does. A stopping worker stops polling,
// lets its running activities finish for up to its stop timeout
// (workerapp.DefaultStopTimeout) and hands the rest back; it is started
// again once it exited. Kills and the supervisor leave it alone meanwhile.

// gracefulGrace bounds the wait for a worker to exit on SIGTERM: its stop
// timeout, plus time to close its clients; past it the worker is killed
// and the restart does not count as graceful.
const gracefulGrace = workerapp.DefaultStopTimeout + 10*time.Second

// gracefulRestarts restarts the workers in turn, one at a time, every
// GracefulGap (random within), until the rollout ends.
func (h *harness) gracefulRestarts(ctx context.Context, done <-chan struct{}) {
	if h.cfg.GracefulRestarts == 0 {
		return
	}
	gap := h.cfg.GracefulGap
	for next := 0; ; next++ {
		wait := gap[0] + time.Duration(h.grng.Int63n(int64(gap[1]-gap[0])+1))
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-time.After(wait):
		}
		h.restartGracefully(next % h.cfg.Workers)
	}
}

// restartGracefully SIGTERMs worker i, waits for it to exit (without
// holding the harness's lock, so kills and restarts of the others go
// on) and starts it again.
func (h *harness) restartGracefully(i int) {
	h.mu.Lock()
	if h.stack.WorkerExited(i) {
		h.mu.Unlock()
		return // the supervisor restarts it
	}
	p := h.stack.Workers[i]
	h.stopping = i
	h.mu.Unlock()

	t0 := time.Now()
	err := p.Terminate(gracefulGrace)
	took := time.Since(t0)

	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopping = -1
	if serr := h.stack.StartWorker(i); serr != nil {
		h.say("graceful restart of worker-%d: start again: %v", i, serr)
		return
	}
	if took >= gracefulGrace {
		h.say("graceful restart of worker-%d: it did not exit within %s and was killed (%v)", i, gracefulGrace, err)
		return
	}
	h.rep.GracefulRestarts++
	h.log.Info().Int("worker", i).Dur("stopped_in", took).Int("graceful", h.rep.GracefulRestarts).Msg("SIGTERMed a worker, it exited, started it again")
}
