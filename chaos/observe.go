package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/google/uuid"
	_ "github.com/lib/pq" // PostgreSQL driver
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleetsim/dc"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	simmachine "github.com/fleetsaga/fleetsaga/fleetsim/machineapi"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
)

// observer reads what happened: fleetsim's truth, the ledger, the Nexus
// saga tables and Temporal.
type observer struct {
	sim   string
	dbURL string
	c     client.Client
}

// truth is GET /truth, typed.
type truth struct {
	MGS     simmgs.Truth     `json:"mgs"`
	Sled    sled.Truth       `json:"sled"`
	DC      dc.Truth         `json:"dc"`
	Machine simmachine.Truth `json:"machineapi"`
}

func (o *observer) get(ctx context.Context, path string, v any) error {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, o.sim+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("GET %s: %s %s", path, resp.Status, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func (o *observer) truth(ctx context.Context) (*truth, error) {
	var t truth
	if err := o.get(ctx, "/truth", &t); err != nil {
		return nil, err
	}
	return &t, nil
}

func (o *observer) armedFaults(ctx context.Context) ([]faults.Fault, error) {
	var fs []faults.Fault
	return fs, o.get(ctx, "/faults", &fs)
}

func (o *observer) db() (*sql.DB, error) { return sql.Open("postgres", o.dbURL) }

// attempt is one ledger row.
type attempt struct {
	ID       uuid.UUID
	UpdateID string
	Attempt  int
	Kind     string
	Target   string
	Artifact string
	State    string
	Outcome  string
	Error    string
	// WorkflowID and RunID are the run that owns the attempt.
	WorkflowID, RunID string
	CreatedAt         time.Time
}

func (o *observer) attempts(ctx context.Context) ([]attempt, error) {
	db, err := o.db()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT id, update_id, attempt, kind, target, artifact, state, outcome, error, workflow_id, run_id, created_at
		FROM update_attempt ORDER BY update_id, created_at, attempt`)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	defer rows.Close()
	var out []attempt
	for rows.Next() {
		var a attempt
		if err := rows.Scan(&a.ID, &a.UpdateID, &a.Attempt, &a.Kind, &a.Target, &a.Artifact, &a.State, &a.Outcome, &a.Error, &a.WorkflowID, &a.RunID, &a.CreatedAt); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

func (o *observer) activeAttempts(ctx context.Context) (int, error) {
	db, err := o.db()
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM update_attempt WHERE state IN ('pending', 'running')`).Scan(&n)
	return n, err
}

// expungedZones are the zones the ledger records as expunged, with their
// kind.
func (o *observer) expungedZones(ctx context.Context) (map[uuid.UUID]string, error) {
	db, err := o.db()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT zone_id, zone_kind FROM zone_disposition WHERE disposition = 'expunged'`)
	if err != nil {
		return nil, fmt.Errorf("zone dispositions: %w", err)
	}
	defer rows.Close()
	out := map[uuid.UUID]string{}
	for rows.Next() {
		var id uuid.UUID
		var kind string
		if err := rows.Scan(&id, &kind); err != nil {
			return nil, err
		}
		out[id] = kind
	}
	return out, rows.Err()
}

// saga is one simulated Nexus saga with its history.
type saga struct {
	ID        uuid.UUID
	State     string
	Sec       *uuid.UUID
	AdoptGen  int64
	AdoptTime *time.Time
	History   []sagaEvent
}

type sagaEvent struct {
	Sec      uuid.UUID
	Event    string
	AdoptGen int64
	At       time.Time
}

func (o *observer) sagas(ctx context.Context) (map[uuid.UUID]*saga, error) {
	db, err := o.db()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	out := map[uuid.UUID]*saga{}
	rows, err := db.QueryContext(ctx, `SELECT id, saga_state, current_sec, adopt_generation, adopt_time FROM omicron.saga`)
	if err != nil {
		return nil, fmt.Errorf("sagas: %w", err)
	}
	for rows.Next() {
		s := &saga{}
		var sec uuid.NullUUID
		var at sql.NullTime
		if err := rows.Scan(&s.ID, &s.State, &sec, &s.AdoptGen, &at); err != nil {
			rows.Close()
			return nil, err
		}
		if sec.Valid {
			s.Sec = &sec.UUID
		}
		if at.Valid {
			s.AdoptTime = &at.Time
		}
		out[s.ID] = s
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = db.QueryContext(ctx, `SELECT saga_id, sec, event, adopt_generation, at FROM fleetsim.saga_history ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("saga history: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var e sagaEvent
		if err := rows.Scan(&id, &e.Sec, &e.Event, &e.AdoptGen, &e.At); err != nil {
			return nil, err
		}
		if s := out[id]; s != nil {
			s.History = append(s.History, e)
		}
	}
	return out, rows.Err()
}

// wf is one workflow execution and what its history shows.
type wf struct {
	ID, RunID, Type string
	Status          enumspb.WorkflowExecutionStatus
	Start, Close    time.Time
	// ActivityRetries is the sum over its activities of (attempts - 1).
	ActivityRetries int
	// TaskTimeouts counts workflow tasks that timed out (a worker died
	// holding one) or failed.
	TaskTimeouts int
	// Build is the Worker Deployment build that completed the run's last
	// workflow task ("" unversioned).
	Build string
	// BuildTaskAt is when that task was scheduled: an Auto-Upgrade run
	// moves to a new current build only with a task scheduled after it.
	BuildTaskAt time.Time
	// taskScheduledAt is the last workflow task scheduled, while reading.
	taskScheduledAt time.Time
}

func (o *observer) list(ctx context.Context, query string) ([]*wf, error) {
	var out []*wf
	var token []byte
	for {
		resp, err := o.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token, PageSize: 1000})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.GetExecutions() {
			w := &wf{ID: e.GetExecution().GetWorkflowId(), RunID: e.GetExecution().GetRunId(),
				Type: e.GetType().GetName(), Status: e.GetStatus(), Start: e.GetStartTime().AsTime()}
			if e.GetCloseTime() != nil {
				w.Close = e.GetCloseTime().AsTime()
			}
			out = append(out, w)
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			return out, nil
		}
	}
}

func (o *observer) runningWorkflows(ctx context.Context) (int, error) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ws, err := o.list(lctx, `ExecutionStatus = "Running"`)
	return len(ws), err
}

// workflows lists every execution and reads each history.
func (o *observer) workflows(ctx context.Context) ([]*wf, error) {
	ws, err := o.list(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, w := range ws {
		it := o.c.GetWorkflowHistory(ctx, w.ID, w.RunID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return nil, fmt.Errorf("history of %s: %w", w.ID, err)
			}
			countEvent(w, ev)
		}
	}
	return ws, nil
}

func countEvent(w *wf, ev *historypb.HistoryEvent) {
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
		if a := ev.GetActivityTaskStartedEventAttributes().GetAttempt(); a > 1 {
			w.ActivityRetries += int(a - 1)
		}
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
		w.TaskTimeouts++
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
		w.taskScheduledAt = ev.GetEventTime().AsTime()
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
		w.Build = ev.GetWorkflowTaskCompletedEventAttributes().GetDeploymentVersion().GetBuildId()
		w.BuildTaskAt = w.taskScheduledAt
	}
}

// activeAttemptRows are the ledger's pending and running attempts.
func (o *observer) activeAttemptRows(ctx context.Context) ([]attempt, error) {
	db, err := o.db()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT id, attempt, target, state, workflow_id, run_id
		FROM update_attempt WHERE state IN ('pending', 'running') ORDER BY created_at`)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	defer rows.Close()
	var out []attempt
	for rows.Next() {
		var a attempt
		if err := rows.Scan(&a.ID, &a.Attempt, &a.Target, &a.State, &a.WorkflowID, &a.RunID); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// activeAttemptWorkflows are the workflow IDs with an active attempt:
// the updates that are mid-update.
func (o *observer) activeAttemptWorkflows(ctx context.Context) (map[string]bool, error) {
	rows, err := o.activeAttemptRows(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, a := range rows {
		out[a.WorkflowID] = true
	}
	return out, nil
}

func (o *observer) attemptState(ctx context.Context, id uuid.UUID) (string, error) {
	db, err := o.db()
	if err != nil {
		return "", err
	}
	defer db.Close()
	var state string
	err = db.QueryRowContext(ctx, `SELECT state FROM update_attempt WHERE id = $1`, id).Scan(&state)
	return state, err
}
