package dc

import (
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
)

// knownExtras are CNAPI's ListServers `extras` values (only agents changes
// the answer here).
var knownExtras = map[string]bool{
	"sysinfo": true, "vms": true, "memory": true, "disk": true,
	"agents": true, "capacity": true, "all": true,
}

func (d *DC) cnapiMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /servers", d.listServers)
	mux.HandleFunc("GET /servers/{uuid}", d.getServer)
	mux.HandleFunc("POST /servers/{uuid}", d.updateServer)
	mux.HandleFunc("DELETE /servers/{uuid}", d.deleteServer)
	mux.HandleFunc("POST /servers/{uuid}/install-agent", d.installAgent)
	mux.HandleFunc("GET /tasks/{id}", d.getTask)
	mux.HandleFunc("GET /tasks/{id}/wait", d.waitTask)
	return withFallback(mux, "cnapi")
}

// view renders a server record; callers hold d.mu.
func (d *DC) view(s *server, withAgents bool) triton.Server {
	status := triton.StatusRunning
	if !d.isOnline(s) {
		status = triton.StatusUnknown
	}
	out := triton.Server{
		UUID: s.uuid, Hostname: s.hostname, Datacenter: DatacenterName, Status: status,
		Setup: s.setup, Headnode: s.headnode, Traits: map[string]any{},
	}
	for k, v := range s.traits {
		out.Traits[k] = v
	}
	if status == triton.StatusRunning {
		beat := time.Now().UTC().Truncate(time.Second)
		s.lastBeat = beat
	}
	lb := s.lastBeat
	out.LastHeartbeat = &lb
	if withAgents {
		out.Agents = cloneAgents(s.record)
		if out.Agents == nil {
			out.Agents = []triton.Agent{}
		}
	}
	return out
}

func (d *DC) listServers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	setup, ok := queryBool(w, r, "setup")
	if !ok {
		return
	}
	limit, ok := queryInt(w, r, "limit", triton.MaxPageSize, 1, triton.MaxPageSize)
	if !ok {
		return
	}
	offset, ok := queryInt(w, r, "offset", 0, 0, 1<<30)
	if !ok {
		return
	}
	withAgents := false
	if ex := q.Get("extras"); ex != "" {
		for _, e := range strings.Split(ex, ",") {
			if !knownExtras[e] {
				invalid(w, "unknown extras value %q", e)
				return
			}
			withAgents = withAgents || e == "agents" || e == "all"
		}
	}
	var only map[uuid.UUID]bool
	if raw := q.Get("uuids"); raw != "" {
		only = map[uuid.UUID]bool{}
		for _, p := range strings.Split(raw, ",") {
			u, err := uuid.Parse(p)
			if err != nil || len(p) != 36 {
				invalid(w, "uuids: %q is not a UUID", p)
				return
			}
			only[u] = true
		}
	}
	hostname := q.Get("hostname")
	d.mu.Lock()
	defer d.mu.Unlock()
	out := []triton.Server{}
	skipped := 0
	for _, id := range d.order {
		s := d.servers[id]
		if (setup != nil && s.setup != *setup) || (only != nil && !only[id]) || (hostname != "" && s.hostname != hostname) {
			continue
		}
		if skipped < offset {
			skipped++
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, d.view(s, withAgents))
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *DC) lookupServer(w http.ResponseWriter, r *http.Request) *server {
	id, ok := pathUUID(w, r, "uuid")
	if !ok {
		return nil
	}
	s := d.servers[id]
	if s == nil {
		notFound(w, "server", id)
	}
	return s
}

func (d *DC) getServer(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.lookupServer(w, r); s != nil {
		writeJSON(w, http.StatusOK, d.view(s, true))
	}
}

// updateServer is CNAPI's ServerUpdate: it changes CNAPI's record only (the
// agents a server really runs change only through tasks).
func (d *DC) updateServer(w http.ResponseWriter, r *http.Request) {
	var u triton.ServerUpdate
	if !readJSON(w, r, &u) {
		return
	}
	seen := map[string]bool{}
	for i, a := range u.Agents {
		if a.Name == "" || a.Version == "" || a.ImageUUID == uuid.Nil {
			invalid(w, "agents[%d]: name, version and image_uuid are required", i)
			return
		}
		if seen[a.Name] {
			invalid(w, "agents[%d]: agent %q listed twice", i, a.Name)
			return
		}
		seen[a.Name] = true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.lookupServer(w, r)
	if s == nil {
		return
	}
	if u.Agents != nil {
		s.record = cloneAgents(u.Agents)
	}
	w.WriteHeader(http.StatusNoContent)
}

// deleteServer is CNAPI's ServerDelete: it removes the server's record
// only. Like the real CNAPI it leaves the server's SAPI agent instances
// behind (orphans the orchestrator has to remove; docs/CONFORMANCE.md §H).
func (d *DC) deleteServer(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.lookupServer(w, r)
	if s == nil {
		return
	}
	delete(d.servers, s.uuid)
	d.order = removeUUID(d.order, s.uuid)
	w.WriteHeader(http.StatusNoContent)
}

func (d *DC) installAgent(w http.ResponseWriter, r *http.Request) {
	var req triton.InstallAgentRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.ImageUUID == uuid.Nil {
		invalid(w, "image_uuid is required")
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.lookupServer(w, r)
	if s == nil {
		return
	}
	if !s.setup {
		writeError(w, http.StatusConflict, triton.CodeServerNotSetup, "server %s is not set up", s.uuid)
		return
	}
	if !d.isOnline(s) {
		writeError(w, http.StatusConflict, triton.CodeServerNotRunning, "server %s is not running (status unknown): cn-agent unreachable", s.uuid)
		return
	}
	if s.activeTask != "" {
		t := d.tasks[s.activeTask]
		// The same request repeated (a lost answer) gets the same task.
		if t.imageUUID == req.ImageUUID && t.packageName == req.PackageName {
			writeJSON(w, http.StatusOK, triton.TaskRef{ID: t.id})
			return
		}
		writeError(w, http.StatusConflict, triton.CodeServerBusy, "server %s is running agent task %s", s.uuid, t.id)
		return
	}
	t := d.startTask(s, req)
	writeJSON(w, http.StatusOK, triton.TaskRef{ID: t.id})
}

func (d *DC) getTask(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tasks[r.PathValue("id")]
	if t == nil {
		notFound(w, "task", r.PathValue("id"))
		return
	}
	writeJSON(w, http.StatusOK, t.view())
}

// waitTask answers once the task finished or after `timeout` seconds
// (default 60, at most 3600) with the task as it is then.
func (d *DC) waitTask(w http.ResponseWriter, r *http.Request) {
	secs, ok := queryInt(w, r, "timeout", 60, 1, 3600)
	if !ok {
		return
	}
	d.mu.Lock()
	t := d.tasks[r.PathValue("id")]
	d.mu.Unlock()
	if t == nil {
		notFound(w, "task", r.PathValue("id"))
		return
	}
	timer := time.NewTimer(time.Duration(secs) * time.Second)
	defer timer.Stop()
	select {
	case <-t.done:
	case <-timer.C:
	case <-r.Context().Done():
		return
	}
	d.mu.Lock()
	v := t.view()
	d.mu.Unlock()
	writeJSON(w, http.StatusOK, v)
}

func removeUUID(s []uuid.UUID, id uuid.UUID) []uuid.UUID {
	for i, v := range s {
		if v == id {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}
