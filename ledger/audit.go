package ledger

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"database/sql"
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

// AuditRecord is one line of `starter audit export`: a signed chain
// head, an event of an attempt's chain or an approval of a rollout's.
type AuditRecord struct {
	Table    string      `json:"table"` // "audit_head", "update_event" or "rollout_approval"
	Head     *SignedHead `json:"head,omitempty"`
	Event    *Event      `json:"event,omitempty"`
	Approval *Approval   `json:"approval,omitempty"`
}

// chain names the record's chain and place, for a broken link's report.
func (r AuditRecord) chain() (chain string, seq int64, prev, hash, want string) {
	if r.Event != nil {
		return "attempt " + r.Event.AttemptID.String(), r.Event.Seq, r.Event.PrevHash, r.Event.Hash, EventHash(*r.Event)
	}
	return "rollout " + r.Approval.Rollout, r.Approval.Seq, r.Approval.PrevHash, r.Approval.Hash, ApprovalHash(*r.Approval)
}

// useReplayKey counts a signed approval's signature once: a replay key
// (the statement's nonce, or the ID token's digest) on a second row is
// the same signature copied.
func (v *AuditVerifier) useReplayKey(a Approval, link func(string, ...any) error) error {
	if a.ReplayKey == "" {
		return link("a signed approval with no replay key: a worker records the signed nonce or the token's digest")
	}
	if first, ok := v.replays[a.ReplayKey]; ok {
		return link("its replay key %s is the one %s used: one signature counted twice", short(a.ReplayKey), first)
	}
	if v.replays == nil {
		v.replays = map[string]string{}
	}
	v.replays[a.ReplayKey] = fmt.Sprintf("rollout %s seq %d", a.Rollout, a.Seq)
	return nil
}

// ExportAudit calls emit with every signed head (in the order written),
// then every event and approval, each chain in order (events by attempt,
// then approvals by rollout): a verifier reads the heads before the
// chains they name. It reads one snapshot (a read-only REPEATABLE READ
// transaction): a worker appending meanwhile adds neither a head nor a
// row the export holds without the other.
func (s *Store) ExportAudit(ctx context.Context, emit func(AuditRecord) error) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("ledger: export: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to keep
	hrows, err := tx.QueryContext(ctx, `SELECT `+headColumns+` FROM audit_head ORDER BY seq`)
	if err != nil {
		return fmt.Errorf("ledger: export chain heads: %w", err)
	}
	defer hrows.Close()
	for hrows.Next() {
		h, err := scanHead(hrows)
		if err != nil {
			return fmt.Errorf("ledger: export chain heads: %w", err)
		}
		if err := emit(AuditRecord{Table: "audit_head", Head: &h}); err != nil {
			return err
		}
	}
	if err := hrows.Err(); err != nil {
		return fmt.Errorf("ledger: export chain heads: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+eventColumns+` FROM update_event ORDER BY attempt_id, seq`)
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
	arows, err := tx.QueryContext(ctx, `SELECT `+approvalColumns+` FROM rollout_approval ORDER BY rollout_id, seq`)
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
// offline; Finish ends the check once the last record was added.
type AuditVerifier struct {
	// CheckSignature re-checks a signed approval (ssh or oidc): its
	// statement, and its signature as far as the caller's keyring allows
	// (activities.CheckStoredApproval). nil: no approval is checked.
	CheckSignature func(Approval) error `json:"-"`
	// Against, when set, holds the chains of an earlier export, each of
	// which must still be a prefix of today's (LoadEarlierExport).
	Against *EarlierExport `json:"-"`
	// HeadKey, when set, is the worker's public key: every signed head
	// must verify with it and name a row of today's chains, every chain
	// must have a signed row, every row after a chain's first signed one
	// must be signed itself, and the head a head names as the one before
	// it (SignedHead.PrevSeq) must be held.
	HeadKey ed25519.PublicKey `json:"-"`
	// RequireSigned fails an unsigned approval: a keyring was given, and
	// an unsigned row is one it cannot check (audit verify without
	// --allow-unsigned).
	RequireSigned bool `json:"-"`

	cur          chainState
	heads        map[chainKey]map[int64]verifiedHead // signed heads by seq
	seen         map[chainKey]bool
	replays      map[string]string       // signed approvals' replay keys: the chain and seq that used each
	earlierHeads map[earlierHeadKey]bool // the earlier export's heads today's ledger holds

	// What was checked.
	Records         int  `json:"records"`
	Chains          int  `json:"chains"`
	Signatures      int  `json:"signatures"` // approvals whose statement and signature CheckSignature accepted
	SSH             int  `json:"ssh"`
	OIDC            int  `json:"oidc"` // their token is not kept: see approval.VerifyStored
	Unsigned        int  `json:"unsigned"`
	Exposed         int  `json:"exposed"`                   // exposed marks (RecordExposed), which are not approvals
	AllowedUnsigned bool `json:"allowedUnsigned,omitempty"` // unsigned approvals passed though a keyring was given (--allow-unsigned)
	Heads           int  `json:"heads"`                     // signed head rows read
	HeadChains      int  `json:"headChains"`                // chains whose rows verified heads name from their first signed row on
	Earlier         int  `json:"earlierChains"`             // chains of the earlier export found as prefixes
}

type chainKey struct{ table, chain string }

// chainState is the chain being read.
type chainState struct {
	key      chainKey
	rows     int
	lastSeq  int64
	prevHash string
	signed   bool // a verified head names a row of the chain read so far
	// lastSigned is the seq of the newest row read so far that a verified
	// head names (0: none).
	lastSigned int64
}

// Add checks the next record; the first error is the first broken link.
func (v *AuditVerifier) Add(r AuditRecord) error {
	n := 0
	for _, p := range []bool{r.Head != nil, r.Event != nil, r.Approval != nil} {
		if p {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("audit record of table %q: want exactly one of head, event and approval", r.Table)
	}
	if r.Head != nil {
		return v.addHead(*r.Head)
	}
	chain, seq, prev, hash, want := r.chain()
	if k := (chainKey{r.Table, chain}); k != v.cur.key {
		if err := v.endChain(); err != nil {
			return err
		}
		v.cur = chainState{key: k}
		v.Chains++
	}
	v.Records++
	link := func(why string, args ...any) error {
		return &BrokenLink{Table: r.Table, Chain: chain, Seq: seq, Why: fmt.Sprintf(why, args...)}
	}
	switch {
	case seq <= 0:
		return link("seq %d: the ledger numbers rows from 1 (bigserial), so no worker wrote it", seq)
	case v.cur.rows > 0 && seq <= v.cur.lastSeq:
		return link("seq %d is not after the row before it (seq %d): the ledger's seqs only increase", seq, v.cur.lastSeq)
	case prev != v.cur.prevHash:
		return link("its prev_hash %s is not the hash %s of the row before it: a row before it was removed, inserted or edited with its hash", short(prev), short(v.cur.prevHash))
	case hash != want:
		return link("its content does not match its hash (%s stored, %s computed): the row was edited", short(hash), short(want))
	}
	v.cur.prevHash, v.cur.lastSeq = hash, seq
	v.cur.rows++
	if err := v.checkRowAgainstHeads(seq, hash); err != nil {
		return err
	}
	if err := v.checkRowAgainstEarlier(seq, hash); err != nil {
		return err
	}
	if a := r.Approval; a != nil {
		return v.checkApproval(*a, link)
	}
	return nil
}

// checkApproval counts an approval by its method and re-checks a signed
// one. A method no worker writes is a row someone else wrote.
func (v *AuditVerifier) checkApproval(a Approval, link func(string, ...any) error) error {
	switch a.Method {
	case "", MethodUnsigned:
		v.Unsigned++
		if v.RequireSigned {
			return link("an unsigned approval (by %q, as typed) that the keyring given cannot check: pass --allow-unsigned to accept unsigned approvals", a.By)
		}
		return nil
	case "ssh":
		v.SSH++
	case "oidc":
		v.OIDC++
	case MethodExposed:
		// A mark, not an approval (RecordExposed): nobody signed it and no
		// gate counts it; its key is used once like a signature's.
		if !strings.HasPrefix(a.Stage, ExposedStagePrefix) || !strings.HasPrefix(a.ReplayKey, ExposedStagePrefix) || a.By != MethodExposed ||
			a.Principal != "" || a.Signature != "" || a.Payload != "" {
			return link("an exposed mark not as a worker writes it (stage %q, by %q, replay key %s)", a.Stage, a.By, short(a.ReplayKey))
		}
		v.Exposed++
		return v.useReplayKey(a, link)
	default:
		return link("unknown method %q: a worker records only ssh, oidc, unsigned approvals and exposed marks", a.Method)
	}
	if err := v.useReplayKey(a, link); err != nil {
		return err
	}
	if v.CheckSignature == nil {
		return nil
	}
	if err := v.CheckSignature(a); err != nil {
		return link("the approval by %s does not verify: %v", a.Principal, err)
	}
	v.Signatures++
	return nil
}

// Finish ends the check: the last chain's heads, and the chains of the
// earlier export and the signed heads that name chains today's ledger
// does not hold.
func (v *AuditVerifier) Finish() error {
	if err := v.endChain(); err != nil {
		return err
	}
	v.cur = chainState{}
	if err := v.missingSignedChains(); err != nil {
		return err
	}
	if err := v.missingEarlierHeads(); err != nil {
		return err
	}
	return v.missingEarlierChains()
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
	if err := s.ExportAudit(ctx, v.Add); err != nil {
		return v, err
	}
	return v, v.Finish()
}
