package sled

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/google/uuid"
	_ "github.com/lib/pq" // PostgreSQL driver
)

// The simulated Nexus database follows omicron's (CockroachDB, database
// omicron, schema public): its tables are omicron.public.saga and
// omicron.public.sled. PostgreSQL cannot name another database, so fleetsim
// keeps them in schema omicron of Env.DatabaseURL, and clients reach them by
// their unqualified names with search_path=omicron (fleet.FleetsimNexusDB):
// the same SQL then runs against a real rack's database omicron.
//
// omicron.saga has omicron's columns (id, creator, time_created, name,
// saga_dag, saga_state enum, current_sec, adopt_generation, adopt_time),
// plus what the simulation needs: current_sec NULL means no Nexus has
// claimed the saga yet, adopt_time NULL means it was never reassigned, and
// time_claimed / time_finished. omicron.sled has omicron's columns fleetsaga
// reads (id, rack_id, is_scrimlet, serial_number, part_number, ip, port,
// sled_policy, sled_state, time_deleted); fleetsim records each sled-agent's
// loopback listener there. fleet/nexusdb reads and reassigns them.
//
// fleetsim.saga_history is an append-only log (a trigger refuses UPDATE and
// DELETE) of every claim, adoption and finish with the Nexus that did it and
// the adopt generation, so tests can prove who owned what and when.
const nexusSchemaSQL = `
CREATE SCHEMA IF NOT EXISTS omicron;
CREATE SCHEMA IF NOT EXISTS fleetsim;
DO $$ BEGIN
	CREATE TYPE omicron.saga_state AS ENUM ('running', 'unwinding', 'done', 'abandoned');
EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN
	CREATE TYPE omicron.sled_policy AS ENUM ('in_service', 'no_provision', 'expunged');
EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN
	CREATE TYPE omicron.sled_state AS ENUM ('active', 'decommissioned');
EXCEPTION WHEN duplicate_object THEN NULL; END $$;
CREATE TABLE IF NOT EXISTS omicron.saga (
	id               uuid               PRIMARY KEY,
	creator          uuid               NOT NULL,
	time_created     timestamptz        NOT NULL DEFAULT now(),
	name             text               NOT NULL,
	saga_dag         jsonb              NOT NULL DEFAULT '{}',
	saga_state       omicron.saga_state NOT NULL DEFAULT 'running',
	current_sec      uuid,
	adopt_generation bigint             NOT NULL DEFAULT 1,
	adopt_time       timestamptz,
	time_claimed     timestamptz,
	time_finished    timestamptz
);
CREATE INDEX IF NOT EXISTS saga_unclaimed ON omicron.saga (time_created, id)
	WHERE current_sec IS NULL AND saga_state = 'running';
CREATE INDEX IF NOT EXISTS saga_by_sec ON omicron.saga (current_sec)
	WHERE saga_state NOT IN ('done', 'abandoned');
CREATE TABLE IF NOT EXISTS omicron.sled (
	id            uuid                PRIMARY KEY,
	time_created  timestamptz         NOT NULL DEFAULT now(),
	time_modified timestamptz         NOT NULL DEFAULT now(),
	time_deleted  timestamptz,
	rack_id       uuid                NOT NULL,
	is_scrimlet   bool                NOT NULL,
	serial_number text                NOT NULL,
	part_number   text                NOT NULL,
	ip            inet                NOT NULL,
	port          int4                NOT NULL CHECK (port BETWEEN 0 AND 65535),
	sled_policy   omicron.sled_policy NOT NULL DEFAULT 'in_service',
	sled_state    omicron.sled_state  NOT NULL DEFAULT 'active'
);
CREATE TABLE IF NOT EXISTS fleetsim.saga_history (
	seq              bigserial   PRIMARY KEY,
	saga_id          uuid        NOT NULL REFERENCES omicron.saga (id),
	sec              uuid        NOT NULL,
	event            text        NOT NULL CHECK (event IN ('claim', 'adopt', 'finish')),
	adopt_generation bigint      NOT NULL,
	at               timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS saga_history_by_sec ON fleetsim.saga_history (sec, event);
CREATE OR REPLACE FUNCTION fleetsim.saga_history_append_only() RETURNS trigger
	LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'fleetsim.saga_history is append-only';
END $$;
CREATE OR REPLACE TRIGGER saga_history_append_only
	BEFORE UPDATE OR DELETE ON fleetsim.saga_history
	FOR EACH ROW EXECUTE FUNCTION fleetsim.saga_history_append_only();
`

// recordSleds writes every sled into omicron.sled with its sled-agent's
// listener address (fleetsim's sled-agents listen on loopback). A sled
// already there (another fleetsim on the same database) is updated.
func (d *Domain) recordSleds(ctx context.Context) error {
	for _, rack := range d.env.Spec.Racks {
		rackID := RackUUID(rack.ID)
		for _, s := range rack.Sleds {
			sa := d.sleds[s.ID]
			host, port, err := net.SplitHostPort(sa.address)
			if err != nil {
				return fmt.Errorf("fleetsim sled %s: address %q: %w", s.ID, sa.address, err)
			}
			if _, err := d.db.ExecContext(ctx, `
INSERT INTO omicron.sled (id, rack_id, is_scrimlet, serial_number, part_number, ip, port)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (id) DO UPDATE SET rack_id = $2, is_scrimlet = $3, serial_number = $4, part_number = $5,
	ip = $6, port = $7, time_modified = now(), time_deleted = NULL, sled_policy = 'in_service', sled_state = 'active'`,
				s.ID, rackID, sa.scrimlet, s.Serial, s.Part, host, port); err != nil {
				return fmt.Errorf("fleetsim sled %s: record in omicron.sled: %w", s.ID, err)
			}
		}
	}
	return nil
}

// RackUUID is the rack_id fleetsim records for a spec rack (whose ID is a name).
func RackUUID(name string) uuid.UUID {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte("fleetsim rack "+name))
}

const (
	// sagasCreatedPerTick is how many new sagas each running Nexus creates
	// every NexusClaimInterval (they start unclaimed).
	sagasCreatedPerTick = 1
	// claimBatch is how many unclaimed sagas a Nexus claims per tick at most.
	claimBatch = 2
)

var sagaNames = []string{"instance-create", "disk-create", "snapshot-create", "instance-migrate", "vpc-create", "project-create"}

// openNexusDB connects and creates the schema (serialized across fleetsims
// sharing the database by an advisory lock).
func openNexusDB(ctx context.Context, url string) (*sql.DB, error) {
	db, err := sql.Open("postgres", url)
	if err != nil {
		return nil, fmt.Errorf("fleetsim sled: nexus database: %w", err)
	}
	db.SetMaxOpenConns(16)
	if err := setupNexusSchema(ctx, db); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

func setupNexusSchema(ctx context.Context, db *sql.DB) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fleetsim sled: nexus database: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('fleetsim.nexus'))`); err != nil {
		return fmt.Errorf("fleetsim sled: nexus schema lock: %w", err)
	}
	if _, err := tx.ExecContext(ctx, nexusSchemaSQL); err != nil {
		return fmt.Errorf("fleetsim sled: create nexus schema: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fleetsim sled: create nexus schema: %w", err)
	}
	return nil
}

// nexusSim is one Nexus instance: while its zone is present it creates,
// claims, adopts and finishes sagas every NexusClaimInterval.
type nexusSim struct {
	d     *Domain
	zone  uuid.UUID
	sled  uuid.UUID
	stopC context.CancelFunc
	done  chan struct{}

	mu        sync.Mutex
	running   bool
	startedAt time.Time
	stoppedAt time.Time
	created   int64
	claimed   int64
	adopted   int64
	finished  int64
	lastClaim time.Time
	lastErr   string
}

// startNexus starts (or restarts) the Nexus of zone on sled.
func (d *Domain) startNexus(sled, zone uuid.UUID) {
	d.nexusMu.Lock()
	defer d.nexusMu.Unlock()
	n := d.nexus[zone]
	if n != nil {
		n.mu.Lock()
		running := n.running
		n.mu.Unlock()
		if running {
			return
		}
	} else {
		n = &nexusSim{d: d, zone: zone, sled: sled}
		d.nexus[zone] = n
	}
	ctx, cancel := context.WithCancel(d.ctx)
	n.mu.Lock()
	n.running, n.startedAt, n.stoppedAt = true, time.Now(), time.Time{}
	n.stopC, n.done = cancel, make(chan struct{})
	n.mu.Unlock()
	if d.db == nil {
		close(n.done) // simulation disabled: a Nexus that does nothing
		return
	}
	go n.loop(ctx)
}

// stopNexus stops the Nexus of zone (if any) and waits until its loop, and
// any statement it had in flight, has ended.
func (d *Domain) stopNexus(zone uuid.UUID) {
	d.nexusMu.Lock()
	n := d.nexus[zone]
	d.nexusMu.Unlock()
	if n != nil {
		n.stop()
	}
}

func (n *nexusSim) stop() {
	n.mu.Lock()
	if !n.running {
		n.mu.Unlock()
		return
	}
	cancel, done := n.stopC, n.done
	n.mu.Unlock()
	cancel()
	<-done
	n.mu.Lock()
	n.running, n.stoppedAt = false, time.Now()
	n.mu.Unlock()
}

func (n *nexusSim) loop(ctx context.Context) {
	defer close(n.done)
	every := n.d.env.Scale(n.d.env.Spec.Timings.NexusClaimInterval.Duration)
	if every <= 0 {
		every = time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tick is one round of a Nexus's saga work. Each statement is its own
// transaction; a failing one is logged and retried next tick.
func (n *nexusSim) tick(ctx context.Context) {
	runFor := n.d.env.Scale(n.d.env.Spec.Timings.SagaRunTime.Duration)
	steps := []struct {
		name string
		fn   func(context.Context) (int64, error)
		cnt  *int64
	}{
		{"create", n.create, &n.created},
		{"claim", n.claim, &n.claimed},
		{"adopt", n.adopt, &n.adopted},
		{"finish", func(ctx context.Context) (int64, error) { return n.finish(ctx, runFor) }, &n.finished},
	}
	for _, st := range steps {
		if ctx.Err() != nil {
			return
		}
		k, err := st.fn(ctx)
		n.mu.Lock()
		if err != nil && ctx.Err() == nil {
			n.lastErr = st.name + ": " + err.Error()
			n.mu.Unlock()
			n.d.log.Warn().Err(err).Str("nexus", n.zone.String()).Str("step", st.name).Msg("nexus saga step failed")
			continue
		}
		*st.cnt += k
		if st.name == "claim" && k > 0 {
			n.lastClaim = time.Now()
		}
		n.mu.Unlock()
	}
}

func (n *nexusSim) create(ctx context.Context) (int64, error) {
	var total int64
	for i := 0; i < sagasCreatedPerTick; i++ {
		n.mu.Lock()
		name := sagaNames[int(n.created+int64(i))%len(sagaNames)]
		n.mu.Unlock()
		res, err := n.d.db.ExecContext(ctx,
			`INSERT INTO omicron.saga (id, creator, name) VALUES ($1, $2, $3)`, uuid.New(), n.zone, name)
		if err != nil {
			return total, err
		}
		k, _ := res.RowsAffected()
		total += k
	}
	return total, nil
}

// claim takes up to claimBatch unclaimed sagas (SKIP LOCKED: Nexus instances
// never wait for each other) and logs each claim.
func (n *nexusSim) claim(ctx context.Context) (int64, error) {
	return execCount(ctx, n.d.db, `
WITH c AS (
	SELECT id FROM omicron.saga
	WHERE current_sec IS NULL AND saga_state = 'running'
	ORDER BY time_created, id LIMIT $2
	FOR UPDATE SKIP LOCKED
), u AS (
	UPDATE omicron.saga s SET current_sec = $1, time_claimed = now()
	FROM c WHERE s.id = c.id
	RETURNING s.id, s.adopt_generation
)
INSERT INTO fleetsim.saga_history (saga_id, sec, event, adopt_generation)
SELECT id, $1, 'claim', adopt_generation FROM u`, n.zone, claimBatch)
}

// adopt recovers sagas reassigned to this Nexus (once per adopt generation).
func (n *nexusSim) adopt(ctx context.Context) (int64, error) {
	return execCount(ctx, n.d.db, `
INSERT INTO fleetsim.saga_history (saga_id, sec, event, adopt_generation)
SELECT s.id, $1, 'adopt', s.adopt_generation FROM omicron.saga s
WHERE s.current_sec = $1 AND s.saga_state = 'running' AND s.adopt_time IS NOT NULL
  AND NOT EXISTS (
	SELECT 1 FROM fleetsim.saga_history h
	WHERE h.saga_id = s.id AND h.event = 'adopt' AND h.sec = $1 AND h.adopt_generation = s.adopt_generation)`, n.zone)
}

// finish completes this Nexus's sagas that have run for runFor since it
// claimed or adopted them.
func (n *nexusSim) finish(ctx context.Context, runFor time.Duration) (int64, error) {
	return execCount(ctx, n.d.db, `
WITH u AS (
	UPDATE omicron.saga SET saga_state = 'done', time_finished = now()
	WHERE current_sec = $1 AND saga_state = 'running'
	  AND GREATEST(time_claimed, adopt_time) <= now() - $2 * interval '1 microsecond'
	RETURNING id, adopt_generation
)
INSERT INTO fleetsim.saga_history (saga_id, sec, event, adopt_generation)
SELECT id, $1, 'finish', adopt_generation FROM u`, n.zone, runFor.Microseconds())
}

func execCount(ctx context.Context, db *sql.DB, q string, args ...any) (int64, error) {
	res, err := db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	k, err := res.RowsAffected()
	if err != nil {
		return 0, errors.Join(errors.New("rows affected"), err)
	}
	return k, nil
}
