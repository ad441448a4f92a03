package approval

import (
	"crypto/ecdh"
	"crypto/hpke"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
)

// An ID token is a bearer credential, and whatever a start or an approval
// carries stays in Temporal's history for anyone who may read it. So the
// starter seals the token to the workers' X25519 public key with HPKE
// (RFC 9180, base mode: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256,
// AES-256-GCM), and only the verify activity, holding the private key,
// opens it. The HPKE info binds the statement's digest: a sealed token
// moved to another statement does not open.

// tokenSealInfo starts the HPKE info; the statement's digest follows.
const tokenSealInfo = "fleetsaga sealed ID token v1\x00"

func tokenSuite() (hpke.KDF, hpke.AEAD) { return hpke.HKDFSHA256(), hpke.AES256GCM() }

func sealInfo(payload string) []byte { return []byte(tokenSealInfo + digest([]byte(payload))) }

// TokenPublicKey is the workers' token-sealing public key, what `starter
// --approval-token-public-key` names.
type TokenPublicKey struct{ pk hpke.PublicKey }

// LoadTokenPublicKey reads an X25519 public key, PKIX PEM ("PUBLIC KEY",
// as `openssl pkey -pubout` writes it).
func LoadTokenPublicKey(path string) (*TokenPublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("token-sealing public key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("token-sealing public key %s: want a PEM PUBLIC KEY (openssl pkey -pubout)", path)
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	pub, ok := k.(*ecdh.PublicKey)
	if err != nil || !ok || pub.Curve() != ecdh.X25519() {
		return nil, fmt.Errorf("token-sealing public key %s: want an X25519 key", path)
	}
	pk, err := hpke.NewDHKEMPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("token-sealing public key %s: %w", path, err)
	}
	return &TokenPublicKey{pk: pk}, nil
}

// SealIDToken carries st with token sealed to pub for st alone. The token
// counts only if its nonce is StatementDigest(st), as WithIDToken's.
func SealIDToken(st Statement, token string, pub *TokenPublicKey) (Signed, error) {
	payload := string(st.Payload())
	kdf, aead := tokenSuite()
	ct, err := hpke.Seal(pub.pk, kdf, aead, sealInfo(payload), []byte(token))
	if err != nil {
		return Signed{}, fmt.Errorf("seal the ID token: %w", err)
	}
	return Signed{Payload: payload, SealedIDToken: base64.StdEncoding.EncodeToString(ct)}, nil
}

// tokenKeys are the worker's token-sealing private keys: the current one
// and the ones it replaced, while a rollout started under them may be
// reset (its recorded start counts once its sealed token opens again).
type tokenKeys []hpke.PrivateKey

// loadTokenKeys reads X25519 private keys, PKCS8 PEM ("PRIVATE KEY", as
// `openssl genpkey -algorithm X25519` writes them).
func loadTokenKeys(paths []string) (tokenKeys, error) {
	var ks tokenKeys
	for _, path := range paths {
		b, err := readPrivateFile(path)
		if err != nil {
			return nil, err
		}
		block, _ := pem.Decode(b)
		if block == nil || block.Type != "PRIVATE KEY" {
			return nil, fmt.Errorf("token-sealing key %s: want a PEM PRIVATE KEY (openssl genpkey -algorithm X25519)", path)
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		priv, ok := k.(*ecdh.PrivateKey)
		if err != nil || !ok || priv.Curve() != ecdh.X25519() {
			return nil, fmt.Errorf("token-sealing key %s: want an X25519 private key", path)
		}
		hk, err := hpke.NewDHKEMPrivateKey(priv)
		if err != nil {
			return nil, fmt.Errorf("token-sealing key %s: %w", path, err)
		}
		ks = append(ks, hk)
	}
	return ks, nil
}

// readPrivateFile reads a token-sealing key, refusing one that group or
// others may read (as ssh refuses such an identity file): it opens every
// sealed token in every history.
func readPrivateFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token-sealing key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("token-sealing key: %w", err)
	}
	if mode := fi.Mode().Perm(); mode&0o077 != 0 {
		return nil, fmt.Errorf("token-sealing key %s: permissions %04o are too open: it opens every sealed ID token, so only its owner may read it (chmod 600 %s)", path, mode, path)
	}
	return io.ReadAll(f)
}

// open opens s's sealed token with any of the keys, for s's statement.
// Its refusals name neither the token nor the sealed bytes.
func (ks tokenKeys) open(s Signed) (string, error) {
	if len(ks) == 0 {
		return "", refuse(ReasonUnknownKey, "ID tokens are not accepted: the worker has no token-sealing key (--approval-token-key)")
	}
	ct, err := base64.StdEncoding.DecodeString(s.SealedIDToken)
	if err != nil {
		return "", refuse(ReasonMalformed, "the sealed ID token is not base64")
	}
	kdf, aead := tokenSuite()
	for _, k := range ks {
		if tok, err := hpke.Open(k, kdf, aead, sealInfo(s.Payload), ct); err == nil {
			return string(tok), nil
		}
	}
	return "", refuse(ReasonBadToken, "the sealed ID token does not open for this statement with the worker's token-sealing keys: it was sealed for another statement, or to another key")
}

// ErrRawIDToken refuses an ID token in plain text: a start or an approval
// stays in Temporal's history, where it would be a bearer credential for
// anyone who may read it. The approve update's validator gives it before
// the approval reaches the history; a start is there already.
var ErrRawIDToken = refuse(ReasonUnsealedToken, "an ID token in plain text is refused: a start or an approval stays in Temporal's history, "+
	"where anyone who may read it could use the token. Sign again with a starter that seals it to the workers' key "+
	"(--approval-token-public-key); a token already sent in plain text is exposed until it expires")

// ErrNoTokenPublicKey is the starter's refusal to send an ID token it
// cannot seal.
var ErrNoTokenPublicKey = errors.New("an ID token is sent sealed to the workers' key: give --approval-token-public-key FILE (env FLEETSAGA_APPROVAL_TOKEN_PUBLIC_KEY), the public half of the workers' --approval-token-key")
