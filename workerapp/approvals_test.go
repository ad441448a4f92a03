package workerapp_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// A mistyped kind in --approval-gated-kinds would gate nothing: the
// worker refuses to start with it.
func TestApprovalMinimumNamesOnlyKnownKinds(t *testing.T) {
	require.NoError(t, workerapp.CheckApprovalMinimum(approval.Minimum{GatedKinds: []string{string(workflows.KindSPFirmware)}}))
	err := workerapp.CheckApprovalMinimum(approval.Minimum{GatedKinds: []string{"sp-firmwar"}})
	require.ErrorContains(t, err, `--approval-gated-kinds: no kind "sp-firmwar" (kinds: `)
}
