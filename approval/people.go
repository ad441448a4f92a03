package approval

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// Identity namespaces: a principal's identity says how it was proved, so
// an SSH principal and an OIDC claim that spell the same name are two
// identities, never one by accident.
const (
	sshIdentityPrefix  = "ssh:"
	oidcIdentityPrefix = "oidc:"
)

// SSHIdentity is the identity of an allowed_signers principal.
func SSHIdentity(principal string) string { return sshIdentityPrefix + principal }

// OIDCIdentity is the identity of an ID token's subject at its issuer.
func OIDCIdentity(issuer, subject string) string { return oidcIdentityPrefix + issuer + "#" + subject }

// People maps identities to the persons they are: where one person signs
// with an SSH key and with an OIDC account, four eyes and distinct
// approvers must see one person, and only an explicit mapping can say so.
type People map[string]string // identity -> person

// ParsePeople parses a people file: one person a line, "PERSON IDENTITY
// [IDENTITY...]", identities as "ssh:<allowed_signers principal>" or
// "oidc:<issuer>#<subject>". A person's name has no ':' (it can never be
// read as an identity); an identity belongs to one person.
func ParsePeople(b []byte) (People, error) {
	out := People{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			return nil, fmt.Errorf("line %d: want PERSON IDENTITY [IDENTITY...]", n)
		}
		person := f[0]
		if strings.Contains(person, ":") {
			return nil, fmt.Errorf("line %d: person %q: a person's name has no ':' (identities do)", n, person)
		}
		for _, id := range f[1:] {
			if !validIdentity(id) {
				return nil, fmt.Errorf("line %d: identity %q: want ssh:PRINCIPAL or oidc:ISSUER#SUBJECT", n, id)
			}
			if prev, ok := out[id]; ok && prev != person {
				return nil, fmt.Errorf("line %d: identity %s is already %s's", n, id, prev)
			}
			out[id] = person
		}
	}
	return out, sc.Err()
}

func validIdentity(id string) bool {
	if p, ok := strings.CutPrefix(id, sshIdentityPrefix); ok {
		return p != ""
	}
	if p, ok := strings.CutPrefix(id, oidcIdentityPrefix); ok {
		iss, sub, ok := strings.Cut(p, "#")
		return ok && iss != "" && sub != ""
	}
	return false
}

// isPerson says whether name is a person the map names.
func (p People) isPerson(name string) bool {
	for _, v := range p {
		if v == name {
			return true
		}
	}
	return false
}
