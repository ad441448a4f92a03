package ledger

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/crypto/ssh"
)

// Signed chain heads (schema/0012_audit_heads.sql): the database computes
// each row's hash, so its owner can edit a row and recompute every hash
// after it with the schema's own function. A head signed with the
// worker's key, which the database never holds, names the newest row of
// a chain as the worker wrote it; the verifier checks today's chains
// against the worker's public key.

// headTag signs a head with no continuity: the heads of ledgers written
// before schema/0017_audit_head_continuity.sql (prev_head_seq NULL). They
// are still verified with it; headTagAfter signs every head since.
const (
	headTag      = "fleetsaga-audit-head-v1"
	headTagAfter = "fleetsaga-audit-head-v2"
)

// What a head's PrevSeq says besides the seq of the row signed before it.
const (
	PrevChainStart int64 = 0  // the head's row is its chain's first
	PrevAsFound    int64 = -1 // the chain was signed as found (SignHeads, SignUnheadedChains)
)

// SignedHead is one audit_head row.
type SignedHead struct {
	Seq            int64  `json:"seq"`
	Table          string `json:"table"`
	Chain          string `json:"chain"` // as BrokenLink names it
	HeadSeq        int64  `json:"headSeq"`
	HeadHash       string `json:"headHash"`
	KeyFingerprint string `json:"keyFingerprint"`
	Signature      string `json:"signature"` // base64
	// PrevSeq is the seq of the row this key had signed last in the chain
	// when it signed this head (PrevChainStart, PrevAsFound); nil: a head
	// signed in the old format, which says nothing of what it follows.
	PrevSeq *int64 `json:"prevSeq,omitempty"`
}

// HeadMessage is what the worker signed for a head before heads named
// what they follow (tag v1): such heads exist in deployed ledgers and
// still verify with it (SignedHead.Message).
func HeadMessage(table, chain string, headSeq int64, headHash string) []byte {
	return []byte(headTag + "\n" + table + "\n" + chain + "\n" + strconv.FormatInt(headSeq, 10) + "\n" + headHash)
}

// HeadMessageAfter is what the worker signs for a head now: HeadMessage's
// fields under the v2 tag, and prevSeq (SignedHead.PrevSeq). The tags
// differ, so a v2 signature never verifies as a v1 head: clearing
// prev_head_seq does not turn a head into one without continuity.
func HeadMessageAfter(table, chain string, headSeq int64, headHash string, prevSeq int64) []byte {
	return []byte(headTagAfter + "\n" + table + "\n" + chain + "\n" + strconv.FormatInt(headSeq, 10) + "\n" + headHash +
		"\n" + strconv.FormatInt(prevSeq, 10))
}

// Message is what h's signature must verify over: v2 when it names a
// PrevSeq, v1 (an old head) when it does not.
func (h SignedHead) Message() []byte {
	if h.PrevSeq == nil {
		return HeadMessage(h.Table, h.Chain, h.HeadSeq, h.HeadHash)
	}
	return HeadMessageAfter(h.Table, h.Chain, h.HeadSeq, h.HeadHash, *h.PrevSeq)
}

// Verifies says whether h is signed by pub (its fingerprint, and its
// signature over Message).
func (h SignedHead) Verifies(pub ed25519.PublicKey) bool {
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil || h.KeyFingerprint != ssh.FingerprintSHA256(sshPub) {
		return false
	}
	sig, err := base64.StdEncoding.DecodeString(h.Signature)
	return err == nil && ed25519.Verify(pub, h.Message(), sig)
}

// headSigner is the worker's key.
type headSigner struct {
	key         ed25519.PrivateKey
	pub         ed25519.PublicKey
	fingerprint string
	alarm       func(*UnsignedAppend) // OnUnsignedAppend
}

// WithHeadSigner returns the store signing each chain's head with key as
// it appends (the worker's --audit-signing-key). It shares s's database.
func (s *Store) WithHeadSigner(key ed25519.PrivateKey) *Store {
	pub, err := ssh.NewPublicKey(key.Public())
	if err != nil {
		panic(fmt.Sprintf("ledger: an ed25519 key's public key: %v", err)) // cannot fail for ed25519
	}
	c := *s
	c.heads = &headSigner{key: key, pub: key.Public().(ed25519.PublicKey), fingerprint: ssh.FingerprintSHA256(pub)}
	return &c
}

type execQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// chainRow is a row's place in its chain, as its INSERT ... RETURNING
// seq, prev_hash, hash gives it.
type chainRow struct {
	seq            int64
	prevHash, hash string
}

// chainAppend is one append to a chain: insert scans the row it inserted
// (sql.ErrNoRows: a conflict, nothing inserted); existing reads the row
// that conflicted.
type chainAppend struct {
	table, chain string
	insert       func(execQuerier) (chainRow, error)
	existing     func(execQuerier) (chainRow, error)
}

// appendToChain runs the insert and, with a head signer, signs the row it
// inserted in the same transaction, so a row the worker appended is never
// left unsigned by a crash between the two. It signs only a row that
// follows the row this key signed last (or starts the chain), by a head
// whose signature it checked with its own key (a head row anyone can
// INSERT with its fingerprint proves nothing until then): a head
// vouches for the whole chain up to it, so signing after a row the worker
// did not sign would vouch for whoever wrote that. Such a row is committed
// unsigned and reported to the signer's alarm: failing the append would
// stop a device's update half done, and audit verify names the chain
// either way.
func (s *Store) appendToChain(ctx context.Context, c chainAppend) error {
	if s.heads == nil {
		_, err := c.insert(s.db)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: a no-op
	row, err := c.insert(tx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if err := s.heads.checkConflict(ctx, tx, c); err != nil {
			return err
		}
		return tx.Commit()
	case err != nil:
		return err
	}
	if err := s.heads.signAppended(ctx, tx, c.table, c.chain, row); err != nil {
		return err
	}
	return tx.Commit()
}

// sign signs row seq (hash) of chain as following the row this key
// signed at prevSeq (PrevChainStart, PrevAsFound).
func (h *headSigner) sign(ctx context.Context, q execQuerier, table, chain string, seq int64, hash string, prevSeq int64) error {
	sig := ed25519.Sign(h.key, HeadMessageAfter(table, chain, seq, hash, prevSeq))
	_, err := q.ExecContext(ctx, `INSERT INTO audit_head (tbl, chain, head_seq, head_hash, key_fingerprint, signature, prev_head_seq)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tbl, chain, head_seq, key_fingerprint) DO NOTHING`,
		table, chain, seq, hash, h.fingerprint, base64.StdEncoding.EncodeToString(sig), prevSeq)
	if err != nil {
		return fmt.Errorf("ledger: sign the head of %s: %w", chain, err)
	}
	return nil
}

// SignHeads signs the newest row of every chain on a ledger that holds
// no head at all, and says how many it signed: the worker calls it at
// start, so the chains written before the fleet had a key are covered from
// then on. It trusts the ledger as it is now (verify against an earlier
// export for before). On a ledger that holds heads it signs nothing: a
// chain without a head there was written by someone without the key, or
// its heads were removed, and signing it would vouch for that.
func (s *Store) SignHeads(ctx context.Context) (int, error) {
	if s.heads == nil {
		return 0, nil
	}
	if headed, err := s.HasSignedHeads(ctx); err != nil || headed {
		return 0, err
	}
	return s.SignUnheadedChains(ctx)
}

// HasSignedHeads says whether the ledger holds any signed head: a fleet
// whose workers sign.
func (s *Store) HasSignedHeads(ctx context.Context) (bool, error) {
	var headed bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM audit_head)`).Scan(&headed); err != nil {
		return false, fmt.Errorf("ledger: read chain heads: %w", err)
	}
	return headed, nil
}

// HasHeadsOfThisKey says whether any signed head is this signer's.
func (s *Store) HasHeadsOfThisKey(ctx context.Context) (bool, error) {
	if s.heads == nil {
		return false, nil
	}
	var mine bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM audit_head WHERE key_fingerprint = $1)`, s.heads.fingerprint).Scan(&mine); err != nil {
		return false, fmt.Errorf("ledger: read chain heads: %w", err)
	}
	return mine, nil
}

// SignUnheadedChains signs the newest row of every chain no head of this
// key names, though the ledger holds heads (the worker's
// --audit-sign-unheaded-chains: after a key rotation, or after workers ran
// without the key). It vouches for those chains as they are now.
func (s *Store) SignUnheadedChains(ctx context.Context) (int, error) {
	if s.heads == nil {
		return 0, nil
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT * FROM (
		  SELECT 'update_event' AS tbl, 'attempt ' || attempt_id::text AS chain, seq, hash FROM
		    (SELECT DISTINCT ON (attempt_id) attempt_id, seq, hash FROM update_event ORDER BY attempt_id, seq DESC) e
		  UNION ALL
		  SELECT 'rollout_approval', 'rollout ' || rollout_id, seq, hash FROM
		    (SELECT DISTINCT ON (rollout_id) rollout_id, seq, hash FROM rollout_approval ORDER BY rollout_id, seq DESC) a
		) heads
		WHERE NOT EXISTS (SELECT 1 FROM audit_head h
		  WHERE h.tbl = heads.tbl AND h.chain = heads.chain AND h.key_fingerprint = $1)`, s.heads.fingerprint)
	if err != nil {
		return 0, fmt.Errorf("ledger: read chain heads: %w", err)
	}
	type head struct {
		table, chain string
		seq          int64
		hash         string
	}
	var heads []head
	for rows.Next() {
		var h head
		if err := rows.Scan(&h.table, &h.chain, &h.seq, &h.hash); err != nil {
			rows.Close()
			return 0, fmt.Errorf("ledger: read chain heads: %w", err)
		}
		heads = append(heads, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("ledger: read chain heads: %w", err)
	}
	for _, h := range heads {
		if err := s.heads.sign(ctx, s.db, h.table, h.chain, h.seq, h.hash, PrevAsFound); err != nil {
			return 0, err
		}
	}
	return len(heads), nil
}

const headColumns = `seq, tbl, chain, head_seq, head_hash, key_fingerprint, signature, prev_head_seq`

func scanHead(row interface{ Scan(...any) error }) (SignedHead, error) {
	var h SignedHead
	var prev sql.NullInt64
	err := row.Scan(&h.Seq, &h.Table, &h.Chain, &h.HeadSeq, &h.HeadHash, &h.KeyFingerprint, &h.Signature, &prev)
	if prev.Valid {
		h.PrevSeq = &prev.Int64
	}
	return h, err
}
