package mgsupdate_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

// The URL an operator's plan names: a password and a presigned token.
const (
	artifactPassword = "hunter2"
	artifactToken    = "s3cr3t-signature"
)

// secretURL is srv's /img with a password and a presigned token in it.
func secretURL(srv *httptest.Server) string {
	return strings.Replace(srv.URL, "http://", "http://ops:"+artifactPassword+"@", 1) +
		"/img?X-Amz-Signature=" + artifactToken
}

func requireNoSecret(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.NotContains(t, err.Error(), artifactPassword)
	require.NotContains(t, err.Error(), artifactToken)
}

// trickle serves body in small pieces, one each tick: never stalled.
func trickle(body []byte, tick time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		const piece = 1 << 10
		for off := 0; off < len(body); off += piece {
			_, _ = w.Write(body[off:min(off+piece, len(body))])
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(tick):
			}
		}
	}
}

// A download slower than the fleet client's whole-request timeout (here
// 1 s, standing for the worker's 75 s) that never stalls completes: only
// a stall ends it.
func TestArtifactDownloadSlowerThanTheRequestTimeoutCompletes(t *testing.T) {
	body := make([]byte, 24<<10)
	sum := sha256.Sum256(body)
	srv := httptest.NewServer(trickle(body, 100*time.Millisecond)) // ~2.4 s
	defer srv.Close()
	a := mgsupdate.NewMGSActivities(directEndpoints(srv.URL), &http.Client{Timeout: time.Second}, nil, "test")
	mgsupdate.SetArtifactStall(a, time.Second)
	n, err := mgsupdate.VerifyArtifact(context.Background(), a, mgsupdate.ArtifactRef{Version: "1", SHA256: hex.EncodeToString(sum[:]), URL: secretURL(srv)})
	require.NoError(t, err)
	require.Equal(t, int64(len(body)), n)
}

// A server that sends part of the body and then nothing fails the read
// with a retryable error that says it stalled, and names no secret.
func TestArtifactDownloadStallIsARetryableErrorWithoutTheURLsSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		_, _ = w.Write(make([]byte, 4<<10))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	a := mgsupdate.NewMGSActivities(directEndpoints(srv.URL), &http.Client{Timeout: time.Minute}, nil, "test")
	mgsupdate.SetArtifactStall(a, 300*time.Millisecond)
	_, err := mgsupdate.VerifyArtifact(context.Background(), a, mgsupdate.ArtifactRef{Version: "1", SHA256: strings.Repeat("0", 64), URL: secretURL(srv)})
	requireNoSecret(t, err)
	require.Contains(t, err.Error(), "no bytes for 300ms")
	var ae *temporal.ApplicationError
	require.False(t, errors.As(err, &ae) && ae.NonRetryable(), "a stall is retried: %v", err)
}

// An artifact URL's password and token reach no error: not a refusal
// (404), not a connection that failed, whatever the URL's form.
func TestArtifactURLErrorsNameNoSecret(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	a := mgsupdate.NewMGSActivities(directEndpoints(srv.URL), &http.Client{Timeout: time.Minute}, nil, "test")
	ref := mgsupdate.ArtifactRef{Version: "1", SHA256: strings.Repeat("0", 64), URL: secretURL(srv)}
	_, err := mgsupdate.VerifyArtifact(context.Background(), a, ref)
	requireNoSecret(t, err)
	require.Contains(t, err.Error(), "HTTP 404")
	for _, u := range []string{ref.URL, "HTTPS://ops:" + artifactPassword + "@127.0.0.1:1/x?t=" + artifactToken,
		"https:ops:" + artifactPassword + "@127.0.0.1:1/x", "http://127.0.0.1:1/x?sig=" + artifactToken + "&a=b"} {
		srv.Close()
		_, err = mgsupdate.VerifyArtifact(context.Background(), a, mgsupdate.ArtifactRef{Version: "1", SHA256: ref.SHA256, URL: u})
		requireNoSecret(t, err)
	}
}

// A plan's path: artifact is read only under the worker's artifact root:
// an attacker's plan naming /etc/passwd (directly, by "..", or through a
// symbolic link inside the root) learns nothing of the file, not even its
// SHA-256, and a worker without a root reads no path at all.
func TestArtifactPathOutsideTheRootIsNotRead(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "sp.img"), []byte("image"), 0o644))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(root, "link.img")))
	passwd, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	sum := sha256.Sum256(passwd)
	a := mgsupdate.NewMGSActivities(fleet.Endpoints{}, &http.Client{}, nil, "test")
	a.ArtifactRoot = root
	for _, path := range []string{"/etc/passwd", filepath.Join(root, "..", "..", "..", "etc", "passwd"), filepath.Join(root, "link.img")} {
		_, err := mgsupdate.VerifyArtifact(context.Background(), a, mgsupdate.ArtifactRef{Version: "1", SHA256: strings.Repeat("0", 64), Path: path})
		requireFailure(t, err, failure.ArtifactUnavailable)
		require.NotContains(t, err.Error(), hex.EncodeToString(sum[:]), "the file's hash is not learned")
	}
	good := sha256.Sum256([]byte("image"))
	n, err := mgsupdate.VerifyArtifact(context.Background(), a, mgsupdate.ArtifactRef{Version: "1", SHA256: hex.EncodeToString(good[:]), Path: filepath.Join(root, "sp.img")})
	require.NoError(t, err)
	require.Equal(t, int64(5), n)

	a.ArtifactRoot = ""
	_, err = mgsupdate.VerifyArtifact(context.Background(), a, mgsupdate.ArtifactRef{Version: "1", SHA256: hex.EncodeToString(good[:]), Path: filepath.Join(root, "sp.img")})
	requireFailure(t, err, failure.ArtifactUnavailable)
	require.ErrorContains(t, err, "--artifact-root")
}

func requireFailure(t *testing.T, err error, typ string) {
	t.Helper()
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, typ, ae.Type(), "%v", err)
	require.True(t, ae.NonRetryable())
}
