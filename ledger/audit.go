package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The audit chain (schema/0009_audit_chain.sql): each update_event row
// names the hash of the one before it in its attempt, each
// rollout_approval row the one before it in its rollout, and carries its
// own hash over its content. The database computes them as it appends;
// these functions compute them again, offline, from an export.

const (
	eventHashTag    = "fleetsaga-event-v1"
	approvalHashTag = "fleetsaga-approval-v1"
)

// auditHash is the SQL function audit_hash: sha256 over the tag, prev and
// each field as "<octet length>:<text>", in hex.
func auditHash(tag, prev string, fields ...string) string {
	var b strings.Builder
	b.WriteString(tag + "\n" + prev + "\n")
	for _, f := range fields {
		b.WriteString(strconv.Itoa(len(f)) + ":" + f)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// auditTime is the SQL function audit_time: UTC, microseconds.
func auditTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// EventHash is the hash an event must carry, given its PrevHash.
func EventHash(e Event) string {
	return auditHash(eventHashTag, e.PrevHash, e.AttemptID.String(), e.Step, e.State, e.Message, e.Worker, auditTime(e.At))
}

// ApprovalHash is the hash an approval must carry, given its PrevHash.
func ApprovalHash(a Approval) string {
	return auditHash(approvalHashTag, a.PrevHash, a.Rollout, a.Stage, a.By, a.Reason, a.PlanDigest, auditTime(a.At),
		a.Principal, a.Method, a.KeyFingerprint, a.Signature, a.Payload, a.ReplayKey)
}

// AuditRecord is one line of `starter audit export`: an event of an
// attempt's chain or an approval of a rollout's, in chain order.
type AuditRecord struct {
	Table    string    `json:"table"` // "update_event" or "rollout_approval"
	Event    *Event    `json:"event,omitempty"`
	Approval *Approval `json:"approval,omitempty"`
}

// chain names the record's chain and place, for a broken link's report.
func (r AuditRecord) chain() (chain string, seq int64, prev, hash, want string) {
	if r.Event != nil {
		return "attempt " + r.Event.AttemptID.String(), r.Event.Seq, r.Event.PrevHash, r.Event.Hash, EventHash(*r.Event)
	}
	return "rollout " + r.Approval.Rollout, r.Approval.Seq, r.Approval.PrevHash, r.Approval.Hash, ApprovalHash(*r.Approval)
}

// ExportAudit calls emit with every event and approval, each chain in
// order (events by attempt, then approvals by rollout).
func (s *Store) ExportAudit(ctx context.Context, emit func(AuditRecord) error) error {
	rows, err := s.db.QueryContext(ctx, `SELECT `+eventColumns+` FROM update_event ORDER BY attempt_id, seq`)
	if err != nil {
		return fmt.Errorf("ledger: export events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return fmt.Errorf("ledger: export events: %w", err)
		}
		if err := emit(AuditRecord{Table: "update_event", Event: &e}); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("ledger: export events: %w", err)
	}
	arows, err := s.db.QueryContext(ctx, `SELECT `+approvalColumns+` FROM rollout_approval ORDER BY rollout_id, seq`)
	if err != nil {
		return fmt.Errorf("ledger: export approvals: %w", err)
	}
	defer arows.Close()
	for arows.Next() {
		a, err := scanApproval(arows)
		if err != nil {
			return fmt.Errorf("ledger: export approvals: %w", err)
		}
		if err := emit(AuditRecord{Table: "rollout_approval", Approval: &a}); err != nil {
			return err
		}
	}
	return arows.Err()
}

// BrokenLink is the first place an audit chain does not hold.
type BrokenLink struct {
	Table string
	Chain string // "attempt <uuid>" or "rollout <id>"
	Seq   int64
	Why   string
}

func (b *BrokenLink) Error() string {
	return fmt.Sprintf("audit chain broken at %s seq %d (%s): %s", b.Table, b.Seq, b.Chain, b.Why)
}

// AuditVerifier re-checks records in the order ExportAudit gives them,
// offline. checkSig, when set, re-checks each signed approval's signature
// and statement (approval.VerifyStored).
type AuditVerifier struct {
	CheckSignature func(Approval) error `json:"-"`

	chain    string
	prevHash string
	// Records and Chains count what was checked.
	Records    int `json:"records"`
	Chains     int `json:"chains"`
	Signatures int `json:"signatures"`
}

// Add checks the next record; the first error is the first broken link.
func (v *AuditVerifier) Add(r AuditRecord) error {
	if (r.Event == nil) == (r.Approval == nil) {
		return fmt.Errorf("audit record of table %q: want exactly one of event and approval", r.Table)
	}
	chain, seq, prev, hash, want := r.chain()
	if chain != v.chain {
		v.chain, v.prevHash = chain, ""
		v.Chains++
	}
	v.Records++
	link := func(why string, args ...any) error {
		return &BrokenLink{Table: r.Table, Chain: chain, Seq: seq, Why: fmt.Sprintf(why, args...)}
	}
	switch {
	case prev != v.prevHash:
		return link("its prev_hash %s is not the hash %s of the row before it: a row before it was removed, inserted or edited with its hash", short(prev), short(v.prevHash))
	case hash != want:
		return link("its content does not match its hash (%s stored, %s computed): the row was edited", short(hash), short(want))
	}
	v.prevHash = hash
	if a := r.Approval; a != nil && a.Method != "" && a.Method != MethodUnsigned && v.CheckSignature != nil {
		if err := v.CheckSignature(*a); err != nil {
			return link("the approval by %s does not verify: %v", a.Principal, err)
		}
		v.Signatures++
	}
	return nil
}

func short(h string) string {
	if h == "" {
		return "(none)"
	}
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// VerifyAudit re-checks the whole ledger's chains (and, with
// checkSignature, every signed approval); the error names the first broken
// link.
func (s *Store) VerifyAudit(ctx context.Context, checkSignature func(Approval) error) (*AuditVerifier, error) {
	v := &AuditVerifier{CheckSignature: checkSignature}
	return v, s.ExportAudit(ctx, v.Add)
}
