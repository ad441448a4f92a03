package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// maxNamedTargets keeps a refusal to one line.
const maxNamedTargets = 3

// checkHeldByRollout refuses targets that a running rollout other than id
// holds in its plan, in any stage, started or not: two rollouts over the
// same targets used to both start and both fail, each refused by the
// other's children. The ledger's one active attempt per target still
// guards the device against a race of two starters.
func (a *app) checkHeldByRollout(ctx context.Context, c client.Client, id string, targets []string) error {
	query := fmt.Sprintf(`%s = %q AND ExecutionStatus = "Running"`, workflows.SAKind.GetName(), workflows.KindRollout)
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token})
		if err != nil {
			return a.temporalErr("list running rollouts", err)
		}
		for _, e := range resp.GetExecutions() {
			other := e.GetExecution().GetWorkflowId()
			if other == id {
				continue
			}
			plan, err := rolloutPlan(ctx, c, other, e.GetExecution().GetRunId())
			if err != nil {
				return a.temporalErr("read the plan of "+other, err)
			}
			if shared := sharedTargets(plan, targets); len(shared) > 0 {
				return usageErr("%s held by the running rollout %s: wait for it or cancel it", namedTargets(shared), other)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return nil
		}
	}
}

// rolloutPlan is the plan a rollout run was started with (its first event).
func rolloutPlan(ctx context.Context, c client.Client, id, runID string) (rollout.RolloutInput, error) {
	var in rollout.RolloutInput
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return in, fmt.Errorf("%s has no history", id)
	}
	ev, err := it.Next()
	if err != nil {
		return in, err
	}
	payloads := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if len(payloads) == 0 {
		return in, fmt.Errorf("%s was started without a plan", id)
	}
	return in, converter.GetDefaultDataConverter().FromPayload(payloads[0], &in)
}

// sharedTargets are the targets of plan that are also in targets.
func sharedTargets(plan rollout.RolloutInput, targets []string) []string {
	var shared []string
	for _, st := range plan.Stages {
		for _, u := range st.Updates {
			if slices.Contains(targets, u.Target) && !slices.Contains(shared, u.Target) {
				shared = append(shared, u.Target)
			}
		}
	}
	return shared
}

// namedTargets names up to maxNamedTargets targets and counts the rest.
func namedTargets(ts []string) string {
	if len(ts) == 1 {
		return "target " + ts[0] + " is"
	}
	if len(ts) <= maxNamedTargets {
		return "targets " + strings.Join(ts, ", ") + " are"
	}
	return fmt.Sprintf("targets %s and %d more are", strings.Join(ts[:maxNamedTargets], ", "), len(ts)-maxNamedTargets)
}

// updateTargets are the targets an update covers: each of a rollout's
// updates, or the one.
func updateTargets(u update) []string {
	in, ok := u.Input.(rollout.RolloutInput)
	if !ok {
		return []string{u.Target}
	}
	var ts []string
	for _, st := range in.Stages {
		for _, pu := range st.Updates {
			ts = append(ts, pu.Target)
		}
	}
	return ts
}
