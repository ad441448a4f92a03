package approval

import (
	"bytes"
	"fmt"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// SignSSH signs st with signer (a key file's, or ssh-agent's) as SSHSIG in
// Namespace, as `git` and `ssh-keygen -Y sign -n fleetsaga` do.
func SignSSH(st Statement, signer ssh.Signer) (Signed, error) {
	payload := st.Payload()
	sig, err := sshsig.Sign(bytes.NewReader(payload), signer, sshsig.HashSHA512, Namespace)
	if err != nil {
		return Signed{}, fmt.Errorf("sign with key %s: %w", ssh.FingerprintSHA256(signer.PublicKey()), err)
	}
	return Signed{Payload: string(payload), SSHSig: string(sshsig.Armor(sig))}, nil
}

// IDTokenNonceEnv names the environment variable in which `starter
// --id-token-command` is given the nonce the token must carry: the
// statement's digest (StatementDigest).
const IDTokenNonceEnv = "FLEETSAGA_ID_TOKEN_NONCE"

// StatementDigest is the hex SHA-256 of st's payload, the nonce an ID
// token bound to st carries.
func StatementDigest(st Statement) string { return digest(st.Payload()) }

// SignatureKey is the SHA256 fingerprint of the key that made s's SSH
// signature.
func SignatureKey(s Signed) (string, error) {
	sig, err := sshsig.Unarmor([]byte(s.SSHSig))
	if err != nil {
		return "", err
	}
	return ssh.FingerprintSHA256(sig.PublicKey), nil
}
