package agents

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/triton"
)

// How long an install waits for the server's own agent list in CNAPI.
const (
	// cnAgentSelfUpdateWait: cn-agent installs itself through its
	// cn-agent-update service, so its task says nothing about whether the
	// new cn-agent runs; sdcadm waits 30 minutes (360 polls 5 s apart) for
	// server.agents to show it (sdcadm lib/procedures/update-agent-v1.js
	// waitUntilAgentsChange).
	cnAgentSelfUpdateWait = 30 * time.Minute
	// agentReportWait is how long after its task ended a server has to
	// show the image. cn-agent posts its agents before the task's finish
	// event (sdc-cn-agent agent_install.js sendAgentsToCNAPI), so CNAPI
	// shows them at once unless that post failed, which cn-agent only
	// logs; a minute covers a slow CNAPI, not a lost post.
	agentReportWait = time.Minute
)

func (a *AgentActivities) selfUpdateWait() time.Duration {
	if a.SelfUpdateWait > 0 {
		return a.SelfUpdateWait
	}
	return cnAgentSelfUpdateWait
}

func (a *AgentActivities) reportWait() time.Duration {
	if a.ReportWait > 0 {
		return a.ReportWait
	}
	return agentReportWait
}

// installWatch decides, task answer by task answer, when one install is
// done: when CNAPI's server.agents (what the server's cn-agent posted)
// shows the planned image. The task only bounds the wait: a failed task
// is final (cn-agent restored its backup) and a completed one leaves the
// server reportWait to show the image. cn-agent's own task says nothing
// (the cn-agent that holds it is replaced under it: it may stay active,
// fail when that cn-agent goes, or complete before the new one runs), so
// only selfUpdateWait ends that wait, or a failure the server does not
// contradict within reportWait.
type installWatch struct {
	a          *AgentActivities
	r          RefreshAgentRequest
	poll       time.Duration
	selfUpdate bool
	started    time.Time
	ended      time.Time // when the task was first seen done
}

func (a *AgentActivities) newInstallWatch(r InstallAgentRequest, poll time.Duration) *installWatch {
	return &installWatch{a: a, r: RefreshAgentRequest{Server: r.Server, Agent: r.Agent}, poll: poll,
		selfUpdate: r.Agent.Name == CNAgent, started: time.Now()}
}

// check reads server.agents when the task allows a verdict: true once it
// shows the image, a non-retryable error once the wait is over.
func (w *installWatch) check(ctx context.Context, task triton.Task) (bool, error) {
	if !w.selfUpdate && !task.Done() {
		return false, nil
	}
	cur, shown, err := w.a.serverAgent(ctx, w.r)
	if err != nil || shown {
		return shown, err
	}
	now := time.Now()
	if task.Done() && w.ended.IsZero() {
		w.ended = now
	}
	reported := task.Done() && now.Sub(w.ended) >= w.a.reportWait()
	switch {
	case task.Status == triton.TaskFailure && (!w.selfUpdate || reported):
		return false, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("install %s on %s: task %s failed: %s", w.r.Agent.Label(), w.r.Server, task.ID, task.ErrorMessage()),
			failure.AgentTaskFailed, nil, task.ID)
	case task.Status == triton.TaskComplete && !w.selfUpdate && reported:
		return false, notConfirmed(w.r, cur, fmt.Sprintf("task %s completed %s ago and the server did not report the image", task.ID, w.a.reportWait()))
	case w.selfUpdate && now.Sub(w.started) >= w.a.selfUpdateWait():
		return false, notConfirmed(w.r, cur, fmt.Sprintf("task %s still %s after %s: the new cn-agent did not report", task.ID, task.Status, w.a.selfUpdateWait()))
	}
	if task.Done() {
		// A finished task answers at once: pace the reads of the server.
		return false, sleep(ctx, w.poll)
	}
	return false, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
