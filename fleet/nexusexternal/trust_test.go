package nexusexternal_test

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/nexusexternal"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// A rack whose external API serves a certificate of a private CA: without
// that CA the client fails at once with one clear, non-retryable error
// naming --nexus-external-ca (it was retried until the activity's
// timeout); given the CA's PEM bundle, it reads the status.
func TestClientOfARackWithAPrivateCA(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"target_release": nil, "suspended": false,
			"components_by_release_version": map[string]int{}, "time_last_step_planned": "2026-12-01T00:00:00Z"})
	}))
	t.Cleanup(srv.Close)
	tok := tokenFile(t, token)

	_, err := nexusexternal.New(srv.URL, tok, nil).UpdateStatus(context.Background())
	require.Error(t, err)
	assert.True(t, errors.Is(err, nexusexternal.ErrUntrusted), "%v", err)
	assert.False(t, nexusexternal.IsRetryable(err), "an untrusted certificate fails the same way every time")
	assert.Contains(t, err.Error(), "--nexus-external-ca")

	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	hc, err := nexusexternal.HTTPClient(nil, ca)
	require.NoError(t, err)
	st, err := nexusexternal.New(srv.URL, tok, hc).UpdateStatus(context.Background())
	require.NoError(t, err)
	assert.Nil(t, st.TargetRelease)
}
