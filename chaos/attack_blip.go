package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// The PostgreSQL blip: while an SP firmware or host
// flash start is in flight (its attempt recorded, MGS not yet known to
// have accepted it: no ledger `start` event), the ledger's database drops
// every connection and refuses new ones for a moment. A start whose
// "accepted" record is lost to the blip must never be sent again.

const (
	// blipHold is how long the database refuses connections: longer than
	// a start's ledger write (milliseconds), shorter than any activity
	// timeout, so the write fails and the step must cope.
	blipHold = 1500 * time.Millisecond
	// blipPoll is how often the watcher reads the ledger for starts in
	// flight: a start (prechecks, the upload, the start event) takes a few
	// hundred milliseconds at chaos speed.
	blipPoll = 50 * time.Millisecond
	// blipFresh: an attempt recorded longer ago without a start event is
	// waiting (for a foreign update, a retry), not starting.
	blipFresh = 3 * time.Second
	// blipRestore bounds the calls that let connections in again, which
	// must run even when the run is being stopped.
	blipRestore = 30 * time.Second
)

// startsInFlight counts, per MGS kind, the attempts recorded within
// blipFresh whose start MGS has not been recorded as accepting yet.
const startsInFlightSQL = `SELECT a.kind, count(*) FROM update_attempt a
	WHERE a.kind IN ($1, $2) AND a.state IN ('pending', 'running') AND a.created_at > now() - $3::interval
	  AND NOT EXISTS (SELECT 1 FROM update_event e WHERE e.attempt_id = a.id AND e.step = 'start')
	GROUP BY a.kind`

// blipWatch fires cfg.PGBlips blips, each on an MGS kind not blipped yet
// while there is one, while the SP stages run.
func (h *harness) blipWatch(ctx context.Context, done <-chan struct{}) {
	if h.cfg.PGBlips <= 0 {
		return
	}
	db, err := sql.Open("postgres", h.stack.DatabaseURL)
	if err != nil {
		h.say("PostgreSQL blip: %v", err)
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	hit := map[string]bool{}
	t := time.NewTicker(blipPoll)
	defer t.Stop()
	for h.rep.PGBlips < h.cfg.PGBlips {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-t.C:
		}
		if k := h.stageKind[h.stageNow.Load()]; k != workflows.KindSPFirmware && k != workflows.KindHostFlash {
			continue
		}
		inFlight, err := startsInFlight(ctx, db)
		if err != nil || len(inFlight) == 0 {
			continue
		}
		// Each MGS kind once before either twice.
		kind := ""
		for k := range inFlight {
			if !hit[k] && (kind == "" || k < kind) {
				kind = k
			}
		}
		if kind == "" && len(hit) < 2 {
			continue
		}
		if kind == "" {
			clear(hit)
			continue
		}
		n := inFlight[kind]
		if err := h.blip(kind, n); err != nil {
			h.say("PostgreSQL blip: %v", err)
			continue
		}
		hit[kind] = true
	}
}

func startsInFlight(ctx context.Context, db *sql.DB) (map[string]int, error) {
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	rows, err := db.QueryContext(qctx, startsInFlightSQL, string(workflows.KindSPFirmware), string(workflows.KindHostFlash),
		fmt.Sprintf("%d milliseconds", blipFresh.Milliseconds()))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return nil, err
		}
		out[k] = n
	}
	return out, rows.Err()
}

// blip drops every connection to the ledger's database and refuses new
// ones for blipHold (ALLOW_CONNECTIONS, set from the server's admin
// database), as a PostgreSQL that went away for a moment would.
func (h *harness) blip(kind string, starts int) error {
	name, err := databaseName(h.stack.DatabaseURL)
	if err != nil {
		return err
	}
	admin, err := sql.Open("postgres", h.stack.PG.URL)
	if err != nil {
		return err
	}
	defer admin.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), blipRestore)
	defer cancel()
	ident := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
	if _, err := admin.ExecContext(ctx, `ALTER DATABASE `+ident+` ALLOW_CONNECTIONS false`); err != nil {
		return fmt.Errorf("refuse connections to %s: %w", name, err)
	}
	t0 := time.Now()
	var dropped int
	err = admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1`, name).Scan(&dropped)
	time.Sleep(blipHold - time.Since(t0))
	for {
		_, rerr := admin.ExecContext(ctx, `ALTER DATABASE `+ident+` ALLOW_CONNECTIONS true`)
		if rerr == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("let connections to %s in again: %w", name, rerr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("drop the connections to %s: %w", name, err)
	}
	h.rep.PGBlips++
	h.rep.BlipStarts += starts
	h.say("PostgreSQL blip (%s): %d connections dropped, new ones refused for %s, with %d %s start(s) in flight",
		name, dropped, blipHold, starts, kind)
	return nil
}

func databaseName(dbURL string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", fmt.Errorf("the ledger's database URL does not parse")
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return "", fmt.Errorf("the ledger's database URL names no database")
	}
	return name, nil
}
