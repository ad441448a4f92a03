package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
)

// A head row with the worker's fingerprint and a signature its key did
// not make: the worker's next row in that chain is committed unsigned,
// logged as a forgery (no key material) and counted as "bogus".
func TestABogusHeadIsLoggedAndCounted(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	var logs bytes.Buffer
	metrics, err := workerapp.NewMetrics()
	require.NoError(t, err)
	store, err := signAuditHeads(ctx, env.Store, key, auditSigningFlags{}, zerolog.New(&logs), metrics.AuditUnsigned)
	require.NoError(t, err)
	require.NoError(t, store.RecordApproval(ctx, ledger.Approval{Rollout: "r-bogus", Stage: "canary", By: "bob", Reason: "ok", Method: ledger.MethodUnsigned}))

	sshPub, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	_, err = env.Store.DB().Exec(`INSERT INTO rollout_approval (rollout_id, stage, approved_by, reason, method) VALUES ('r-bogus', 'canary', 'mallory', 'ok', 'unsigned');
INSERT INTO audit_head (tbl, chain, head_seq, head_hash, key_fingerprint, signature, prev_head_seq)
  SELECT 'rollout_approval', 'rollout r-bogus', seq, hash, '` + ssh.FingerprintSHA256(sshPub) + `', 'AAAA', 0 FROM rollout_approval
  WHERE rollout_id = 'r-bogus' ORDER BY seq DESC LIMIT 1`)
	require.NoError(t, err)
	require.NoError(t, store.RecordApproval(ctx, ledger.Approval{Rollout: "r-bogus", Stage: "canary", By: "carol", Reason: "ok", Method: ledger.MethodUnsigned}),
		"the row itself is recorded")
	approvals, err := env.Store.Approvals(ctx, "r-bogus")
	require.NoError(t, err)
	require.Len(t, approvals, 3)

	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	counted := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "fleetsaga_audit_unsigned_appends_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := ""
			for _, l := range m.GetLabel() {
				labels += l.GetName() + "=" + l.GetValue() + ","
			}
			counted[labels] = m.GetCounter().GetValue()
		}
	}
	require.Equal(t, map[string]float64{"table=rollout_approval,why=bogus,": 1}, counted)
	require.Contains(t, logs.String(), "not signed with it")
	require.Contains(t, logs.String(), `"level":"error"`)
	require.False(t, strings.Contains(logs.String(), "PRIVATE"))
}
