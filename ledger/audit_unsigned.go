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

// newestHead is the hash of the newest row of chain a head of this key
// names; "" when none does.
func (h *headSigner) newestHead(ctx context.Context, q execQuerier, table, chain string) (string, error) {
	var hash string
	err := q.QueryRowContext(ctx, `SELECT head_hash FROM audit_head WHERE tbl = $1 AND chain = $2 AND key_fingerprint = $3
		ORDER BY head_seq DESC LIMIT 1`, table, chain, h.fingerprint).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("ledger: read this key's head of %s: %w", chain, err)
	}
	return hash, nil
}

// signAppended signs the row this transaction inserted if the row before
// it is the one this key signed last (or there is none).
func (h *headSigner) signAppended(ctx context.Context, q execQuerier, table, chain string, row chainRow) error {
	signed, err := h.newestHead(ctx, q, table, chain)
	if err != nil {
		return err
	}
	if row.prevHash != signed {
		why := fmt.Sprintf("the row before it (hash %s) is not the row this key signed last (hash %s)", short(row.prevHash), short(signed))
		if signed == "" {
			why = fmt.Sprintf("no row of the chain is signed with this key, and it has a row before this one (hash %s)", short(row.prevHash))
		}
		h.raise(&UnsignedAppend{Table: table, Chain: chain, Seq: row.seq, Why: why})
		return nil
	}
	return h.sign(ctx, q, table, chain, row.seq, row.hash)
}

// checkConflict raises the alarm when an append inserted nothing because
// a row this key never signed holds its place: a retried append finds its
// own signed row, an owner's preempting row is unsigned.
func (h *headSigner) checkConflict(ctx context.Context, q execQuerier, c chainAppend) error {
	row, err := c.existing(q)
	if err != nil {
		return fmt.Errorf("ledger: read the row that holds this append's place in %s: %w", c.chain, err)
	}
	var signed bool
	if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM audit_head WHERE tbl = $1 AND chain = $2 AND head_seq = $3
		AND head_hash = $4 AND key_fingerprint = $5)`, c.table, c.chain, row.seq, row.hash, h.fingerprint).Scan(&signed); err != nil {
		return fmt.Errorf("ledger: read the heads of %s: %w", c.chain, err)
	}
	if !signed {
		h.raise(&UnsignedAppend{Table: c.table, Chain: c.chain, Seq: row.seq,
			Why: "the worker's row was not inserted: a row this key never signed already holds its place"})
	}
	return nil
}
