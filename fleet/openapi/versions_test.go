package openapi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkVersions holds the vendored documents to specs/VERSIONS: each one is
// listed with its omicron commit and the sha256 of the file, and every line
// names the same commit. omicron names a versioned document by the start of
// its sha256 (openapi/gateway/gateway-3.0.0-dacda2.json), which must agree.
func checkVersions(versions []byte, docs map[string][]byte) error {
	commits := map[string][]string{}
	listed := map[string]bool{}
	for n, line := range strings.Split(string(versions), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			return fmt.Errorf("VERSIONS line %d: want document, commit, path, sha256", n+1)
		}
		name, commit, path, sum := f[0], f[1], f[2], f[3]
		raw, ok := docs[name]
		if !ok {
			return fmt.Errorf("VERSIONS lists %s, which is not vendored", name)
		}
		got := sha256.Sum256(raw)
		if hex.EncodeToString(got[:]) != sum {
			return fmt.Errorf("%s is not the file VERSIONS names (sha256 %x, VERSIONS %s): record its commit", name, got, sum)
		}
		if _, suffix, ok := strings.Cut(strings.TrimSuffix(filepath.Base(path), ".json"), "-"); ok {
			if i := strings.LastIndexByte(suffix, '-'); i >= 0 && !strings.HasPrefix(sum, suffix[i+1:]) {
				return fmt.Errorf("%s: omicron's %s names another document", name, path)
			}
		}
		listed[name] = true
		commits[commit] = append(commits[commit], name)
	}
	for name := range docs {
		if !listed[name] {
			return fmt.Errorf("%s is vendored but not in VERSIONS", name)
		}
	}
	if len(commits) != 1 {
		return fmt.Errorf("the vendored documents are from %d omicron commits (%v): they must describe one rack", len(commits), commits)
	}
	return nil
}

func vendored(t *testing.T) ([]byte, map[string][]byte) {
	versions, err := os.ReadFile("specs/VERSIONS")
	require.NoError(t, err)
	docs := map[string][]byte{}
	entries, err := specs.ReadDir("specs")
	require.NoError(t, err)
	for _, e := range entries {
		raw, err := specs.ReadFile("specs/" + e.Name())
		require.NoError(t, err)
		docs[e.Name()] = raw
	}
	return versions, docs
}

// The MGS, sled-agent, lockstep and both external documents are from one omicron commit.
func TestVendoredDocumentsAreFromOneCommit(t *testing.T) {
	versions, docs := vendored(t)
	require.Len(t, docs, 5)
	assert.NoError(t, checkVersions(versions, docs))
}

// The check fails on a document from another commit, a file swapped
// without recording it, and a document VERSIONS does not list.
func TestVersionsCheckFails(t *testing.T) {
	versions, docs := vendored(t)
	other := strings.Replace(string(versions), "b848b6df85531e85aaaa6d434dfb5bfd45bb42ce openapi/nexus-lockstep.json",
		"02499db27c4cd175f4ee48c335f5beb2d1ed1926 openapi/nexus-lockstep.json", 1)
	assert.ErrorContains(t, checkVersions([]byte(other), docs), "from 2 omicron commits")

	swapped := map[string][]byte{}
	for k, v := range docs {
		swapped[k] = v
	}
	swapped[NexusLockstep] = []byte(`{"openapi":"3.0.3"}`)
	assert.ErrorContains(t, checkVersions(versions, swapped), "nexus-lockstep-0.0.1.json is not the file VERSIONS names")

	swapped[NexusLockstep] = docs[NexusLockstep]
	swapped["nexus-external.json"] = []byte(`{}`)
	assert.ErrorContains(t, checkVersions(versions, swapped), "nexus-external.json is vendored but not in VERSIONS")
}
