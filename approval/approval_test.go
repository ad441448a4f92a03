package approval_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hiddeco/sshsig"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
)

var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// keyring loads an allowed_signers file naming each principal's key.
func keyring(t *testing.T, keys map[string]ssh.Signer) *approval.Keyring {
	t.Helper()
	k, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, keys)})
	require.NoError(t, err)
	return k.WithClock(func() time.Time { return now })
}

var gate = approval.Gate{Rollout: "fleetsaga/rollout/plan/q3", Stage: "canary", PlanDigest: strings.Repeat("ab", 32), Decision: approval.DecisionApprove}

func statement(t *testing.T, g approval.Gate, at time.Time) approval.Statement {
	return approvaltest.Statement(t, g, "canary sleds healthy", at)
}

var (
	sign   = approvaltest.Sign
	newKey = approvaltest.Key
)

func requireRefused(t *testing.T, err error, reason approval.Reason) {
	t.Helper()
	var r *approval.Refusal
	require.True(t, errors.As(err, &r), "want a refusal (%s), got %v", reason, err)
	require.Equal(t, reason, r.Reason, r.Msg)
}

// history is the ledger's memory of replay keys and approvers.
type history struct {
	used     map[string]approval.Use
	sofar    []string
	recorded []approval.Verified
	exposed  map[string]bool
}

func (h *history) Used(_ context.Context, key string) (*approval.Use, error) {
	if u, ok := h.used[key]; ok {
		return &u, nil
	}
	return nil, nil
}

func (h *history) Approvers(context.Context, approval.Gate) ([]string, error) { return h.sofar, nil }

func (h *history) Recorded(_ context.Context, g approval.Gate, payload string) (*approval.Verified, error) {
	for _, v := range h.recorded {
		if u := h.used[v.ReplayKey]; u.Rollout == g.Rollout && u.Stage == g.Stage && v.Payload == payload {
			return &v, nil
		}
	}
	return nil, nil
}

func (h *history) Expose(_ context.Context, _ approval.Gate, key string) error {
	if h.exposed == nil {
		h.exposed = map[string]bool{}
	}
	h.exposed[key] = true
	return nil
}

func (h *history) Exposed(_ context.Context, key string) (bool, error) { return h.exposed[key], nil }

// record is what the activity does with an accepted approval, at now
// (the ledger stamps the row).
func (h *history) record(g approval.Gate, v approval.Verified) {
	if h.used == nil {
		h.used = map[string]approval.Use{}
	}
	h.used[v.ReplayKey] = approval.Use{Rollout: g.Rollout, Stage: g.Stage, Principal: v.Principal.Name, Payload: v.Payload}
	h.sofar = append(h.sofar, v.Principal.Name)
	h.recorded = append(h.recorded, approval.Verified{Principal: v.Principal, Payload: v.Payload, Signature: v.Signature, ReplayKey: v.ReplayKey, RecordedAt: now})
}

func check(k *approval.Keyring, s approval.Signed, p approval.Policy, starter string, h *history) (approval.Verified, approval.Needed, error) {
	if h == nil {
		h = &history{}
	}
	v, needed, retry, err := k.Check(context.Background(), s, gate, p, starter, h)
	if err == nil && !retry {
		h.record(gate, v)
	}
	return v, needed, err
}

func TestSignedApprovalByAnAllowedKeyIsAccepted(t *testing.T) {
	alice := newKey(t)
	k := keyring(t, map[string]ssh.Signer{"alice@example.com": alice})
	v, needed, err := check(k, sign(t, statement(t, gate, now.Add(-time.Minute)), alice), approval.Policy{}, "", nil)
	require.NoError(t, err)
	require.Equal(t, "ssh:alice@example.com", v.Principal.Name, "with no people file, the person is the identity")
	require.Equal(t, "ssh:alice@example.com", v.Principal.ID)
	require.Equal(t, ssh.FingerprintSHA256(alice.PublicKey()), v.Principal.KeyFingerprint)
	require.Contains(t, v.Signature, "BEGIN SSH SIGNATURE")
	require.True(t, needed.Open(), needed.String())

	// What the ledger keeps verifies offline, against the same signers.
	signers, err := approval.ParseAllowedSigners(ssh.MarshalAuthorizedKey(alice.PublicKey()))
	require.Error(t, err, "a line without principals is not an allowed signer")
	signers, err = approval.ParseAllowedSigners(append([]byte("alice@example.com "), ssh.MarshalAuthorizedKey(alice.PublicKey())...))
	require.NoError(t, err)
	require.NoError(t, approval.VerifyStored(signers, nil, recorded(v, v.Payload), gate))
	tampered := strings.Replace(v.Payload, "canary sleds healthy", "canary sleds on fire", 1)
	require.Error(t, approval.VerifyStored(signers, nil, recorded(v, tampered), gate))
}

func TestRefusedApprovalsSayWhy(t *testing.T) {
	alice, bob, mallory := newKey(t), newKey(t), newKey(t)
	k := keyring(t, map[string]ssh.Signer{"alice": alice, "bob": bob})
	fresh := now.Add(-time.Minute)
	otherDigest := gate
	otherDigest.PlanDigest = strings.Repeat("cd", 32)
	otherGate := gate
	otherGate.Rollout = "fleetsaga/rollout/plan/other"

	wrongNamespace := func() approval.Signed {
		st := statement(t, gate, fresh)
		sig, err := sshsig.Sign(strings.NewReader(string(st.Payload())), alice, sshsig.HashSHA512, "git")
		require.NoError(t, err)
		return approval.Signed{Payload: string(st.Payload()), SSHSig: string(sshsig.Armor(sig))}
	}
	// bob's approval of another gate, recorded there, then sent here.
	replayed := sign(t, statement(t, gate, fresh), bob)
	elsewhere := &history{used: map[string]approval.Use{}}
	var st approval.Statement
	require.NoError(t, jsonUnmarshal(replayed.Payload, &st))
	elsewhere.used[st.Nonce] = approval.Use{Rollout: gate.Rollout, Stage: "rest", Principal: "bob"}

	for _, tc := range []struct {
		name    string
		signed  approval.Signed
		policy  approval.Policy
		starter string
		h       *history
		want    approval.Reason
	}{
		{"unsigned", approval.Signed{Payload: string(statement(t, gate, fresh).Payload())}, approval.Policy{}, "", nil, approval.ReasonUnsigned},
		{"unknown key", sign(t, statement(t, gate, fresh), mallory), approval.Policy{}, "", nil, approval.ReasonUnknownKey},
		{"another digest", sign(t, statement(t, otherDigest, fresh), alice), approval.Policy{}, "", nil, approval.ReasonWrongGate},
		{"another gate's approval", sign(t, statement(t, otherGate, fresh), alice), approval.Policy{}, "", nil, approval.ReasonWrongGate},
		{"replayed nonce", replayed, approval.Policy{}, "", elsewhere, approval.ReasonReplayed},
		{"expired", sign(t, statement(t, gate, now.Add(-2*approval.DefaultMaxAge)), alice), approval.Policy{}, "", nil, approval.ReasonExpired},
		{"wrong namespace", wrongNamespace(), approval.Policy{}, "", nil, approval.ReasonBadSignature},
		{"starter approves own rollout under four eyes", sign(t, statement(t, gate, fresh), alice), approval.Policy{FourEyes: true}, "ssh:alice", nil, approval.ReasonFourEyes},
		{"four eyes with an unknown starter", sign(t, statement(t, gate, fresh), alice), approval.Policy{FourEyes: true}, "", nil, approval.ReasonFourEyes},
		{"not among the allowed", sign(t, statement(t, gate, fresh), alice), approval.Policy{Allowed: []string{"bob", "group:sp-admins"}}, "", nil, approval.ReasonNotAllowed},
		{"same approver twice", sign(t, statement(t, gate, fresh), alice), approval.Policy{Approvers: 2}, "", &history{sofar: []string{"ssh:alice"}}, approval.ReasonAlreadyApproved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := check(k, tc.signed, tc.policy, tc.starter, tc.h)
			requireRefused(t, err, tc.want)
			require.NotContains(t, err.Error(), "PRIVATE KEY")
		})
	}
}

func TestTwoDistinctApproversOpenTheGate(t *testing.T) {
	alice, bob, carol := newKey(t), newKey(t), newKey(t)
	k := keyring(t, map[string]ssh.Signer{"alice": alice, "bob": bob, "carol": carol})
	p := approval.Policy{Approvers: 2, FourEyes: true}
	require.Equal(t, "2 more approvals, not by ssh:alice", p.StillNeeded("ssh:alice", nil).String())

	h := &history{}
	bobs := sign(t, statement(t, gate, now), bob)
	_, needed, err := check(k, bobs, p, "ssh:alice", h)
	require.NoError(t, err)
	require.Equal(t, approval.Needed{Approvers: 1, Not: []string{"ssh:bob", "ssh:alice"}}, needed)
	require.Equal(t, "1 more approval, not by ssh:bob or ssh:alice", needed.String())

	// The activity retried after its write: bob's approval counts once.
	_, needed, retry, err := k.Check(context.Background(), bobs, gate, p, "ssh:alice", h)
	require.NoError(t, err)
	require.True(t, retry)
	require.Equal(t, 1, needed.Approvers)

	_, needed, err = check(k, sign(t, statement(t, gate, now), carol), p, "ssh:alice", h)
	require.NoError(t, err)
	require.True(t, needed.Open())
}

func TestPolicyValidate(t *testing.T) {
	require.NoError(t, approval.Policy{}.Validate())
	require.ErrorContains(t, approval.Policy{Approvers: -1}.Validate(), "at least 1")
	require.ErrorContains(t, approval.Policy{Approvers: 3, Allowed: []string{"a", "b"}}.Validate(), "only 2 principals")
	require.NoError(t, approval.Policy{Approvers: 3, Allowed: []string{"a", "group:ops"}}.Validate())
	require.ErrorContains(t, approval.Policy{Allowed: []string{"group:"}}.Validate(), "empty")
}

func TestAllowedSignersRefusesWhatItCannotHonour(t *testing.T) {
	key := string(ssh.MarshalAuthorizedKey(newKey(t).PublicKey()))
	_, err := approval.ParseAllowedSigners([]byte("alice cert-authority " + key))
	require.ErrorContains(t, err, `option "cert-authority" is not supported`)
	_, err = approval.ParseAllowedSigners([]byte("*@example.com " + key))
	require.ErrorContains(t, err, "patterns are not supported")
	s, err := approval.ParseAllowedSigners([]byte("# ops\n\nalice,alice@example.com namespaces=\"git,fleetsaga\" " + key))
	require.NoError(t, err)
	require.Len(t, s, 1)
}

func recorded(v approval.Verified, payload string) approval.Recorded {
	return approval.Recorded{Method: v.Principal.Method, Principal: v.Principal.Name, KeyFingerprint: v.Principal.KeyFingerprint,
		Signature: v.Signature, Payload: payload, ReplayKey: v.ReplayKey}
}
