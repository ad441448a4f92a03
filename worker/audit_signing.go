package main

import (
	"context"
	"crypto/ed25519"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// auditSigningFlags are the worker's choices about chain heads
// (ledger/audit_heads.go) beyond its key.
type auditSigningFlags struct {
	signUnheaded  bool // --audit-sign-unheaded-chains
	allowUnsigned bool // --audit-allow-unsigned
}

// signAuditHeads returns the store the worker appends with. With a key it
// signs, at start, the chains of a ledger that has no heads yet (or every
// chain without this key's head, when asked), and logs each row it refuses
// to sign. Without a key on a ledger whose chains are signed, or with a
// key no head names there, it refuses to start (a usage error): its rows
// would be unsigned, and the chains it touched could never be signed
// again.
func signAuditHeads(ctx context.Context, store *ledger.Store, key ed25519.PrivateKey, f auditSigningFlags, log zerolog.Logger, unsigned *prometheus.CounterVec) (*ledger.Store, error) {
	if key == nil {
		headed, err := store.HasSignedHeads(ctx)
		if err != nil {
			return nil, err
		}
		if headed && !f.allowUnsigned {
			return nil, usageError{errors.New("the ledger's audit chains are signed, but this worker has no --audit-signing-key: its rows would fail audit verify; give the key, or --audit-allow-unsigned")}
		}
		log.Warn().Msg("no --audit-signing-key: audit chain heads are not signed, so the database's owner can rewrite a chain and recompute its hashes unseen")
		return store, nil
	}
	store = store.WithHeadSigner(key)
	if !f.signUnheaded {
		// A key no head names, on a ledger with heads, is a new key or the
		// wrong one: every append to an existing chain would go unsigned.
		headed, err := store.HasSignedHeads(ctx)
		if err != nil {
			return nil, err
		}
		mine, err := store.HasHeadsOfThisKey(ctx)
		if err != nil {
			return nil, err
		}
		if headed && !mine {
			return nil, usageError{errors.New("--audit-signing-key: no head in the ledger is signed with this key, though it holds heads (the wrong key, or a rotated one): give the fleet's key, or --audit-sign-unheaded-chains to vouch for every chain as it is now")}
		}
	}
	store.OnUnsignedAppend(func(u *ledger.UnsignedAppend) {
		// The row itself is committed (an update is not stopped half
		// done); the log names the chain, never key material.
		why := "unsigned"
		msg := "audit: a row not signed with the worker's key; audit verify will fail this chain: someone without the key wrote to it"
		if u.Bogus {
			why = "bogus"
			msg = "audit: a head row names this worker's key but is not signed with it (a forgery); the worker signs nothing more in this chain, and audit verify will fail it"
		}
		if unsigned != nil {
			unsigned.WithLabelValues(u.Table, why).Inc()
		}
		log.Error().Str("table", u.Table).Str("chain", u.Chain).Int64("seq", u.Seq).Str("why", u.Why).Msg(msg)
	})
	sign := store.SignHeads
	if f.signUnheaded {
		sign = store.SignUnheadedChains
	}
	n, err := sign(ctx)
	if err != nil {
		return nil, err
	}
	log.Info().Int("chains", n).Msg("audit chain heads signed with the worker's key at start")
	return store, nil
}
