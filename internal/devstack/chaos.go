package devstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// Helpers for the chaos harness (chaos/): restart Temporal in place and
// watch worker processes.

// RestartTemporal stops Temporal and starts it again on the same port. The
// dev server keeps history and visibility with PersistTemporal (a database
// file); the cluster always does (PostgreSQL). Clients and workers
// reconnect by themselves.
func (s *Stack) RestartTemporal(ctx context.Context) error {
	if s.Temporal == nil {
		return errors.New("no Temporal server to restart")
	}
	if c, ok := s.Temporal.(*ClusterServer); ok {
		return c.Restart(ctx)
	}
	_, portStr, err := net.SplitHostPort(s.Temporal.FrontendHostPort())
	if err != nil {
		return fmt.Errorf("restart Temporal: %w", err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("restart Temporal: port %q: %w", portStr, err)
	}
	// Stop sends an interrupt and waits; the exit status of an interrupted
	// server is not an error here.
	_ = s.Temporal.Stop()
	s.Temporal = nil
	out, err := os.OpenFile(filepath.Join(s.opts.Dir, "temporal.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	topts := TemporalOptions{Port: port, UIPort: s.opts.UIPort, Output: out}
	if s.opts.PersistTemporal {
		topts.DBFile = filepath.Join(s.opts.Dir, "temporal.db")
	}
	srv, err := StartTemporal(ctx, topts, s.log)
	if err != nil {
		out.Close()
		return fmt.Errorf("restart Temporal on port %d: %w", port, err)
	}
	s.Temporal = srv
	return nil
}

// WorkerExited reports whether worker i's process has ended (crashed, or
// exited because what it needs was down when it started).
func (s *Stack) WorkerExited(i int) bool {
	return s.Workers[i].Exited()
}

// StartWorker starts worker i again after it exited (RestartWorker kills a
// running one first).
func (s *Stack) StartWorker(i int) error {
	w, err := s.startWorker(i)
	if err != nil {
		return err
	}
	s.Workers[i] = w
	return nil
}

// Exited reports whether the process has ended, without waiting.
func (p *Proc) Exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}
