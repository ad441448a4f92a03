package mgsupdate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/internal/redact"
)

// The artifacts the MGS activities deliver: opened from a path or an
// http(s) URL, and verified by their SHA-256 before a device sees them; a
// host phase 2 image also by its header, whose SHA-256 is its ID at MGS.

// ArtifactRef is an image to deliver: its version, SHA-256 (hex) and where
// the worker reads it (a local path or an http(s) URL).
type ArtifactRef struct {
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	Path    string `json:"path,omitempty"`
	URL     string `json:"url,omitempty"`
}

// where names the artifact in errors: its path, or its URL without the
// secrets a URL may carry (a password, a presigned token).
func (r ArtifactRef) where() string {
	if r.Path != "" {
		return r.Path
	}
	return redact.URL(r.URL)
}

// artifactStallTimeout ends an artifact's download that brought no bytes
// for this long (activities_stall.go): the fleet request timeout, the
// longest any answer of ours may take to start.
const artifactStallTimeout = 75 * time.Second

// errDownloadStalled: the artifact's server sent no bytes for the limit.
var errDownloadStalled = errors.New("the artifact's server sent no bytes")

func (a *MGSActivities) openArtifact(ctx context.Context, r ArtifactRef) (io.ReadCloser, int64, error) {
	switch {
	case r.Path != "":
		return a.openPath(r)
	case r.URL != "":
		return a.download(ctx, r)
	}
	return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s has neither path nor url", r.Version)
}

// download opens r's URL; a stall (no bytes for artifactStall), not a
// request timeout, bounds it. No error names the URL's secrets.
func (a *MGSActivities) download(ctx context.Context, r ArtifactRef) (io.ReadCloser, int64, error) {
	limit := a.artifactStallLimit()
	stall := watchStalls(ctx, limit, errDownloadStalled)
	stalledErr := func(read int64) error {
		return fmt.Errorf("fetch artifact %s: %w for %s (%d bytes read)", r.where(), errDownloadStalled, limit, read) // retryable
	}
	req, err := http.NewRequestWithContext(stall.ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		stall.stop()
		return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s: %v", r.where(), redact.Error(err, r.URL))
	}
	resp, err := untimed(a.HTTP).Do(req)
	if err != nil {
		defer stall.stop()
		if stall.stalled() {
			return nil, 0, stalledErr(0)
		}
		return nil, 0, fmt.Errorf("fetch artifact %s: %w", r.where(), redact.Error(err, r.URL)) // retryable
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		stall.stop()
		if resp.StatusCode >= 500 {
			return nil, 0, fmt.Errorf("fetch artifact %s: HTTP %d", r.where(), resp.StatusCode)
		}
		return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s: HTTP %d", r.where(), resp.StatusCode)
	}
	return &stallBody{rc: resp.Body, w: stall, stalledErr: stalledErr}, resp.ContentLength, nil
}

// artifactStallLimit is artifactStallTimeout, or a test's shorter one.
func (a *MGSActivities) artifactStallLimit() time.Duration {
	if a.artifactStall > 0 {
		return a.artifactStall
	}
	return artifactStallTimeout
}

// verifyArtifact reads the artifact and checks its SHA-256; it returns the size.
func (a *MGSActivities) verifyArtifact(ctx context.Context, r ArtifactRef) (int64, error) {
	n, _, err := a.verify(ctx, r, false)
	return n, err
}

// verifyPhase2 is verifyArtifact for a host phase 2 image, which must also
// be one: its header checks as sled-agent checks a boot partition (magic,
// version, image size within target size, the file exactly the header
// block and data_size bytes, the data hashing to the header's SHA-256).
// It returns the size and the header, whose SHA-256 is the image's ID at
// MGS (the artifact's own SHA-256 is its ID at sled-agent).
func (a *MGSActivities) verifyPhase2(ctx context.Context, r ArtifactRef) (int64, mgs.Phase2Header, error) {
	return a.verify(ctx, r, true)
}

func (a *MGSActivities) verify(ctx context.Context, r ArtifactRef, phase2 bool) (int64, mgs.Phase2Header, error) {
	var h mgs.Phase2Header
	rc, _, err := a.openArtifact(ctx, r)
	if err != nil {
		return 0, h, err
	}
	defer rc.Close()
	sum, data := sha256.New(), sha256.New()
	in := heartbeatReader(ctx, rc)
	var n int64
	if phase2 {
		var head []byte
		if head, h, err = readPhase2Header(in, r); err != nil {
			return 0, h, err
		}
		sum.Write(head)
		n = int64(len(head))
		in = io.TeeReader(in, data)
	}
	m, err := io.Copy(sum, in)
	if err != nil {
		return 0, h, fmt.Errorf("read artifact %s: %w", r.where(), redact.Error(err, r.URL))
	}
	n += m
	got := hex.EncodeToString(sum.Sum(nil))
	if !strings.EqualFold(got, r.SHA256) {
		return 0, h, mgsFatal(failure.ArtifactMismatch, "artifact %s (version %s): SHA-256 is %s, expected %s", r.where(), r.Version, got, r.SHA256)
	}
	if phase2 {
		if err := h.CheckPhase2Size(uint64(n)); err != nil {
			return 0, h, notPhase2(r, err)
		}
		if d := hex.EncodeToString(data.Sum(nil)); d != h.SHA256 {
			return 0, h, notPhase2(r, fmt.Errorf("the header names data SHA-256 %s, the data hashes to %s", h.SHA256, d))
		}
	}
	return n, h, nil
}

// readPhase2Header reads and checks the header block at the start of in.
func readPhase2Header(in io.Reader, r ArtifactRef) ([]byte, mgs.Phase2Header, error) {
	head := make([]byte, mgs.Phase2HeaderSize)
	k, err := io.ReadFull(in, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, mgs.Phase2Header{}, fmt.Errorf("read artifact %s: %w", r.where(), redact.Error(err, r.URL))
	}
	h, err := mgs.ParsePhase2Header(head[:k])
	if err == nil && k < mgs.Phase2HeaderSize {
		err = fmt.Errorf("%d bytes, shorter than the %d-byte header block", k, mgs.Phase2HeaderSize)
	}
	if err == nil && h.ImageSize > h.TargetSize {
		err = fmt.Errorf("image size (%d) is greater than target size (%d)", h.ImageSize, h.TargetSize)
	}
	if err != nil {
		return nil, h, notPhase2(r, err)
	}
	return head, h, nil
}

func notPhase2(r ArtifactRef, err error) error {
	return mgsFatal(failure.ArtifactInvalid, "artifact %s (version %s) is not a host phase 2 image: %v", r.where(), r.Version, err)
}

// phase2ID reads a phase 2 image's header (checked by verifyPhase2 in the
// precheck) and returns the image's ID at MGS: the header's SHA-256.
func (a *MGSActivities) phase2ID(ctx context.Context, r ArtifactRef) (string, error) {
	rc, _, err := a.openArtifact(ctx, r)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	_, h, err := readPhase2Header(rc, r)
	return h.SHA256, err
}

// heartbeatReader records a heartbeat (bytes read so far) at most once a second.
func heartbeatReader(ctx context.Context, r io.Reader) io.Reader {
	return reportingReader(ctx, r, nil)
}

// reportingReader is heartbeatReader that also passes the bytes read to
// progress at each beat: an upload's bytes sent, for the attempt's
// progress (progressWriter).
func reportingReader(ctx context.Context, r io.Reader, progress func(n int64)) io.Reader {
	if !activity.IsActivity(ctx) {
		return r
	}
	return &hbReader{ctx: ctx, r: r, progress: progress}
}

type hbReader struct {
	ctx      context.Context
	r        io.Reader
	n        int64
	last     time.Time
	progress func(n int64)
}

func (h *hbReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.n += int64(n)
	if time.Since(h.last) > time.Second {
		activity.RecordHeartbeat(h.ctx, h.n)
		if h.progress != nil {
			h.progress(h.n)
		}
		h.last = time.Now()
	}
	return n, err
}
