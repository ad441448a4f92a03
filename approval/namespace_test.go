package approval_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
)

// One team runs staging and production in two Temporal namespaces, each
// with its own ledger, and the same operators' keys. carol's signed start
// of a plan in staging, sent to production under the same workflow ID,
// is refused there (WrongGate): the statement names its namespace. A
// statement that names none (a starter from before namespaces were
// signed) is refused too, unless this gate's ledger recorded it (a reset
// run verifying its own start again).
func TestAStatementSignedForAnotherNamespaceIsRefused(t *testing.T) {
	carol := newKey(t)
	k := keyring(t, map[string]ssh.Signer{"carol": carol})
	start := approval.Gate{TemporalNamespace: "production", Rollout: "fleetsaga/rollout/plan/q3", PlanDigest: gate.PlanDigest, Decision: approval.DecisionStart}
	staging := start
	staging.TemporalNamespace = "staging"

	_, _, err := checkAt(k, sign(t, statement(t, staging, now), carol), start, &history{})
	requireRefused(t, err, approval.ReasonWrongGate)
	_, _, err = checkAt(k, sign(t, statement(t, staging, now), carol), staging, &history{})
	require.NoError(t, err)

	unnamed := start
	unnamed.TemporalNamespace = ""
	legacy := sign(t, statement(t, unnamed, now), carol)
	_, _, err = checkAt(k, legacy, start, &history{})
	requireRefused(t, err, approval.ReasonWrongGate)

	h := &history{}
	v, err := k.Verify(context.Background(), legacy, unnamed)
	require.NoError(t, err)
	h.used = map[string]approval.Use{v.ReplayKey: {Rollout: start.Rollout, Principal: v.Principal.Name, Payload: v.Payload}}
	h.recorded = []approval.Verified{v}
	_, retry, err := checkAt(k, legacy, start, h)
	require.NoError(t, err, "recorded for this gate before namespaces were signed: it counts again")
	require.True(t, retry)

	// A row naming another namespace's statement (INSERTed by the
	// ledger's role) does not make it count here.
	fromStaging := sign(t, statement(t, staging, now), carol)
	v, err = k.Verify(context.Background(), fromStaging, staging)
	require.NoError(t, err)
	h.used[v.ReplayKey] = approval.Use{Rollout: start.Rollout, Principal: v.Principal.Name, Payload: v.Payload}
	h.recorded = append(h.recorded, v)
	_, _, err = checkAt(k, fromStaging, start, h)
	requireRefused(t, err, approval.ReasonWrongGate)
}

func checkAt(k *approval.Keyring, s approval.Signed, g approval.Gate, h *history) (approval.Verified, bool, error) {
	v, _, retry, err := k.Check(context.Background(), s, g, approval.Policy{}, "", h)
	return v, retry, err
}
