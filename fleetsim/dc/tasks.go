package dc

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// TaskAgentInstall is the cn-agent task kind install-agent starts.
const TaskAgentInstall = "agent_install"

// offlinePoll is how often a task stalled on an offline server looks again.
const offlinePoll = 10 * time.Millisecond

type task struct {
	id          string
	server      *server
	imageUUID   uuid.UUID
	packageName string
	status      string
	created     time.Time
	history     []triton.TaskEvent
	done        chan struct{}
}

// view copies the task; callers hold d.mu.
func (t *task) view() triton.Task {
	return triton.Task{
		ID: t.id, Task: TaskAgentInstall, ServerUUID: t.server.uuid, Status: t.status,
		Timestamp: t.created, History: append([]triton.TaskEvent(nil), t.history...),
	}
}

// InstallRecord is one install task in the truth log.
type InstallRecord struct {
	TaskID        string    `json:"taskId"`
	ServerUUID    uuid.UUID `json:"serverUuid"`
	Hostname      string    `json:"hostname"`
	ImageUUID     uuid.UUID `json:"imageUuid"`
	Agent         string    `json:"agent,omitempty"`
	Version       string    `json:"version,omitempty"`
	PreviousImage uuid.UUID `json:"previousImage,omitempty"`
	Started       time.Time `json:"started"`
	Finished      time.Time `json:"finished"`
	// Outcome is complete or failure.
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// startTask creates and runs an agent_install task; callers hold d.mu.
func (d *DC) startTask(s *server, req triton.InstallAgentRequest) *task {
	now := time.Now().UTC()
	t := &task{
		id: uuid.NewString(), server: s, imageUUID: req.ImageUUID, packageName: req.PackageName,
		status: triton.TaskActive, created: now, done: make(chan struct{}),
	}
	t.history = append(t.history, triton.TaskEvent{Name: "start", Timestamp: now,
		Event: triton.EventBody{Message: fmt.Sprintf("agent_install of image %s", req.ImageUUID)}})
	d.tasks[t.id] = t
	s.activeTask = t.id
	d.wg.Add(1)
	go d.runTask(t)
	return t
}

// runTask is cn-agent's agent_install: fetch and check the image, back up
// the installed agent, install, restore the backup on failure, then refresh
// CNAPI's server.agents.
func (d *DC) runTask(t *task) {
	defer d.wg.Done()
	started := time.Now().UTC()
	deadline := started.Add(d.env.Scale(TaskTimeout))

	d.mu.Lock()
	im, reason := d.checkImage(t)
	d.mu.Unlock()
	if reason != "" {
		d.finish(t, nil, started, reason)
		return
	}
	d.event(t, "image", fmt.Sprintf("fetched and verified %s@%s (%d bytes)", im.spec.Name, im.spec.Version, im.spec.Size))
	if im.spec.Name == CNAgent {
		d.event(t, "cn-agent-update", "cn-agent-update enabled: it installs cn-agent and restarts it")
	}

	slow := 1.0
	if t.server.slowness > 0 {
		slow *= t.server.slowness
	}
	if f := im.spec.Slowness[t.server.uuid.String()]; f > 0 {
		slow *= f
	}
	wait := time.Duration(float64(d.env.Scale(d.env.Spec.Timings.AgentInstallTime.Duration)) * slow)
	if !d.sleep(min(wait, time.Until(deadline))) {
		d.finish(t, im, started, "task aborted: cn-agent stopped")
		return
	}
	// A server that went offline mid-task cannot finish it until it is
	// back; cn-agent's task timeout bounds the wait.
	for {
		d.mu.Lock()
		online := d.isOnlinePeek(t.server)
		d.mu.Unlock()
		if online && time.Now().Before(deadline) {
			break
		}
		if !time.Now().Before(deadline) {
			d.finish(t, im, started, fmt.Sprintf("task timed out after %s", TaskTimeout))
			return
		}
		if !d.sleep(offlinePoll) {
			d.finish(t, im, started, "task aborted: cn-agent stopped")
			return
		}
	}
	if f, ok := d.fireTaskFailure(t, im); ok {
		d.finish(t, im, started, fmt.Sprintf("installing %s@%s failed: injected task_failure (fault %d); previous version restored from backup",
			im.spec.Name, im.spec.Version, f.ID))
		return
	}
	if im.spec.Name == CNAgent {
		d.selfUpdate(t, im, started)
		return
	}
	d.finish(t, im, started, "")
}

// fireTaskFailure fires a task_failure aimed at this agent's task on the
// server, else one aimed at the server's next task.
func (d *DC) fireTaskFailure(t *task, im *image) (faults.Fault, bool) {
	server := "server/" + t.server.uuid.String()
	if f, ok := d.faults.Fire(faults.TaskFailure, server+"/"+im.spec.Name); ok {
		return f, true
	}
	return d.faults.Fire(faults.TaskFailure, server)
}

// CNAgent is the agent that runs the install tasks, itself included.
const CNAgent = "cn-agent"

// cnAgentRestartTime is how long a self-updating cn-agent's server goes
// without one: from the old cn-agent's stop to the new one's first post of
// its agents (apm's install, then postinstall.sh's SAPI registration,
// retried up to 10 times 5 s apart: sdc-cn-agent npm/postinstall.sh).
// Scaled by the spec's speed-up like every timing.
const cnAgentRestartTime = 20 * time.Second

// selfUpdate is cn-agent installing itself (sdc-cn-agent
// lib/backends/smartos/tasks/agent_install.js, "SELF-UPDATING cn-agent"),
// in the real order: the old cn-agent, the one holding CNAPI's request, is
// stopped first (npm/postuninstall.sh, svcadm disable -s), so CNAPI's task
// ends then (or never), as the server's spec says; only later does the new
// cn-agent start and post its agents (lib/app.js, startHeartbeater) and
// take the next task.
func (d *DC) selfUpdate(t *task, im *image, started time.Time) {
	d.mu.Lock()
	d.endSelfUpdateTask(t)
	d.mu.Unlock()
	if !d.sleep(d.env.Scale(cnAgentRestartTime)) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s := t.server
	rec := InstallRecord{
		TaskID: t.id, ServerUUID: s.uuid, Hostname: s.hostname, ImageUUID: t.imageUUID,
		Agent: im.spec.Name, Version: im.spec.Version, Started: started, Finished: time.Now().UTC(),
		Outcome: triton.TaskComplete,
	}
	if prev, ok := findAgent(s.actual, im.spec.Name); ok {
		rec.PreviousImage = prev.ImageUUID
	}
	d.install(s, im)
	d.postAgents(s)
	d.installs = append(d.installs, rec)
	if s.activeTask == t.id {
		s.activeTask = ""
	}
}

// endSelfUpdateTask is what CNAPI records when the old cn-agent stops:
// nothing (the task stays active), a broken request (sdc-cnapi
// lib/models/server.js sendTaskRequest) or an answer. Callers hold d.mu.
func (d *DC) endSelfUpdateTask(t *task) {
	now := time.Now().UTC()
	switch t.server.cnAgentTask {
	case spec.CNAgentTaskLost:
		t.status = triton.TaskFailure
		t.history = []triton.TaskEvent{
			{Name: "error", Timestamp: now, Event: triton.EventBody{Error: &triton.TaskError{Message: "socket hang up"}}},
			{Name: "finish", Timestamp: now},
		}
	case spec.CNAgentTaskComplete:
		t.status = triton.TaskComplete
		t.history = []triton.TaskEvent{{Name: "finish", Timestamp: now}}
	default:
		return
	}
	close(t.done)
}

// postAgents is cn-agent's POST /servers/:uuid {agents} with what the
// server runs (sdc-cn-agent lib/backends/smartos/tasks/shared.js
// refreshAgents); with staleRefresh the post fails and cn-agent only logs
// it. Callers hold d.mu.
func (d *DC) postAgents(s *server) {
	if !s.staleRefresh {
		s.record = cloneAgents(s.actual)
	}
}

// checkImage is the task's manifest and file check; callers hold d.mu.
func (d *DC) checkImage(t *task) (*image, string) {
	im := d.images[t.imageUUID]
	if im == nil {
		return nil, fmt.Sprintf("image %s not found in IMGAPI", t.imageUUID)
	}
	if im.spec.EffectiveType() != spec.ImageTypeAgent {
		return im, fmt.Sprintf("image %s (%s) is not an agent image (type %s)", im.spec.UUID, im.spec.Name, im.spec.EffectiveType())
	}
	if t.packageName != "" && t.packageName != im.spec.Name {
		return im, fmt.Sprintf("image %s is agent %q, not %q", im.spec.UUID, im.spec.Name, t.packageName)
	}
	if fs := im.spec.EffectiveFileSize(); fs != im.spec.Size {
		return im, fmt.Sprintf("image %s: downloaded %d bytes, manifest says %d", im.spec.UUID, fs, im.spec.Size)
	}
	if im.manifestSHA1() != im.actualSHA1 {
		return im, fmt.Sprintf("image %s: sha1 of download %s does not match manifest %s", im.spec.UUID, im.actualSHA1, im.manifestSHA1())
	}
	return im, ""
}

func (im *image) manifestSHA1() string {
	if im.spec.SHA1 != "" {
		return im.spec.SHA1
	}
	return im.actualSHA1
}

// sleep waits d or until the domain closes (false).
func (d *DC) sleep(dur time.Duration) bool {
	if dur <= 0 {
		return d.ctx.Err() == nil
	}
	tm := time.NewTimer(dur)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-d.ctx.Done():
		return false
	}
}

func (d *DC) event(t *task, name, msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t.history = append(t.history, triton.TaskEvent{Name: name, Timestamp: time.Now().UTC(), Event: triton.EventBody{Message: msg}})
}

// finish installs (reason == "") or fails the task, logs it and frees the
// server for the next task.
func (d *DC) finish(t *task, im *image, started time.Time, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := t.server
	now := time.Now().UTC()
	rec := InstallRecord{
		TaskID: t.id, ServerUUID: s.uuid, Hostname: s.hostname, ImageUUID: t.imageUUID,
		Started: started, Finished: now,
	}
	if im != nil {
		rec.Agent, rec.Version = im.spec.Name, im.spec.Version
		if prev, ok := findAgent(s.actual, im.spec.Name); ok {
			rec.PreviousImage = prev.ImageUUID
		}
	}
	if reason == "" {
		// cn-agent posts its agents before the task's finish event.
		d.install(s, im)
		d.postAgents(s)
		t.status = triton.TaskComplete
		rec.Outcome = triton.TaskComplete
		// CNAPI replaces the history with cn-agent's answer (sdc-cnapi
		// lib/models/server.js sendTaskRequest).
		t.history = []triton.TaskEvent{{Name: "finish", Timestamp: now,
			Event: triton.EventBody{Message: fmt.Sprintf("installed %s@%s", im.spec.Name, im.spec.Version)}}}
	} else {
		t.status = triton.TaskFailure
		rec.Outcome, rec.Error = triton.TaskFailure, reason
		// cn-agent's fatal(): an error event, then finish (sdc-cn-agent
		// lib/task_agent/task.js); CNAPI keeps the error first
		// (sdc-cnapi lib/models/server.js sendTaskRequest).
		t.history = append([]triton.TaskEvent(nil),
			triton.TaskEvent{Name: "error", Timestamp: now, Event: triton.EventBody{Error: &triton.TaskError{Message: "AgentInstall error: " + reason}}},
			triton.TaskEvent{Name: "finish", Timestamp: now})
	}
	d.installs = append(d.installs, rec)
	if s.activeTask == t.id {
		s.activeTask = ""
	}
	close(t.done)
}

// install replaces (or adds) the agent on the server; the agent keeps its
// instance UUID across upgrades. Callers hold d.mu.
func (d *DC) install(s *server, im *image) {
	a := triton.Agent{Name: im.spec.Name, Version: im.spec.Version, ImageUUID: im.spec.UUID}
	if prev, ok := findAgent(s.actual, a.Name); ok && prev.UUID != uuid.Nil {
		a.UUID = prev.UUID
	} else if inst := d.instanceFor(a.Name, s.uuid); inst != nil {
		a.UUID = inst.uuid
	} else {
		a.UUID = uuid.New()
	}
	for i := range s.actual {
		if s.actual[i].Name == a.Name {
			s.actual[i] = a
			return
		}
	}
	s.actual = append(s.actual, a)
}

// instanceFor finds the SAPI instance of agent name on server; callers hold
// d.mu.
func (d *DC) instanceFor(name string, srv uuid.UUID) *instance {
	for _, id := range d.instOrder {
		in := d.instances[id]
		if in.serverUUID == srv && d.services[in.serviceUUID] != nil && d.services[in.serviceUUID].name == name {
			return in
		}
	}
	return nil
}

func findAgent(as []triton.Agent, name string) (triton.Agent, bool) {
	for _, a := range as {
		if a.Name == name {
			return a, true
		}
	}
	return triton.Agent{}, false
}
