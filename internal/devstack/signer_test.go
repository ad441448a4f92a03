package devstack

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
)

// The demo signer's key signs what its allowed_signers file admits, as
// the demo operator: what the dev stack's workers and starter use.
func TestDemoSignerKeyVerifiesAgainstItsAllowedSigners(t *testing.T) {
	ds, err := MakeDemoSigner(t.TempDir())
	require.NoError(t, err)
	b, err := os.ReadFile(ds.Key)
	require.NoError(t, err)
	key, err := ssh.ParsePrivateKey(b)
	require.NoError(t, err)
	gate := approval.Gate{Rollout: "fleetsaga/rollout/plan/demo", Stage: "host-os", PlanDigest: strings.Repeat("cf", 32), Decision: approval.DecisionApprove}
	st, err := approval.NewStatement(gate.Rollout, gate.Stage, gate.PlanDigest, gate.Decision, "healthy", time.Now())
	require.NoError(t, err)
	signed, err := approval.SignSSH(st, key)
	require.NoError(t, err)
	k, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: ds.AllowedSigners})
	require.NoError(t, err)
	v, err := k.Verify(context.Background(), signed, gate)
	require.NoError(t, err)
	require.Equal(t, approval.SSHIdentity(DemoOperator), v.Principal.Name)
}
