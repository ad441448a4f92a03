package sled

import (
	"context"
	"io"
	"time"
)

// pacedShare is the slice of a second a paced read takes at most: the
// body moves in steps of a twentieth of the rate, so a client sees its
// upload advance smoothly, not in bursts of a second's worth.
const pacedShare = 20

// pacedReader reads r no faster than rate bytes a second (the artifact
// store's write rate, spec artifactStoreBytesPerSecond × SpeedUp), until
// ctx ends (the request or fleetsim closing).
type pacedReader struct {
	ctx   context.Context
	r     io.Reader
	rate  float64
	start time.Time
	n     int64
}

func paced(ctx context.Context, r io.Reader, rate float64) io.Reader {
	if rate <= 0 {
		return r
	}
	return &pacedReader{ctx: ctx, r: r, rate: rate, start: time.Now()}
}

func (p *pacedReader) Read(b []byte) (int, error) {
	due := p.start.Add(time.Duration(float64(p.n) / p.rate * float64(time.Second)))
	if wait := time.Until(due); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-p.ctx.Done():
			t.Stop()
			return 0, p.ctx.Err()
		}
	}
	step := max(int(p.rate/pacedShare), 1)
	if len(b) > step {
		b = b[:step]
	}
	n, err := p.r.Read(b)
	p.n += int64(n)
	return n, err
}
