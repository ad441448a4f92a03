package plan_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/internal/plan"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
)

const gatedPlan = `
name: q3
%s
stages:
- name: canary
  kind: bootimage-bump
  concurrency: 1
  approval: %s
  updates: [{cluster: c1}]
- name: rest
  kind: bootimage-bump
  concurrency: 1
  approval: %s
  updates: [{cluster: c2}]
`

func parsePolicies(t *testing.T, top, canary, rest string) ([]*approval.Policy, error) {
	t.Helper()
	in, policies, err := plan.ParseFileWithPolicies("q3.yaml", []byte(fmt.Sprintf(gatedPlan, top, canary, rest)))
	if err == nil {
		require.Equal(t, policies[0] != nil, in.Stages[0].Approval, "a policy is a gate")
		require.Equal(t, policies[1] != nil, in.Stages[1].Approval)
	}
	return policies, err
}

func TestApprovalPolicies(t *testing.T) {
	p, err := parsePolicies(t, "", "true", "false")
	require.NoError(t, err)
	require.Equal(t, []*approval.Policy{{Approvers: 1}, nil}, p, "approval: true is one approver, any allowed signer")

	p, err = parsePolicies(t, "approval: {approvers: 2, fourEyes: true}", "true",
		"{approvers: 1, allowed: [carol, 'group:sp-admins']}")
	require.NoError(t, err)
	require.Equal(t, []*approval.Policy{{Approvers: 2, FourEyes: true}, {Approvers: 1, Allowed: []string{"carol", "group:sp-admins"}}}, p,
		"the plan's policy for approval: true, a stage's own where it has one")

	for name, tc := range map[string]struct{ top, canary, rest, want string }{
		"unknown policy field":    {"", "{aprovers: 2}", "false", `unknown field "aprovers"`},
		"not a policy":            {"", "yes please", "false", "want true, false or {approvers"},
		"more approvers than may": {"", "{approvers: 3, allowed: [a, b]}", "false", `q3.yaml:8: stage "canary" (stages[0]): approval: approvers: 3 distinct approvers needed, but only 2 principals are allowed`},
		"negative approvers":      {"approval: {approvers: -1}", "true", "false", "approval: approvers must be at least 1"},
		"a policy without a gate": {"approval: {approvers: 2}", "false", "false", "no stage has a gate"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parsePolicies(t, tc.top, tc.canary, tc.rest)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// The digest `starter rollout` signs is the one the workflow computes
// again from the input Temporal hands it, signature field and all.
func TestPlanDigestSurvivesTheTripThroughTemporal(t *testing.T) {
	in, err := plan.Parse([]byte(fmt.Sprintf(gatedPlan, "approval: {approvers: 2}", "true", "{approvers: 1}")))
	require.NoError(t, err)
	require.NotNil(t, in.Stages[0].ApprovalPolicy, "the digest covers the policies")
	signedDigest, err := in.StartDigest()
	require.NoError(t, err)
	sent := in
	sent.StartSignature = &approval.Signed{Payload: "{}", SSHSig: "sig"}
	payload, err := converter.GetDefaultDataConverter().ToPayload(sent)
	require.NoError(t, err)
	var got rollout.RolloutInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(payload, &got))
	require.NotNil(t, got.StartSignature)
	again, err := got.StartDigest()
	require.NoError(t, err)
	require.Equal(t, signedDigest, again)
}
