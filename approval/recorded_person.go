package approval

import "strings"

// SamePerson says whether recorded, a principal a rollout recorded (its
// starter, an approver), is the person who is now, resolved through the
// current people file at comparison time: a people file that arrived
// while a gate waited then still sees one person. known is false when
// recorded cannot be resolved; four eyes and distinct approvers then
// fail closed.
//
// recorded is an identity ("ssh:alice", "oidc:<issuer>#<subject>"), a
// person the people file names, or, from a build before identities
// (VerifyStart answered the bare principal), a legacy allowed_signers
// principal: "alice" is "ssh:alice". A legacy email-shaped one may also
// have been an OIDC email, which maps to no subject: against an OIDC
// identity it is unknown.
func (k *Keyring) SamePerson(recorded string, who Principal) (same, known bool) {
	person, known := k.recordedPerson(recorded)
	if !known {
		return false, false
	}
	if !strings.Contains(recorded, ":") && !k.people.isPerson(recorded) && strings.Contains(recorded, "@") && who.Method == MethodOIDC {
		return false, false
	}
	return person == who.Name, true
}

// recordedPerson resolves recorded (as SamePerson reads it) to a person.
func (k *Keyring) recordedPerson(recorded string) (string, bool) {
	switch {
	case recorded == "":
		return "", false
	case strings.Contains(recorded, ":"):
		return k.person(recorded)
	case k.people.isPerson(recorded):
		return recorded, true
	}
	return k.person(SSHIdentity(recorded))
}
