package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// UnsignedAppend is a row the worker appended, or meant to, and did not
// sign: the chain holds a row before it that no head of the worker's key
// names, or the worker's row was not inserted because another row holds
// its place. Someone without the key wrote to the chain; audit verify
// --audit-public-key fails it from that row on.
type UnsignedAppend struct {
	Table, Chain string
	Seq          int64
	Why          string
	// Bogus: a head row with this key's fingerprint does not verify with
	// the key (BogusHead), a forgery aimed at the worker's own signing.
	Bogus bool
}

func (u *UnsignedAppend) Error() string {
	return fmt.Sprintf("audit: %s seq %d (%s) not signed with the worker's key: %s", u.Table, u.Seq, u.Chain, u.Why)
}

// OnUnsignedAppend sets what the signer does with a row it refused to
// sign (the worker logs it as an error); without it the refusal is only
// visible to audit verify. It changes s's signer, not a copy.
func (s *Store) OnUnsignedAppend(alarm func(*UnsignedAppend)) {
	if s.heads != nil {
		s.heads.alarm = alarm
	}
}

func (h *headSigner) raise(u *UnsignedAppend) {
	if h.alarm != nil {
		h.alarm(u)
	}
}

// newestHead is the newest head of chain that names this key's
// fingerprint; nil when none does. A head with this fingerprint whose
// signature does not verify with this key is *BogusHead: the worker never
// builds on it (it would vouch for whatever row it names).
func (h *headSigner) newestHead(ctx context.Context, q execQuerier, table, chain string) (*SignedHead, error) {
	head, err := scanHead(q.QueryRowContext(ctx, `SELECT `+headColumns+` FROM audit_head WHERE tbl = $1 AND chain = $2 AND key_fingerprint = $3
		ORDER BY head_seq DESC LIMIT 1`, table, chain, h.fingerprint))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: read this key's head of %s: %w", chain, err)
	}
	if !head.Verifies(h.pub) {
		return nil, &BogusHead{Head: head}
	}
	return &head, nil
}

// BogusHead is a head row that names the worker's key fingerprint but is
// not signed with its key: someone without the key wrote it, to make the
// worker sign after a row it did not write. The worker signs nothing more
// in that chain (its next rows go unsigned, and the alarm names them).
type BogusHead struct{ Head SignedHead }

func (b *BogusHead) Error() string {
	return fmt.Sprintf("audit_head row %d (%s chain %s, head seq %d) names this worker's key %s but its signature does not verify with it: written by someone without the key",
		b.Head.Seq, b.Head.Table, b.Head.Chain, b.Head.HeadSeq, b.Head.KeyFingerprint)
}

// signAppended signs the row this transaction inserted if the row before
// it is the one this key signed last (verified), or there is none.
func (h *headSigner) signAppended(ctx context.Context, q execQuerier, table, chain string, row chainRow) error {
	head, err := h.newestHead(ctx, q, table, chain)
	if bogus := (*BogusHead)(nil); errors.As(err, &bogus) {
		h.raise(&UnsignedAppend{Table: table, Chain: chain, Seq: row.seq, Bogus: true,
			Why: bogus.Error() + "; the worker signs nothing in this chain after it"})
		return nil
	}
	if err != nil {
		return err
	}
	signed, prev := "", PrevChainStart
	if head != nil {
		signed, prev = head.HeadHash, head.HeadSeq
	}
	if row.prevHash != signed {
		why := fmt.Sprintf("the row before it (hash %s) is not the row this key signed last (hash %s)", short(row.prevHash), short(signed))
		if signed == "" {
			why = fmt.Sprintf("no row of the chain is signed with this key, and it has a row before this one (hash %s)", short(row.prevHash))
		}
		h.raise(&UnsignedAppend{Table: table, Chain: chain, Seq: row.seq, Why: why})
		return nil
	}
	return h.sign(ctx, q, table, chain, row.seq, row.hash, prev)
}

// checkConflict raises the alarm when an append inserted nothing because
// a row this key never signed holds its place: a retried append finds its
// own signed row, an owner's preempting row is unsigned (or named by a
// head with this key's fingerprint that does not verify).
func (h *headSigner) checkConflict(ctx context.Context, q execQuerier, c chainAppend) error {
	row, err := c.existing(q)
	if err != nil {
		return fmt.Errorf("ledger: read the row that holds this append's place in %s: %w", c.chain, err)
	}
	head, err := scanHead(q.QueryRowContext(ctx, `SELECT `+headColumns+` FROM audit_head WHERE tbl = $1 AND chain = $2 AND head_seq = $3
		AND key_fingerprint = $4`, c.table, c.chain, row.seq, h.fingerprint))
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("ledger: read the heads of %s: %w", c.chain, err)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows) || head.HeadHash != row.hash:
		h.raise(&UnsignedAppend{Table: c.table, Chain: c.chain, Seq: row.seq,
			Why: "the worker's row was not inserted: a row this key never signed already holds its place"})
	case !head.Verifies(h.pub):
		h.raise(&UnsignedAppend{Table: c.table, Chain: c.chain, Seq: row.seq, Bogus: true,
			Why: "the worker's row was not inserted: the row that holds its place is named by " + (&BogusHead{Head: head}).Error()})
	}
	return nil
}
