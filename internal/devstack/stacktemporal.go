package devstack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The stack's Temporal: the CLI's dev server or the real server on the
// stack's PostgreSQL.

func (s *Stack) temporalKind() string {
	if s.opts.Temporal == "" {
		return TemporalDev
	}
	return s.opts.Temporal
}

func (s *Stack) startTemporal(ctx context.Context) error {
	switch s.temporalKind() {
	case TemporalDev:
		if s.opts.TemporalAuth != nil {
			return errors.New("Temporal authorization is the cluster stack's (the dev server has no authorizer to configure)")
		}
		tlog, err := os.Create(filepath.Join(s.opts.Dir, "temporal.log"))
		if err != nil {
			return err
		}
		topts := TemporalOptions{UIPort: s.opts.UIPort, Output: tlog}
		if s.opts.PersistTemporal {
			topts.DBFile = filepath.Join(s.opts.Dir, "temporal.db")
			// History of an earlier run would name updates the fresh fleet
			// and ledger never saw.
			if err := os.Remove(topts.DBFile); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		srv, err := StartTemporal(ctx, topts, s.log)
		if err != nil {
			return err
		}
		s.Temporal = srv
	case TemporalCluster:
		prefix := s.opts.Database
		if prefix == "" {
			prefix = "fleetsaga"
		}
		srv, err := StartCluster(ctx, ClusterOptions{Dir: s.opts.Dir, AdminURL: s.PG.URL, DatabasePrefix: prefix, UIPort: s.opts.UIPort,
			Auth: s.opts.TemporalAuth}, s.log)
		if err != nil {
			return err
		}
		s.Temporal = srv
	default:
		return fmt.Errorf("unknown Temporal stack %q (want %s)", s.opts.Temporal, strings.Join([]string{TemporalDev, TemporalCluster}, " or "))
	}
	return nil
}
