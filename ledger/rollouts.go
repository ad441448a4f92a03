package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// Approval is one approval given at a rollout's gate. A gate may need
// several, from distinct approvers.
type Approval struct {
	Rollout string `json:"rollout"`
	Stage   string `json:"stage"`
	By      string `json:"by"`
	Reason  string `json:"reason"`
	// PlanDigest is the digest of the plan the gate showed and the
	// approval bound ("" for rollouts that did not plan at their gates).
	PlanDigest string    `json:"planDigest,omitempty"`
	At         time.Time `json:"at"`

	// Who signed, proved; empty for unsigned approvals.
	// Principal is the person (approval.Principal.Name).
	Principal      string `json:"principal,omitempty"`
	Method         string `json:"method,omitempty"`         // "ssh", "oidc", or MethodUnsigned
	KeyFingerprint string `json:"keyFingerprint,omitempty"` // SSH SHA256:…, or OIDC issuer#subject
	Signature      string `json:"signature,omitempty"`      // armored SSHSIG ("" for OIDC)
	Payload        string `json:"payload,omitempty"`        // the statement, exactly as signed
	ReplayKey      string `json:"replayKey,omitempty"`      // used once: the statement's nonce, or a digest of an ID token's verified claims

	// Seq, PrevHash and Hash chain the rollout's approvals (audit.go).
	Seq      int64  `json:"seq,omitempty"`
	PrevHash string `json:"prevHash,omitempty"`
	Hash     string `json:"hash,omitempty"`
}

// MethodUnsigned is the Method of an approval a worker with no keyring
// accepted without a signature (approval.MethodUnsigned): nothing to
// re-check, its By is as typed.
const MethodUnsigned = "unsigned"

// ErrReplayed is an approval whose replay key the ledger holds already.
var ErrReplayed = errors.New("ledger: this approval's nonce was used before")

// RecordApproval stores an approval. A signed one is recorded once per
// replay key: a key used before (by another approval) is ErrReplayed. An
// unsigned one (no replay key) is recorded once per stage, plan and typed
// name. An approver's approval of a new plan at the same gate is a new row.
func (s *Store) RecordApproval(ctx context.Context, a Approval) error {
	err := s.appendToChain(ctx, chainAppend{table: "rollout_approval", chain: "rollout " + a.Rollout,
		insert: func(q execQuerier) (r chainRow, err error) {
			err = q.QueryRowContext(ctx, `INSERT INTO rollout_approval (rollout_id, stage, approved_by, reason, plan_digest,
				principal, method, key_fingerprint, signature, payload, replay_key)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (rollout_id, stage, plan_digest, approved_by) WHERE replay_key = '' DO NOTHING
			RETURNING seq, prev_hash, hash`,
				a.Rollout, a.Stage, a.By, a.Reason, a.PlanDigest, a.Principal, a.Method, a.KeyFingerprint, a.Signature, a.Payload, a.ReplayKey).
				Scan(&r.seq, &r.prevHash, &r.hash)
			return r, err
		},
		existing: func(q execQuerier) (r chainRow, err error) {
			err = q.QueryRowContext(ctx, `SELECT seq, prev_hash, hash FROM rollout_approval
				WHERE rollout_id = $1 AND stage = $2 AND plan_digest = $3 AND approved_by = $4 AND replay_key = ''`,
				a.Rollout, a.Stage, a.PlanDigest, a.By).Scan(&r.seq, &r.prevHash, &r.hash)
			return r, err
		},
	})
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && pqErr.Code == "23505" && pqErr.Constraint == "rollout_approval_replay_once" {
		// The same approval written again (a retried write) is a no-op;
		// any other use of its replay key is a replay.
		prev, perr := s.ApprovalByReplayKey(ctx, a.ReplayKey)
		if perr == nil && prev != nil && prev.Rollout == a.Rollout && prev.Stage == a.Stage && prev.Payload == a.Payload && prev.Principal == a.Principal {
			return nil
		}
		return ErrReplayed
	}
	if err != nil {
		return fmt.Errorf("ledger: record approval: %w", err)
	}
	return nil
}

const approvalColumns = `rollout_id, stage, approved_by, reason, plan_digest, at, principal, method, key_fingerprint,
	signature, payload, replay_key, seq, prev_hash, hash`

func scanApproval(row interface{ Scan(...any) error }) (Approval, error) {
	var a Approval
	err := row.Scan(&a.Rollout, &a.Stage, &a.By, &a.Reason, &a.PlanDigest, &a.At, &a.Principal, &a.Method, &a.KeyFingerprint,
		&a.Signature, &a.Payload, &a.ReplayKey, &a.Seq, &a.PrevHash, &a.Hash)
	return a, err
}

// Approvals lists a rollout's approvals in order.
func (s *Store) Approvals(ctx context.Context, rollout string) ([]Approval, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+approvalColumns+` FROM rollout_approval WHERE rollout_id = $1 ORDER BY seq`, rollout)
	if err != nil {
		return nil, fmt.Errorf("ledger: approvals: %w", err)
	}
	defer rows.Close()
	var out []Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// ApprovalByReplayKey returns the approval that used key, or nil.
func (s *Store) ApprovalByReplayKey(ctx context.Context, key string) (*Approval, error) {
	if key == "" {
		return nil, nil
	}
	a, err := scanApproval(s.db.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM rollout_approval WHERE replay_key = $1`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: approval by replay key: %w", err)
	}
	return &a, nil
}
