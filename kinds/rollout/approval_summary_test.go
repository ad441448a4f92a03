package rollout

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The Web UI shows a verify activity's summary beside the approval: for a
// signed approval the name typed with --by proves nothing (the keyring's
// principal is who approved), so the summary does not carry it; an
// unsigned one says its name is as typed.
func TestTheVerifySummaryDoesNotNameTheTypedApprover(t *testing.T) {
	signed := workflows.Approval{By: "mallory-typed", Signed: &approval.Signed{Payload: "{}", SSHSig: "sig"}}
	require.NotContains(t, verifySummary("canary", signed), "mallory-typed")
	require.Contains(t, verifySummary("canary", signed), "canary")
	unsigned := workflows.Approval{By: "bob"}
	require.Contains(t, verifySummary("canary", unsigned), "unsigned")
	require.Contains(t, verifySummary("canary", unsigned), "typed")
}
