package ledger

import (
	"fmt"
	"sort"

	"golang.org/x/crypto/ssh"
)

// What a chain's own links cannot show: rows removed from its end, a
// chain removed whole (TRUNCATE skips row triggers), or a chain edited and
// recomputed with the schema's own function. An earlier export (kept away
// from the database) and heads signed with the worker's key show them.

// ChainChanged is a chain that is not what an earlier export or a signed
// head says it was.
type ChainChanged struct {
	Table, Chain string
	Why          string
}

func (c *ChainChanged) Error() string { return "audit trail changed: " + c.Why }

func changed(k chainKey, why string, args ...any) error {
	return &ChainChanged{Table: k.table, Chain: k.chain, Why: fmt.Sprintf(why, args...)}
}

// earlierHead is a chain's newest row in an earlier export.
type earlierHead struct {
	rows int
	seq  int64
	hash string
}

// EarlierExport is an earlier `audit export`'s chains, each by its
// newest row: today's chain must hold that row at the same place, so
// (its links verified) the whole earlier chain is its prefix.
type EarlierExport struct {
	own    AuditVerifier // the export's own links hold
	chains map[chainKey]earlierHead
	heads  []earlierHeadKey
}

// earlierHeadKey is a signed head as an earlier export held it.
type earlierHeadKey struct {
	table, chain, hash, fingerprint string
	seq                             int64
}

func earlierHeadOf(h SignedHead) earlierHeadKey {
	return earlierHeadKey{table: h.Table, chain: h.Chain, hash: h.HeadHash, fingerprint: h.KeyFingerprint, seq: h.HeadSeq}
}

// missingEarlierHeads names the first head of the earlier export that
// today's ledger does not hold.
func (v *AuditVerifier) missingEarlierHeads() error {
	if v.Against == nil {
		return nil
	}
	for _, h := range v.Against.heads {
		if !v.earlierHeads[h] {
			return changed(chainKey{h.table, h.chain}, "the earlier export's signed head of %s chain %s (seq %d, hash %s) is not in today's ledger: audit_head was truncated or its rows deleted (and perhaps signed again)",
				h.table, h.chain, h.seq, short(h.hash))
		}
	}
	return nil
}

// NewEarlierExport starts reading an earlier export.
func NewEarlierExport() *EarlierExport { return &EarlierExport{chains: map[chainKey]earlierHead{}} }

// Add reads the export's next record; an export whose own chains are
// broken is refused (it proves nothing).
func (e *EarlierExport) Add(r AuditRecord) error {
	if h := r.Head; h != nil {
		// its signature was checked when that export was verified; today's
		// ledger must still hold it (audit_head is append-only, TRUNCATE
		// skips row triggers)
		e.heads = append(e.heads, earlierHeadOf(*h))
		return nil
	}
	if err := e.own.Add(r); err != nil {
		return fmt.Errorf("the earlier export itself: %w", err)
	}
	c := e.own.cur
	e.chains[c.key] = earlierHead{rows: c.rows, seq: c.lastSeq, hash: c.prevHash}
	return nil
}

// Chains is how many chains the export holds.
func (e *EarlierExport) Chains() int { return len(e.chains) }

func (v *AuditVerifier) checkRowAgainstEarlier(seq int64, hash string) error {
	if v.Against == nil {
		return nil
	}
	h, ok := v.Against.chains[v.cur.key]
	if !ok || v.cur.rows != h.rows {
		return nil
	}
	if seq != h.seq || hash != h.hash {
		return changed(v.cur.key, "%s chain %s: its row %d (seq %d, hash %s) is not the earlier export's (seq %d, hash %s): the chain was rewritten since",
			v.cur.key.table, v.cur.key.chain, h.rows, seq, short(hash), h.seq, short(h.hash))
	}
	v.Earlier++
	return nil
}

func (v *AuditVerifier) endEarlierChain() error {
	if v.Against == nil || v.cur.key == (chainKey{}) {
		return nil
	}
	if v.seen == nil {
		v.seen = map[chainKey]bool{}
	}
	v.seen[v.cur.key] = true
	if h, ok := v.Against.chains[v.cur.key]; ok && v.cur.rows < h.rows {
		return changed(v.cur.key, "%s chain %s has %d rows, the earlier export had %d: its rows after seq %d were removed (the export's newest was seq %d)",
			v.cur.key.table, v.cur.key.chain, v.cur.rows, h.rows, v.cur.lastSeq, h.seq)
	}
	return nil
}

func (v *AuditVerifier) missingEarlierChains() error {
	if v.Against == nil {
		return nil
	}
	for _, k := range sortedKeys(v.Against.chains) {
		if !v.seen[k] {
			h := v.Against.chains[k]
			return changed(k, "%s chain %s of the earlier export (%d rows, head seq %d) is not in today's ledger: it was removed (a TRUNCATE or a DELETE)",
				k.table, k.chain, h.rows, h.seq)
		}
	}
	return nil
}

func (v *AuditVerifier) addHead(h SignedHead) error {
	v.Heads++
	if v.Against != nil {
		if v.earlierHeads == nil {
			v.earlierHeads = map[earlierHeadKey]bool{}
		}
		v.earlierHeads[earlierHeadOf(h)] = true
	}
	if v.HeadKey == nil {
		return nil
	}
	k := chainKey{h.Table, h.Chain}
	pub, err := ssh.NewPublicKey(v.HeadKey)
	if err != nil {
		return fmt.Errorf("the worker's public key: %w", err)
	}
	if !h.Verifies(v.HeadKey) {
		return changed(k, "signed head %d (%s chain %s, seq %d) is not signed by the worker's key %s (it names key %s): written by someone else",
			h.Seq, h.Table, h.Chain, h.HeadSeq, ssh.FingerprintSHA256(pub), h.KeyFingerprint)
	}
	if v.heads == nil {
		v.heads = map[chainKey]map[int64]verifiedHead{}
	}
	if v.heads[k] == nil {
		v.heads[k] = map[int64]verifiedHead{}
	}
	v.heads[k][h.HeadSeq] = verifiedHead{hash: h.HeadHash, prev: h.PrevSeq}
	return nil
}

// verifiedHead is a head whose signature verified: the hash it names and
// what it follows (SignedHead.PrevSeq; nil for an old head).
type verifiedHead struct {
	hash string
	prev *int64
}

func (v *AuditVerifier) checkRowAgainstHeads(seq int64, hash string) error {
	head, ok := v.heads[v.cur.key][seq]
	if !ok {
		if v.HeadKey != nil && v.cur.signed {
			return changed(v.cur.key, "%s chain %s: its row seq %d is named by no head the worker signed, though rows before it are: written without the worker's key (the worker signs only a row that follows its own)",
				v.cur.key.table, v.cur.key.chain, seq)
		}
		return nil
	}
	if head.hash != hash {
		return changed(v.cur.key, "%s chain %s: the worker signed head seq %d as hash %s, today's row seq %d has hash %s: the chain was rewritten and its hashes recomputed",
			v.cur.key.table, v.cur.key.chain, seq, short(head.hash), seq, short(hash))
	}
	// Continuity (heads since schema/0017_audit_head_continuity.sql): the
	// worker signed this row as following the row it had signed at prev,
	// so that row must be the one before it and be signed too. An old head
	// (prev nil) and a chain signed as found say nothing of the rows
	// before them: those rows are vouched for only by the hash chain up to
	// the head, as they were when it was signed.
	if p := head.prev; p != nil && *p != PrevAsFound {
		switch {
		case *p == PrevChainStart && v.cur.rows != 1:
			return changed(v.cur.key, "%s chain %s: the worker signed row seq %d as the chain's first, today's chain holds %d rows before it",
				v.cur.key.table, v.cur.key.chain, seq, v.cur.rows-1)
		case *p != PrevChainStart && v.cur.lastSigned != *p:
			return changed(v.cur.key, "%s chain %s: the worker signed row seq %d after its own head of seq %d, which today's ledger does not hold (the newest signed row before it is seq %d): heads were removed, or the rows before were written without the key",
				v.cur.key.table, v.cur.key.chain, seq, *p, v.cur.lastSigned)
		}
	}
	delete(v.heads[v.cur.key], seq)
	v.cur.signed = true
	v.cur.lastSigned = seq
	return nil
}

// endChain checks what only the end of a chain shows.
func (v *AuditVerifier) endChain() error {
	if err := v.endEarlierChain(); err != nil {
		return err
	}
	k := v.cur.key
	if v.HeadKey == nil || k == (chainKey{}) {
		return nil
	}
	if left := sortedSeqs(v.heads[k]); len(left) > 0 {
		return changed(k, "%s chain %s: the worker signed head seq %d (hash %s), which today's chain does not hold (its newest row is seq %d): rows were removed",
			k.table, k.chain, left[0], short(v.heads[k][left[0]].hash), v.cur.lastSeq)
	}
	delete(v.heads, k)
	if !v.cur.signed {
		return changed(k, "%s chain %s: none of its rows (the newest is seq %d) is named by a head the worker signed: written without the worker's key",
			k.table, k.chain, v.cur.lastSeq)
	}
	v.HeadChains++
	return nil
}

func (v *AuditVerifier) missingSignedChains() error {
	for _, k := range sortedKeys(v.heads) {
		if left := sortedSeqs(v.heads[k]); len(left) > 0 {
			return changed(k, "the worker signed a head of %s chain %s (seq %d, hash %s) that today's ledger does not hold: the chain was removed (a TRUNCATE or a DELETE)",
				k.table, k.chain, left[0], short(v.heads[k][left[0]].hash))
		}
	}
	return nil
}

func sortedKeys[V any](m map[chainKey]V) []chainKey {
	out := make([]chainKey, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].table != out[j].table {
			return out[i].table > out[j].table // update_event before rollout_approval, as exported
		}
		return out[i].chain < out[j].chain
	})
	return out
}

func sortedSeqs[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
