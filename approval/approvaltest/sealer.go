package approvaltest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/approval"
)

// TokenSealer seals ID tokens as `starter --id-token-command` does, to a
// key pair of its own: a keyring opens them with Key in its TokenKeys.
type TokenSealer struct {
	Key, Public string // the private and the public key files
	pub         *approval.TokenPublicKey
}

// NewTokenSealer makes a key pair in a temporary directory of t.
func NewTokenSealer(t testing.TB) *TokenSealer {
	t.Helper()
	key, public := TokenKeyFiles(t, t.TempDir())
	pub, err := approval.LoadTokenPublicKey(public)
	require.NoError(t, err)
	return &TokenSealer{Key: key, Public: public, pub: pub}
}

// Seal carries st with token sealed for st.
func (s *TokenSealer) Seal(t testing.TB, st approval.Statement, token string) approval.Signed {
	t.Helper()
	signed, err := approval.SealIDToken(st, token, s.pub)
	require.NoError(t, err)
	return signed
}
