package triton

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Server status values (CNAPI `status`).
const (
	StatusRunning = "running"
	StatusUnknown = "unknown" // no heartbeat: offline
)

// Server is a CNAPI server record (the subset fleetsaga uses).
type Server struct {
	UUID       uuid.UUID `json:"uuid"`
	Hostname   string    `json:"hostname"`
	Datacenter string    `json:"datacenter"`
	// Status is "running" or "unknown" (offline).
	Status   string `json:"status"`
	Setup    bool   `json:"setup"`
	Headnode bool   `json:"headnode"`
	// Traits are free-form; fleetsaga selects servers by string traits.
	Traits        map[string]any `json:"traits"`
	LastHeartbeat *time.Time     `json:"last_heartbeat,omitempty"`
	// Agents is present on GET /servers/:uuid and with extras=agents.
	Agents []Agent `json:"agents,omitempty"`
}

// Agent is one entry of server.agents: what CNAPI believes is installed.
type Agent struct {
	Name      string    `json:"name"`
	Version   string    `json:"version"`
	ImageUUID uuid.UUID `json:"image_uuid"`
	// UUID is the agent instance UUID (its SAPI instance UUID).
	UUID uuid.UUID `json:"uuid"`
}

// Agent returns the entry named name.
func (s Server) Agent(name string) (Agent, bool) {
	for _, a := range s.Agents {
		if a.Name == name {
			return a, true
		}
	}
	return Agent{}, false
}

// Trait returns a trait as a string ("" if absent).
func (s Server) Trait(key string) string {
	v, ok := s.Traits[key]
	if !ok || v == nil {
		return ""
	}
	if str, ok := v.(string); ok {
		return str
	}
	return fmt.Sprint(v)
}

// Task status values.
const (
	TaskActive   = "active"
	TaskComplete = "complete"
	TaskFailure  = "failure"
)

// Task is a cn-agent task as CNAPI reports it.
type Task struct {
	ID         string      `json:"id"`
	Task       string      `json:"task"`
	ServerUUID uuid.UUID   `json:"server_uuid"`
	Status     string      `json:"status"`
	Timestamp  time.Time   `json:"timestamp"`
	History    []TaskEvent `json:"history"`
}

// TaskEvent is one step of a task's history.
type TaskEvent struct {
	Name      string    `json:"name"`
	Timestamp time.Time `json:"timestamp"`
	Event     EventBody `json:"event"`
}

// EventBody is a task event's payload.
type EventBody struct {
	Message string     `json:"message,omitempty"`
	Error   *TaskError `json:"error,omitempty"`
}

// TaskError is the error of a failed task.
type TaskError struct {
	Message string `json:"message"`
}

// Done reports whether the task finished (complete or failure).
func (t Task) Done() bool { return t.Status == TaskComplete || t.Status == TaskFailure }

// ErrorMessage is the failure reason. CNAPI puts the error first
// (history[0] = {name: "error", event: {error: {message}}}, then "finish";
// sdc-cnapi lib/models/server.js sendTaskRequest), and sdcadm reads it there
// (lib/procedures/update-agent-v1.js); an error found later is taken when
// the first event has none.
func (t Task) ErrorMessage() string {
	if t.Status != TaskFailure {
		return ""
	}
	for _, ev := range t.History {
		if ev.Event.Error != nil && ev.Event.Error.Message != "" {
			return ev.Event.Error.Message
		}
	}
	return "task " + t.ID + " failed without an error event"
}

// CNAPI is a client of the Compute Node API.
type CNAPI struct{ c *client }

// NewCNAPI returns a CNAPI client for base (e.g. http://cnapi.dc or
// <fleetsim>/cnapi).
func NewCNAPI(base string, opts ...Option) (*CNAPI, error) {
	c, err := newClient("cnapi", base, opts)
	if err != nil {
		return nil, err
	}
	return &CNAPI{c: c}, nil
}

// MaxPageSize is CNAPI's largest `limit`.
const MaxPageSize = 1000

// ListServersOptions filters ListServers.
type ListServersOptions struct {
	// Setup filters on the setup flag when non-nil.
	Setup *bool
	// UUIDs restricts the answer to these servers.
	UUIDs []uuid.UUID
	// Hostname filters on an exact hostname.
	Hostname string
	// Agents asks for server.agents (extras=agents).
	Agents bool
	// PageSize is the limit per page (default and max 1000).
	PageSize int
}

// ListServersPage returns one page (limit, offset) of servers.
func (a *CNAPI) ListServersPage(ctx context.Context, o ListServersOptions, limit, offset int) ([]Server, error) {
	if limit < 1 || limit > MaxPageSize || offset < 0 {
		return nil, fmt.Errorf("cnapi: limit must be within 1..%d and offset >= 0", MaxPageSize)
	}
	q := url.Values{}
	q.Set("limit", strconv.Itoa(limit))
	q.Set("offset", strconv.Itoa(offset))
	if o.Setup != nil {
		q.Set("setup", strconv.FormatBool(*o.Setup))
	}
	if len(o.UUIDs) > 0 {
		s := make([]string, len(o.UUIDs))
		for i, u := range o.UUIDs {
			s[i] = u.String()
		}
		q.Set("uuids", strings.Join(s, ","))
	}
	if o.Hostname != "" {
		q.Set("hostname", o.Hostname)
	}
	if o.Agents {
		q.Set("extras", "agents")
	}
	var out []Server
	if err := a.c.get(ctx, "/servers", q, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ListServers returns every matching server, following pages until a short
// one. A server listed twice across pages (the list moved underneath) is
// kept once.
func (a *CNAPI) ListServers(ctx context.Context, o ListServersOptions) ([]Server, error) {
	size := o.PageSize
	if size <= 0 || size > MaxPageSize {
		size = MaxPageSize
	}
	// CNAPI's uuids filter rides in the query string: keep it short.
	if len(o.UUIDs) > 100 {
		var all []Server
		for start := 0; start < len(o.UUIDs); start += 100 {
			sub := o
			sub.UUIDs = o.UUIDs[start:min(start+100, len(o.UUIDs))]
			page, err := a.ListServers(ctx, sub)
			if err != nil {
				return nil, err
			}
			all = append(all, page...)
		}
		return all, nil
	}
	var all []Server
	seen := map[uuid.UUID]bool{}
	for offset := 0; ; offset += size {
		page, err := a.ListServersPage(ctx, o, size, offset)
		if err != nil {
			return nil, err
		}
		for _, s := range page {
			if !seen[s.UUID] {
				seen[s.UUID] = true
				all = append(all, s)
			}
		}
		if len(page) < size {
			return all, nil
		}
	}
}

// GetServer returns one server with its agents.
func (a *CNAPI) GetServer(ctx context.Context, server uuid.UUID) (Server, error) {
	var s Server
	err := a.c.get(ctx, "/servers/"+server.String(), nil, &s)
	return s, err
}

// ServerUpdate is the body of POST /servers/:uuid (fields left nil are kept).
type ServerUpdate struct {
	Agents []Agent `json:"agents,omitempty"`
	// Comments is free text.
	Comments *string `json:"comments,omitempty"`
}

// UpdateServer applies a ServerUpdate (fleetsaga uses it to refresh
// server.agents after an install).
func (a *CNAPI) UpdateServer(ctx context.Context, server uuid.UUID, u ServerUpdate) error {
	return a.c.do(ctx, "POST", "/servers/"+server.String(), nil, u, nil)
}

// InstallAgentRequest is the body of POST /servers/:uuid/install-agent.
type InstallAgentRequest struct {
	ImageUUID uuid.UUID `json:"image_uuid"`
	// PackageName, when set, must be the image's agent name.
	PackageName string `json:"package_name,omitempty"`
}

// TaskRef is the answer of an action that starts a task.
type TaskRef struct {
	ID string `json:"id"`
}

// InstallAgent starts an agent_install task on the server and returns its ID.
func (a *CNAPI) InstallAgent(ctx context.Context, server uuid.UUID, r InstallAgentRequest) (string, error) {
	var ref TaskRef
	if err := a.c.do(ctx, "POST", "/servers/"+server.String()+"/install-agent", nil, r, &ref); err != nil {
		return "", err
	}
	if ref.ID == "" {
		return "", &Error{API: "cnapi", Method: "POST", URL: "/servers/" + server.String() + "/install-agent", Status: 200, Err: errors.New("answer has no task id"), decode: true}
	}
	return ref.ID, nil
}

// GetTask returns a task.
func (a *CNAPI) GetTask(ctx context.Context, id string) (Task, error) {
	var t Task
	err := a.c.get(ctx, "/tasks/"+pathEscape(id), nil, &t)
	return t, err
}

// WaitTask waits up to timeout (rounded up to whole seconds, at least 1 s)
// for the task to finish and returns it; an unfinished task comes back with
// status active when the wait runs out.
func (a *CNAPI) WaitTask(ctx context.Context, id string, timeout time.Duration) (Task, error) {
	secs := int((timeout + time.Second - 1) / time.Second)
	secs = max(secs, 1)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+DefaultTimeout)
	defer cancel()
	var t Task
	err := a.c.get(ctx, "/tasks/"+pathEscape(id)+"/wait", url.Values{"timeout": {strconv.Itoa(secs)}}, &t)
	return t, err
}

// DeleteServer removes a server from CNAPI.
func (a *CNAPI) DeleteServer(ctx context.Context, server uuid.UUID) error {
	return a.c.do(ctx, "DELETE", "/servers/"+server.String(), nil, nil, nil)
}
