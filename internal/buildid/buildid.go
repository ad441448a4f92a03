// Package buildid names a worker build for Worker Deployment Versioning
// (docs/DEPLOYING.md): the same code gets the same ID, other code another.
package buildid

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"io"
	"os"
	"sync"
)

// Auto, as a worker's --build-id, asks the worker to derive its build ID
// from its own executable (Self).
const Auto = "auto"

// Dev is the build ID of a binary that can be neither read nor hashed.
const Dev = "dev"

// idLen is how many hex digits of a revision or digest name a build: as
// many as git shows of a commit, plenty to tell builds of one deployment
// apart.
const idLen = 12

// Of names the Go binary at path: "git-<commit>" when it was built from a
// clean checkout (Go stamps the revision), otherwise "bin-<sha256 of the
// file>", since a modified tree's revision does not name its code. Dev if
// the file cannot be read.
func Of(path string) string {
	if info, err := buildinfo.ReadFile(path); err == nil {
		var rev, modified string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if len(rev) >= idLen && modified == "false" {
			return "git-" + rev[:idLen]
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return Dev
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return Dev
	}
	return "bin-" + hex.EncodeToString(h.Sum(nil))[:idLen]
}

var self struct {
	once sync.Once
	id   string
}

// Self is Of the running executable, computed once.
func Self() string {
	self.once.Do(func() {
		self.id = Dev
		if exe, err := os.Executable(); err == nil {
			self.id = Of(exe)
		}
	})
	return self.id
}
