package approval

import (
	"crypto/sha256"
	"fmt"
	"os"
	"sync"
)

// keyFiles re-reads the worker's allowed_signers and people files on each
// verification: revoking a key is removing its line, and must not wait
// for every worker to restart. The files are small and verifications
// rare (a few per gate), so each is read and hashed every time and parsed
// again only when its hash changed. A file that cannot be read or parsed
// fails the verification (retried until it is fixed): it never falls back
// to the keys it held before.
type keyFiles struct {
	signersPath, peoplePath string

	mu                    sync.Mutex
	signersSum, peopleSum [sha256.Size]byte
	signers               AllowedSigners
	people                People
}

// load reads both files if they changed since the last load.
func (f *keyFiles) load() (AllowedSigners, People, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.signersPath != "" {
		b, sum, err := readSum(f.signersPath, "approval keyring")
		if err != nil {
			return nil, nil, err
		}
		if sum != f.signersSum {
			s, err := ParseAllowedSigners(b)
			if err != nil {
				return nil, nil, fmt.Errorf("approval keyring %s: %w", f.signersPath, err)
			}
			f.signers, f.signersSum = s, sum
		}
	}
	if f.peoplePath != "" {
		b, sum, err := readSum(f.peoplePath, "approval people")
		if err != nil {
			return nil, nil, err
		}
		if sum != f.peopleSum {
			p, err := ParsePeople(b)
			if err != nil {
				return nil, nil, fmt.Errorf("approval people %s: %w", f.peoplePath, err)
			}
			if len(p) == 0 {
				return nil, nil, fmt.Errorf("approval people %s names no one: four eyes could tell no one apart", f.peoplePath)
			}
			f.people, f.peopleSum = p, sum
		}
	}
	return f.signers, f.people, nil
}

func readSum(path, what string) ([]byte, [sha256.Size]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, [sha256.Size]byte{}, fmt.Errorf("%s: %w", what, err)
	}
	return b, sha256.Sum256(b), nil
}

// current is k with the files' keys and people as they are now.
func (k *Keyring) current() (*Keyring, error) {
	if k == nil || k.files == nil {
		return k, nil
	}
	signers, people, err := k.files.load()
	if err != nil {
		return nil, err
	}
	c := *k
	c.signers, c.people = signers, people
	return &c, nil
}
