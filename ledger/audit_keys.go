package ledger

import (
	"crypto/ed25519"
	"fmt"
	"os"

	"golang.org/x/crypto/ssh"
)

// LoadHeadSigningKey reads the worker's chain-head key: an unencrypted
// OpenSSH ed25519 private key (ssh-keygen -t ed25519 with no passphrase). Its errors
// never hold key material.
func LoadHeadSigningKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit signing key: %w", err)
	}
	k, err := ssh.ParseRawPrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("audit signing key %s: not an unencrypted OpenSSH private key", path)
	}
	switch k := k.(type) {
	case *ed25519.PrivateKey:
		return *k, nil
	case ed25519.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("audit signing key %s: want an ed25519 key, got %T", path, k)
}

// LoadHeadPublicKey reads the worker's chain-head public key: one
// OpenSSH public key line (the .pub ssh-keygen wrote beside the key).
func LoadHeadPublicKey(path string) (ed25519.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit public key: %w", err)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		return nil, fmt.Errorf("audit public key %s: not an OpenSSH public key line: %v", path, err)
	}
	ck, ok := pub.(ssh.CryptoPublicKey)
	if !ok {
		return nil, fmt.Errorf("audit public key %s: unsupported key", path)
	}
	k, ok := ck.CryptoPublicKey().(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("audit public key %s: want an ed25519 key, got %s", path, pub.Type())
	}
	return k, nil
}
