package mgs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// Set is the MGS instances of one rack. TryAll runs a call against them in
// turn, moving on only when Classify says another instance may succeed, and
// remembers the instance that last answered so the next call starts there.
type Set struct {
	mu      sync.Mutex
	clients []*Client
}

// NewSet builds a Set over the MGS base URLs (at least one).
func NewSet(urls []string, hc *http.Client) (*Set, error) {
	if len(urls) == 0 {
		return nil, errors.New("mgs: no MGS instances configured")
	}
	s := &Set{}
	for _, u := range urls {
		s.clients = append(s.clients, New(u, hc))
	}
	return s, nil
}

// Clients returns the instances, the last one that answered first.
func (s *Set) Clients() []*Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Client(nil), s.clients...)
}

// Client returns the instance with base URL base, or nil.
func (s *Set) Client(base string) *Client {
	for _, c := range s.Clients() {
		if c.base == base {
			return c
		}
	}
	return nil
}

func (s *Set) prefer(c *Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.clients {
		if x == c && i > 0 {
			s.clients = append([]*Client{c}, append(s.clients[:i:i], s.clients[i+1:]...)...)
			return
		}
	}
}

// Do runs op against each instance until one succeeds or fails with an
// error that another instance would not fix. When all fail with
// ClassTryNextMGS, the returned error wraps the last one (so Classify still
// says ClassTryNextMGS) and names the others.
func (s *Set) Do(ctx context.Context, op func(ctx context.Context, c *Client) error) error {
	_, err := TryAll(ctx, s, func(ctx context.Context, c *Client) (struct{}, error) {
		return struct{}{}, op(ctx, c)
	})
	return err
}

// TryAll is Do for calls that return a value; it also returns the instance
// that answered.
func TryAll[T any](ctx context.Context, s *Set, op func(ctx context.Context, c *Client) (T, error)) (T, error) {
	v, _, err := TryAllFrom(ctx, s, op)
	return v, err
}

// TryAllFrom is TryAll that also reports which instance answered.
func TryAllFrom[T any](ctx context.Context, s *Set, op func(ctx context.Context, c *Client) (T, error)) (T, *Client, error) {
	var zero T
	var errs []error
	for _, c := range s.Clients() {
		if err := ctx.Err(); err != nil {
			return zero, nil, err
		}
		v, err := op(ctx, c)
		if err == nil {
			s.prefer(c)
			return v, c, nil
		}
		if Classify(err) != ClassTryNextMGS {
			return zero, c, err
		}
		errs = append(errs, err)
	}
	last := errs[len(errs)-1]
	if len(errs) == 1 {
		return zero, nil, last
	}
	return zero, nil, fmt.Errorf("all %d MGS instances failed: %w (earlier: %v)", len(errs), last, errors.Join(errs[:len(errs)-1]...))
}
