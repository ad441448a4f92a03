package approval

import (
	"bytes"
	"encoding/json"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Recorded is an approval as the ledger holds it: what a gate may count
// again (after a reset) only once it verifies again.
type Recorded struct {
	Method         Method
	Principal      string // the person recorded
	KeyFingerprint string
	Signature      string
	Payload        string
	ReplayKey      string
}

// Reverify checks a recorded approval against this keyring as if it had
// just arrived: a signature by an allowed signer's key
// over a statement for gate, whose nonce is the recorded replay key and
// whose signer is the recorded person (SamePerson), signed within the max
// age. The ledger is not a key: a row
// written with SQL has no such signature. An OIDC approval keeps no
// token (a bearer credential), so nothing can be verified again: it is
// refused, and its approver approves again. A refusal is a *Refusal.
func (k *Keyring) Reverify(r Recorded, gate Gate) (Principal, error) {
	k, err := k.current()
	if err != nil {
		return Principal{}, err
	}
	if r.Method != MethodSSH {
		return Principal{}, refuse(ReasonUnsigned, "a recorded %q approval keeps no signature to verify again: approve again", r.Method)
	}
	sig, err := sshsig.Unarmor([]byte(r.Signature))
	if err != nil {
		return Principal{}, refuse(ReasonMalformed, "the recorded signature does not parse")
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	name, ok := k.sshPrincipal(sig.PublicKey)
	switch {
	case !ok:
		return Principal{}, refuse(ReasonUnknownKey, "the recorded approval's key %s is not an allowed signer", fp)
	case fp != r.KeyFingerprint:
		return Principal{}, refuse(ReasonBadSignature, "the recorded fingerprint %s is not the signing key's %s", r.KeyFingerprint, fp)
	}
	if err := sshsig.Verify(bytes.NewReader([]byte(r.Payload)), sig, sig.PublicKey, sig.HashAlgorithm, Namespace); err != nil {
		return Principal{}, refuse(ReasonBadSignature, "the recorded signature by %s does not verify over the recorded statement", fp)
	}
	var st Statement
	if err := json.Unmarshal([]byte(r.Payload), &st); err != nil {
		return Principal{}, refuse(ReasonMalformed, "the recorded statement does not parse")
	}
	if err := checkGate(st, gate); err != nil {
		return Principal{}, err
	}
	if st.TemporalNamespace != "" { // "": recorded before namespaces were signed; its run binds it
		if err := checkNamespace(st, gate); err != nil {
			return Principal{}, err
		}
	}
	id := SSHIdentity(name)
	person, _ := k.person(id)
	who := Principal{Name: person, ID: id, Method: MethodSSH, KeyFingerprint: fp}
	if st.Nonce == "" || st.Nonce != r.ReplayKey {
		return Principal{}, refuse(ReasonMalformed, "the recorded replay key is not the statement's nonce")
	}
	if same, _ := k.SamePerson(r.Principal, who); !same {
		return Principal{}, refuse(ReasonBadSignature, "recorded as %s, signed by %s", r.Principal, person)
	}
	// Counted again, it counts as if it had just arrived: a row older than
	// the max age is not a fresh approval of this run.
	if age := k.now().Sub(st.At); age > k.maxAge || age < -k.maxAge {
		return Principal{}, refuse(ReasonExpired, "recorded approval signed at %s; approvals older than %s are refused: approve again",
			st.At.UTC().Format("2006-01-02T15:04:05Z"), k.maxAge)
	}
	return who, nil
}
