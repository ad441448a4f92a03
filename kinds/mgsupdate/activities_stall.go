package mgsupdate

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"
)

// A transfer of an image (an artifact's download, the phase 2 upload) has
// no timeout of its own: about 1 GiB takes minutes on a slow link, and a
// whole-request timeout would cut it off and start it again until the
// step's deadline. A stall bounds it instead: no progress for a named
// duration. The activity's deadline still bounds the whole.

// stallWatch cancels its context with cause once alive was not called
// for limit.
type stallWatch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	limit  time.Duration
	cause  error
}

func watchStalls(ctx context.Context, limit time.Duration, cause error) *stallWatch {
	w := &stallWatch{limit: limit, cause: cause}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	w.timer = time.AfterFunc(limit, func() { w.cancel(cause) })
	return w
}

// alive records progress: the limit starts again.
func (w *stallWatch) alive() { w.timer.Reset(w.limit) }

// stalled says whether the watch ended its context.
func (w *stallWatch) stalled() bool { return errors.Is(context.Cause(w.ctx), w.cause) }

func (w *stallWatch) stop() {
	w.timer.Stop()
	w.cancel(nil)
}

// stallBody is a response body whose reads keep its watch alive; a read
// the watch cut off says so, and its Close ends the watch.
type stallBody struct {
	rc io.ReadCloser
	w  *stallWatch
	n  int64
	// stalledErr makes the error of a read cut off by a stall.
	stalledErr func(read int64) error
}

func (b *stallBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.n += int64(n)
		b.w.alive()
	}
	if err != nil && err != io.EOF && b.w.stalled() {
		err = b.stalledErr(b.n)
	}
	return n, err
}

func (b *stallBody) Close() error {
	b.w.stop()
	return b.rc.Close()
}

// untimed is hc without its whole-request timeout, for a transfer a
// stallWatch bounds.
func untimed(hc *http.Client) *http.Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	c := *hc
	c.Timeout = 0
	return &c
}
