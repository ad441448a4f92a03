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
// server reportWait to show the image. cn-agent's own task says nothing:
// the old cn-agent holding it is stopped mid-install (sdc-cn-agent
// npm/postuninstall.sh, svcadm disable), so CNAPI may record it failed
// (sdc-cnapi lib/models/server.js sendTaskRequest) long before the new
// cn-agent posts its agents (after postinstall.sh's SAPI registration,
// retried 10 x 5 s; lib/app.js). As sdcadm does, its outcome is ignored
// and only selfUpdateWait ends the wait (sdcadm
// lib/procedures/update-agent-v1.js).
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
	if err := w.verdict(cur, task, time.Now()); err != nil {
		return false, err
	}
	if task.Done() {
		// A finished task answers at once: pace the reads of the server.
		return false, sleep(ctx, w.poll)
	}
	return false, nil
}

// verdict is the error that ends a wait the server has not yet ended by
// showing the image, or nil to keep waiting.
func (w *installWatch) verdict(cur triton.Agent, task triton.Task, now time.Time) error {
	if w.selfUpdate {
		if now.Sub(w.started) < w.a.selfUpdateWait() {
			return nil
		}
		state := task.Status
		if task.Status == triton.TaskFailure {
			state = "failed: " + task.ErrorMessage()
		}
		return notConfirmed(w.r, cur, fmt.Sprintf("the new cn-agent did not report within %s (its task %s: %s)",
			w.a.selfUpdateWait(), task.ID, state))
	}
	if w.ended.IsZero() {
		w.ended = now
	}
	switch {
	case task.Status == triton.TaskFailure:
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("install %s on %s: task %s failed: %s", w.r.Agent.Label(), w.r.Server, task.ID, task.ErrorMessage()),
			failure.AgentTaskFailed, nil, task.ID)
	case task.Status == triton.TaskComplete && now.Sub(w.ended) >= w.a.reportWait():
		return notConfirmed(w.r, cur, fmt.Sprintf("task %s completed %s ago and the server did not report the image", task.ID, w.a.reportWait()))
	}
	return nil
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
