package approvaltest

import (
	"crypto/ecdh"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TokenKeyFiles writes a fresh X25519 token-sealing key pair in dir, as
// `openssl genpkey -algorithm X25519` and `openssl pkey -pubout` do: the
// worker's private key (PKCS8 PEM) and the starter's public key (PKIX
// PEM). It returns their paths.
func TokenKeyFiles(t testing.TB, dir string) (private, public string) {
	t.Helper()
	key, err := ecdh.X25519().GenerateKey(rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	pub, err := x509.MarshalPKIXPublicKey(key.PublicKey())
	require.NoError(t, err)
	private, public = filepath.Join(dir, "token.key"), filepath.Join(dir, "token.pub")
	require.NoError(t, os.WriteFile(private, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644))
	return private, public
}
