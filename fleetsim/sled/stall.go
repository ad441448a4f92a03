package sled

import (
	"context"
	"errors"
	"io"
	"time"
)

// stallHoldLimit lets a stalled PUT go at last: its client gave up long
// before (fleetsaga's stall timeout is 75 s), but a server reading no
// body cannot see the connection close, so without it each stall would
// hold a handler until fleetsim stops.
const stallHoldLimit = 10 * time.Minute

// errStoreStalled ends a PUT the artifact_upload_stall fault held.
var errStoreStalled = errors.New("artifact store stalled (fault artifact_upload_stall)")

// stallingReader passes the first limit bytes of r, then takes no more:
// its next read waits until the request ends, fleetsim closes or
// stallHoldLimit passes, and fails. The client sees a store that stopped
// taking its upload and never answers.
type stallingReader struct {
	ctx, sim context.Context
	r        io.Reader
	left     int64
}

func stalling(ctx, sim context.Context, r io.Reader, limit int64) io.Reader {
	return &stallingReader{ctx: ctx, sim: sim, r: r, left: limit}
}

func (s *stallingReader) Read(b []byte) (int, error) {
	if s.left <= 0 {
		t := time.NewTimer(stallHoldLimit)
		defer t.Stop()
		select {
		case <-s.ctx.Done():
		case <-s.sim.Done():
		case <-t.C:
		}
		return 0, errStoreStalled
	}
	if int64(len(b)) > s.left {
		b = b[:s.left]
	}
	n, err := s.r.Read(b)
	s.left -= int64(n)
	return n, err
}
