package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// withTerminal makes stdin a terminal that answers typed, until the test
// ends, and returns what the prompt wrote.
func withTerminal(t *testing.T, terminal bool, typed string) *bytes.Buffer {
	var out bytes.Buffer
	before := approvePrompt
	approvePrompt = func() prompt { return prompt{terminal: terminal, in: strings.NewReader(typed), out: &out} }
	t.Cleanup(func() { approvePrompt = before })
	return &out
}

// Without --plan-digest, on a terminal, starter approve shows the plan at
// the gate with its full digest and what the digest binds, and approves
// it only when the approver types the digest's first 12 characters back;
// any other answer approves nothing (exit 2). Not on a terminal (a
// script), it approves nothing and exits 2 with the digest to review.
func TestApproveWithoutADigestAsksOnATerminalOnly(t *testing.T) {
	sp := rollout.StagePlan{Stage: "sps", Binding: &rollout.StageBinding{}}
	sp.Digest = sp.BoundDigest()
	ap := workflows.Approval{By: "alice", Reason: "reviewed"}

	withTerminal(t, false, "")
	c := gateClient(sp)
	err := approveReviewedPlan(context.Background(), c, "default", "r", ap, signFlags{}, false)
	var ee *exitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, exitUsage, ee.code)
	require.Contains(t, err.Error(), "--plan-digest is required: stage sps's plan at the gate is "+sp.Digest+";")
	c.AssertNotCalled(t, "UpdateWorkflow", mock.Anything, mock.Anything)

	out := withTerminal(t, true, "no\n")
	c = gateClient(sp)
	err = approveReviewedPlan(context.Background(), c, "default", "r", ap, signFlags{}, false)
	require.ErrorAs(t, err, &ee)
	require.Equal(t, exitUsage, ee.code)
	require.Contains(t, out.String(), sp.Digest, "the full digest shown")
	require.Contains(t, out.String(), "stage sps", "the plan shown")
	c.AssertNotCalled(t, "UpdateWorkflow", mock.Anything, mock.Anything)

	withTerminal(t, true, sp.Digest[:12]+"\n")
	c = gateClient(sp)
	err = approveReviewedPlan(context.Background(), c, "default", "r", ap, signFlags{}, false)
	require.ErrorIs(t, err, errSent, "confirmed, it approves the digest shown")
	c.AssertCalled(t, "UpdateWorkflow", mock.Anything, mock.MatchedBy(func(o client.UpdateWorkflowOptions) bool {
		return o.Args[0].(workflows.Approval).PlanDigest == sp.Digest
	}))
}
