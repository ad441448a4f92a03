// Package ledger is fleetsaga's system of record in PostgreSQL: every update
// attempt is written as intent before any device is touched, then its
// progress, events and outcome. Every write is idempotent, because Temporal
// retries the activities that make them.
package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// State is an attempt's lifecycle state.
type State string

const (
	StatePending   State = "pending"   // intent written, device not touched yet
	StateRunning   State = "running"   // the device has been asked to act
	StateCompleted State = "completed" // ended as intended (including "no change needed")
	StateFailed    State = "failed"
	StateCancelled State = "cancelled"
)

// Active reports whether s holds the target's single active slot.
func (s State) Active() bool { return s == StatePending || s == StateRunning }

// Terminal reports whether the attempt has ended.
func (s State) Terminal() bool {
	return s == StateCompleted || s == StateFailed || s == StateCancelled
}

// Attempt is one try at one update. UpdateID is the workflow ID; an update
// may take several attempts (each with its own UUID sent to the device).
type Attempt struct {
	ID         uuid.UUID  `json:"id"`
	UpdateID   string     `json:"updateId"`
	Attempt    int        `json:"attempt"`
	Kind       string     `json:"kind"`
	Target     string     `json:"target"`
	Artifact   string     `json:"artifact"`
	State      State      `json:"state"`
	Phase      string     `json:"phase"`
	Done       int64      `json:"done"`
	Total      int64      `json:"total"`
	Outcome    string     `json:"outcome"`
	Error      string     `json:"error,omitempty"`
	WorkflowID string     `json:"workflowId"`
	RunID      string     `json:"runId"`
	CreatedAt  time.Time  `json:"createdAt"`
	UpdatedAt  time.Time  `json:"updatedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// Event is one append-only entry of an attempt's history. (AttemptID, Step)
// is unique: appending the same step twice keeps the first.
type Event struct {
	Seq       int64     `json:"seq"`
	AttemptID uuid.UUID `json:"attemptId"`
	Step      string    `json:"step"`
	State     string    `json:"state,omitempty"`
	Message   string    `json:"message,omitempty"`
	Worker    string    `json:"worker,omitempty"`
	At        time.Time `json:"at"`
	// PrevHash and Hash chain the attempt's events (audit.go); the
	// ledger sets them as it appends.
	PrevHash string `json:"prevHash,omitempty"`
	Hash     string `json:"hash,omitempty"`
}

// ErrTargetBusy says another attempt is active on the target.
type ErrTargetBusy struct {
	Target   string
	ActiveID uuid.UUID
	UpdateID string
	// WorkflowID and RunID own the active attempt.
	WorkflowID string
	RunID      string
}

func (e *ErrTargetBusy) Error() string {
	return fmt.Sprintf("target %s is busy: update %s (attempt %s) is active", e.Target, e.UpdateID, e.ActiveID)
}

// ErrNotFound is returned for an unknown attempt ID.
var ErrNotFound = errors.New("ledger: no such attempt")

// Store is the ledger over one PostgreSQL database.
type Store struct {
	db    *sql.DB
	heads *headSigner // nil: chain heads are not signed (WithHeadSigner)
}

// ledgerPool bounds one process's ledger connections.
const ledgerPool = 20

// Open connects to url and checks that the database answers. Its errors
// never hold url's password (CheckDSN, RedactError).
func Open(ctx context.Context, url string) (*Store, error) {
	if err := CheckDSN(url); err != nil {
		return nil, err
	}
	cfg, err := pq.NewConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open ledger database: %w", RedactError(err, url))
	}
	connector, err := pq.NewConnectorConfig(pinSessionSettings(cfg))
	if err != nil {
		return nil, fmt.Errorf("open ledger database: %w", RedactError(err, url))
	}
	db := sql.OpenDB(connector)
	// Keep as many idle as open: a worker's activities write in bursts, and
	// database/sql's default of two idle connections closes and reopens
	// the rest around every burst (a backend fork and a login each).
	db.SetMaxOpenConns(ledgerPool)
	db.SetMaxIdleConns(ledgerPool)
	db.SetConnMaxIdleTime(time.Minute)
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger database %s does not answer: %w", RedactURL(url), RedactError(err, url))
	}
	return &Store{db: db}, nil
}

// sessionSettings are the server settings the ledger relies on, sent in
// every connection's startup packet, which takes precedence over the
// login's and the database's own (ALTER ROLE … SET, ALTER DATABASE … SET):
// a login may change its own defaults, and whoever holds a worker's
// password could make every later session of that worker read-only (it
// stops) or commit without waiting for the WAL flush (a crash of the
// database server then loses a send record the worker acted on:
// kinds/mgsupdate/activities_send_record.go). search_path is the schema
// the migrations create (schema/0018_function_search_path.sql names it).
var sessionSettings = map[string]string{
	"default_transaction_read_only": "off",
	"default_transaction_isolation": "read committed",
	"synchronous_commit":            "on",
	"search_path":                   "public",
}

// pinSessionSettings adds sessionSettings to cfg's run-time parameters,
// except those the connection string already sets (as a parameter, or as
// -c name=value in options): an operator's choice stays theirs.
func pinSessionSettings(cfg pq.Config) pq.Config {
	cfg = cfg.Clone()
	if cfg.Runtime == nil {
		cfg.Runtime = map[string]string{}
	}
	for k, v := range sessionSettings {
		if _, set := cfg.Runtime[k]; set || optionsSet(cfg.Options, k) {
			continue
		}
		cfg.Runtime[k] = v
	}
	return cfg
}

// optionsSet says whether a libpq options string ("-c a=b -c c=d",
// "--a=b") sets name.
func optionsSet(options, name string) bool {
	fields := strings.Fields(options)
	for i, f := range fields {
		var kv string
		switch {
		case f == "-c" && i+1 < len(fields):
			kv = fields[i+1]
		case strings.HasPrefix(f, "-c"):
			kv = f[2:]
		case strings.HasPrefix(f, "--"):
			kv = f[2:]
		default:
			continue
		}
		k, _, _ := strings.Cut(kv, "=")
		if strings.ReplaceAll(strings.ToLower(k), "-", "_") == name {
			return true
		}
	}
	return false
}

// NewStore wraps an open database.
func NewStore(db *sql.DB) *Store { return &Store{db: db} }

// DB is the underlying database, for domain tables.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Migrate applies the embedded migrations.
func (s *Store) Migrate(ctx context.Context) ([]int, error) { return Migrate(ctx, s.db) }

// RecordIntent writes a new attempt in state pending. Writing the same
// attempt again is a no-op (see AdoptIntent); a different active attempt on
// the same target yields *ErrTargetBusy; the same attempt ended yields
// ErrAttemptEnded.
func (s *Store) RecordIntent(ctx context.Context, a Attempt) error {
	_, err := s.AdoptIntent(ctx, a)
	return err
}

// AdoptIntent is RecordIntent that also says whether the attempt was
// already recorded, active, by another run of the same workflow: a run
// reset by an operator derives the same attempt ID as the run it replaces
// and takes its attempt over (the row then names the new run).
func (s *Store) AdoptIntent(ctx context.Context, a Attempt) (adopted bool, err error) {
	if a.ID == uuid.Nil || a.UpdateID == "" || a.Kind == "" || a.Target == "" || a.Attempt < 1 {
		return false, fmt.Errorf("ledger: intent needs id, update id, kind, target and attempt >= 1")
	}
	err = s.db.QueryRowContext(ctx, `
		INSERT INTO update_attempt (id, update_id, attempt, kind, target, artifact, state, workflow_id, run_id)
		VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8)
		ON CONFLICT (id) DO UPDATE SET run_id = EXCLUDED.run_id, updated_at = now()
		 WHERE update_attempt.workflow_id = EXCLUDED.workflow_id AND update_attempt.run_id <> EXCLUDED.run_id
		   AND update_attempt.state IN ('pending', 'running')
		RETURNING xmax <> 0`,
		a.ID, a.UpdateID, a.Attempt, a.Kind, a.Target, a.Artifact, a.WorkflowID, a.RunID).Scan(&adopted)
	if errors.Is(err, sql.ErrNoRows) { // recorded before, and not adopted: check below
		err = nil
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && pqErr.Code == "23505" {
		if pqErr.Constraint == "update_attempt_one_active_per_target" {
			if active, aerr := s.ActiveForTarget(ctx, a.Target); aerr == nil && active != nil {
				return false, &ErrTargetBusy{Target: a.Target, ActiveID: active.ID, UpdateID: active.UpdateID,
					WorkflowID: active.WorkflowID, RunID: active.RunID}
			}
			return false, &ErrTargetBusy{Target: a.Target}
		}
		return false, fmt.Errorf("ledger: attempt %d of run %s of %s already recorded with another id", a.Attempt, a.RunID, a.WorkflowID)
	}
	if err != nil {
		return false, fmt.Errorf("ledger: record intent: %w", err)
	}
	got, err := s.Get(ctx, a.ID)
	if err != nil {
		return false, err
	}
	if got.UpdateID != a.UpdateID || got.Target != a.Target {
		return false, fmt.Errorf("ledger: attempt id %s already belongs to %s attempt %d", a.ID, got.UpdateID, got.Attempt)
	}
	if got.State.Terminal() {
		return false, ErrAttemptEnded
	}
	return adopted, nil
}

// ErrAttemptEnded is the intent of an attempt that has already ended: a
// workflow reset to before an attempt it finished derives that attempt's
// ID again, and must record a new attempt instead.
var ErrAttemptEnded = errors.New("ledger: the attempt has already ended")

// Progress is a progress report for an attempt.
type Progress struct {
	AttemptID uuid.UUID `json:"attemptId"`
	Phase     string    `json:"phase"`
	Done      int64     `json:"done"`
	Total     int64     `json:"total"`
}

// SetProgress records the attempt's phase and progress and moves a pending
// attempt to running. Ended attempts are left as they are.
func (s *Store) SetProgress(ctx context.Context, p Progress) error {
	res, err := s.db.ExecContext(ctx, `
		UPDATE update_attempt
		   SET phase = $2, progress_done = $3, progress_total = $4, state = 'running', updated_at = now()
		 WHERE id = $1 AND state IN ('pending', 'running')`,
		p.AttemptID, p.Phase, p.Done, p.Total)
	if err != nil {
		return fmt.Errorf("ledger: set progress: %w", err)
	}
	return s.mustExist(ctx, res, p.AttemptID)
}

// Finish is the end of an attempt.
type Finish struct {
	AttemptID uuid.UUID `json:"attemptId"`
	State     State     `json:"state"`
	Outcome   string    `json:"outcome"`
	Error     string    `json:"error,omitempty"`
}

// FinishAttempt ends an attempt. Finishing an ended attempt again is a
// no-op: the first ending stands.
func (s *Store) FinishAttempt(ctx context.Context, f Finish) error {
	if !f.State.Terminal() {
		return fmt.Errorf("ledger: finish with non-terminal state %q", f.State)
	}
	res, err := s.db.ExecContext(ctx, `
		UPDATE update_attempt
		   SET state = $2, outcome = $3, error = $4, updated_at = now(), finished_at = now()
		 WHERE id = $1 AND state IN ('pending', 'running')`,
		f.AttemptID, string(f.State), f.Outcome, f.Error)
	if err != nil {
		return fmt.Errorf("ledger: finish attempt: %w", err)
	}
	return s.mustExist(ctx, res, f.AttemptID)
}

// AppendEvent adds an event; the same (attempt, step) twice keeps the
// first. The ledger chains it to the attempt's event before (a trigger,
// in the same transaction: schema/0009_audit_chain.sql).
func (s *Store) AppendEvent(ctx context.Context, e Event) error {
	err := s.appendToChain(ctx, chainAppend{table: "update_event", chain: "attempt " + e.AttemptID.String(),
		insert: func(q execQuerier) (r chainRow, err error) {
			err = q.QueryRowContext(ctx, `
			INSERT INTO update_event (attempt_id, step, state, message, worker)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (attempt_id, step) DO NOTHING
			RETURNING seq, prev_hash, hash`,
				e.AttemptID, e.Step, e.State, e.Message, e.Worker).Scan(&r.seq, &r.prevHash, &r.hash)
			return r, err
		},
		existing: func(q execQuerier) (r chainRow, err error) {
			err = q.QueryRowContext(ctx, `SELECT seq, prev_hash, hash FROM update_event WHERE attempt_id = $1 AND step = $2`,
				e.AttemptID, e.Step).Scan(&r.seq, &r.prevHash, &r.hash)
			return r, err
		},
	})
	if err != nil {
		return fmt.Errorf("ledger: append event %q: %w", e.Step, err)
	}
	return nil
}

// mustExist turns "no row updated" into ErrNotFound when the row is missing
// (an ended attempt is not an error).
func (s *Store) mustExist(ctx context.Context, res sql.Result, id uuid.UUID) error {
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	_, err := s.Get(ctx, id)
	return err
}

const attemptColumns = `id, update_id, attempt, kind, target, artifact, state, phase, progress_done,
	progress_total, outcome, error, workflow_id, run_id, created_at, updated_at, finished_at`

func scanAttempt(row interface{ Scan(...any) error }) (*Attempt, error) {
	var a Attempt
	var state string
	err := row.Scan(&a.ID, &a.UpdateID, &a.Attempt, &a.Kind, &a.Target, &a.Artifact, &state, &a.Phase,
		&a.Done, &a.Total, &a.Outcome, &a.Error, &a.WorkflowID, &a.RunID, &a.CreatedAt, &a.UpdatedAt, &a.FinishedAt)
	a.State = State(state)
	return &a, err
}

// Get returns one attempt.
func (s *Store) Get(ctx context.Context, id uuid.UUID) (*Attempt, error) {
	a, err := scanAttempt(s.db.QueryRowContext(ctx, `SELECT `+attemptColumns+` FROM update_attempt WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: get attempt: %w", err)
	}
	return a, nil
}

// ActiveForTarget returns the target's active attempt, or nil.
func (s *Store) ActiveForTarget(ctx context.Context, target string) (*Attempt, error) {
	a, err := scanAttempt(s.db.QueryRowContext(ctx, `SELECT `+attemptColumns+`
		FROM update_attempt WHERE target = $1 AND state IN ('pending', 'running')`, target))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: active attempt: %w", err)
	}
	return a, nil
}

// Attempts returns the attempts of an update (by update ID or workflow
// ID), oldest first.
func (s *Store) Attempts(ctx context.Context, updateID string) ([]Attempt, error) {
	return s.queryAttempts(ctx, `SELECT `+attemptColumns+` FROM update_attempt
		WHERE update_id = $1 OR workflow_id = $1 ORDER BY created_at, attempt`, updateID)
}

// ListFilter selects attempts for List.
type ListFilter struct {
	Kind   string
	Target string
	State  State
	Active bool
	Limit  int
}

// List returns the newest attempts matching f.
func (s *Store) List(ctx context.Context, f ListFilter) ([]Attempt, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	return s.queryAttempts(ctx, `SELECT `+attemptColumns+` FROM update_attempt
		WHERE ($1 = '' OR kind = $1) AND ($2 = '' OR target = $2) AND (NOT $3 OR state IN ('pending', 'running'))
		  AND ($5 = '' OR state = $5)
		ORDER BY created_at DESC LIMIT $4`, f.Kind, f.Target, f.Active, f.Limit, string(f.State))
}

func (s *Store) queryAttempts(ctx context.Context, q string, args ...any) ([]Attempt, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: list attempts: %w", err)
	}
	defer rows.Close()
	var out []Attempt
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, rows.Err()
}

// Events returns an attempt's events in order.
func (s *Store) Events(ctx context.Context, attemptID uuid.UUID) ([]Event, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+eventColumns+`
		FROM update_event WHERE attempt_id = $1 ORDER BY seq`, attemptID)
	if err != nil {
		return nil, fmt.Errorf("ledger: events: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

const eventColumns = `seq, attempt_id, step, state, message, worker, at, prev_hash, hash`

func scanEvent(row interface{ Scan(...any) error }) (Event, error) {
	var e Event
	err := row.Scan(&e.Seq, &e.AttemptID, &e.Step, &e.State, &e.Message, &e.Worker, &e.At, &e.PrevHash, &e.Hash)
	return e, err
}
