package mgsupdate

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fleetsaga/fleetsaga/failure"
)

// openPath opens a path artifact, only under the worker's ArtifactRoot
// (os.OpenInRoot: neither ".." nor a symbolic link leads out of it).
// Whoever may start an update names the path; without the root a plan
// could have the worker read any file it can and tell its SHA-256. A
// relative path is the worker's working directory's, as the root is.
func (a *MGSActivities) openPath(r ArtifactRef) (io.ReadCloser, int64, error) {
	if a.ArtifactRoot == "" {
		return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s: this worker reads no path artifacts (start it with --artifact-root DIR)", r.Path)
	}
	root, err := filepath.Abs(a.ArtifactRoot)
	if err != nil {
		return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s: --artifact-root: %v", r.Path, err)
	}
	path, err := filepath.Abs(r.Path)
	rel := ".."
	if err == nil {
		rel, err = filepath.Rel(root, path)
	}
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s is outside this worker's --artifact-root %s", r.Path, a.ArtifactRoot)
	}
	f, err := os.OpenInRoot(root, rel)
	if err != nil {
		return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s: %v", r.Path, err)
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err != nil {
		f.Close()
		return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s: %v", r.Path, err)
	}
	return f, st.Size(), nil
}
