package mgsupdate

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
)

// A sled-agent that takes no bytes of the phase 2 upload and never answers
// ends that try after the stall timeout, with an error the step retries
// (the upload has no request timeout that would end it otherwise).
func TestPhase2UploadThatStallsIsRetried(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // neither reads nor answers
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	img := simmgs.MakePhase2Image("2", 64<<10)
	path := filepath.Join(t.TempDir(), "p2.bin")
	require.NoError(t, os.WriteFile(path, img, 0o644))
	art := ArtifactRef{Version: "2", SHA256: simmgs.SHA256Hex(img), Path: path}
	s := hostSled{id: uuid.New(), upload: sledagent.New(srv.URL, nil)}
	a := &MGSActivities{Phase2UploadStall: 300 * time.Millisecond, ArtifactRoot: filepath.Dir(path)}

	// The test's own bound: without the stall timeout the upload would
	// wait for it and fail with its deadline instead.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := a.uploadPhase2(ctx, s, art, 1, &progressWriter{a: a})
	require.Error(t, err)
	assert.True(t, errors.Is(err, errUploadStalled), "ended by the stall: %v", err)
	assert.NoError(t, ctx.Err(), "well before the test's bound")
	var ae *temporal.ApplicationError
	assert.False(t, errors.As(sledAgentErr(s.id, err, "put phase 2 into the artifact store"), &ae), "retried, not the step's end")
}
