package devstack

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"
)

// DemoOperator is the principal the dev stack's demo key signs as.
const DemoOperator = "demo-operator"

// DemoSigner is a demo operator's SSH key and the allowed_signers file
// naming it, in the stack's directory: the workers verify approvals
// against the file, the starter signs with the key.
type DemoSigner struct {
	Key            string // the private key file (OpenSSH format, unencrypted: a demo's)
	AllowedSigners string
}

// MakeDemoSigner writes a fresh demo key and its allowed_signers file
// under dir/operator (a new key each start: the ledger starts afresh too).
func MakeDemoSigner(dir string) (DemoSigner, error) {
	// Absolute: the paths go to the workers and, through the stack's env
	// file, to commands run from anywhere.
	d, err := filepath.Abs(filepath.Join(dir, "operator"))
	if err != nil {
		return DemoSigner{}, err
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return DemoSigner{}, err
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return DemoSigner{}, fmt.Errorf("demo operator key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, DemoOperator)
	if err != nil {
		return DemoSigner{}, fmt.Errorf("demo operator key: %w", err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return DemoSigner{}, fmt.Errorf("demo operator key: %w", err)
	}
	s := DemoSigner{Key: filepath.Join(d, "id_ed25519"), AllowedSigners: filepath.Join(d, "allowed_signers")}
	if err := os.WriteFile(s.Key, pem.EncodeToMemory(block), 0o600); err != nil {
		return DemoSigner{}, err
	}
	if err := os.WriteFile(s.Key+".pub", ssh.MarshalAuthorizedKey(sshPub), 0o644); err != nil {
		return DemoSigner{}, err
	}
	line := fmt.Sprintf("%s namespaces=\"fleetsaga\" %s", DemoOperator, ssh.MarshalAuthorizedKey(sshPub))
	if err := os.WriteFile(s.AllowedSigners, []byte(line), 0o644); err != nil {
		return DemoSigner{}, err
	}
	return s, nil
}
