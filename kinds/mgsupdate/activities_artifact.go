package mgsupdate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/fleetsaga/fleetsaga/failure"
)

// The artifacts the MGS activities deliver: opened from a path or an
// http(s) URL, and verified by their SHA-256 before a device sees them.

// ArtifactRef is an image to deliver: its version, SHA-256 (hex) and where
// the worker reads it (a local path or an http(s) URL).
type ArtifactRef struct {
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	Path    string `json:"path,omitempty"`
	URL     string `json:"url,omitempty"`
}

func (r ArtifactRef) where() string {
	if r.Path != "" {
		return r.Path
	}
	return r.URL
}

func (a *MGSActivities) openArtifact(ctx context.Context, r ArtifactRef) (io.ReadCloser, int64, error) {
	switch {
	case r.Path != "":
		f, err := os.Open(r.Path)
		if err != nil {
			return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s: %v", r.Path, err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s: %v", r.Path, err)
		}
		return f, st.Size(), nil
	case r.URL != "":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
		if err != nil {
			return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s: %v", r.URL, err)
		}
		hc := a.HTTP
		if hc == nil {
			hc = http.DefaultClient
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, 0, fmt.Errorf("fetch artifact %s: %w", r.URL, err) // retryable
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				return nil, 0, fmt.Errorf("fetch artifact %s: HTTP %d", r.URL, resp.StatusCode)
			}
			return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s: HTTP %d", r.URL, resp.StatusCode)
		}
		return resp.Body, resp.ContentLength, nil
	}
	return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s has neither path nor url", r.Version)
}

// verifyArtifact reads the artifact and checks its SHA-256; it returns the size.
func (a *MGSActivities) verifyArtifact(ctx context.Context, r ArtifactRef) (int64, error) {
	rc, _, err := a.openArtifact(ctx, r)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	sum := sha256.New()
	n, err := io.Copy(sum, heartbeatReader(ctx, rc))
	if err != nil {
		return 0, fmt.Errorf("read artifact %s: %w", r.where(), err)
	}
	got := hex.EncodeToString(sum.Sum(nil))
	if !strings.EqualFold(got, r.SHA256) {
		return 0, mgsFatal(failure.ArtifactMismatch, "artifact %s (version %s): SHA-256 is %s, expected %s", r.where(), r.Version, got, r.SHA256)
	}
	return n, nil
}

// heartbeatReader records a heartbeat (bytes read so far) at most once a second.
func heartbeatReader(ctx context.Context, r io.Reader) io.Reader {
	if !activity.IsActivity(ctx) {
		return r
	}
	return &hbReader{ctx: ctx, r: r}
}

type hbReader struct {
	ctx  context.Context
	r    io.Reader
	n    int64
	last time.Time
}

func (h *hbReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.n += int64(n)
	if time.Since(h.last) > time.Second {
		activity.RecordHeartbeat(h.ctx, h.n)
		h.last = time.Now()
	}
	return n, err
}
