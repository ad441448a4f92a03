package mgs

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/apiversion"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// The client is written for the vendored document's version and names it
// in every request (the checked transport fails a request without it).
func TestClientNamesTheDocumentsAPIVersion(t *testing.T) {
	assert.Equal(t, mgsContract.Version(), APIVersion)
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("api-version")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`"A0"`))
	}))
	t.Cleanup(srv.Close)
	_, err := New(srv.URL, checked(t, srv.Client().Transport)).PowerState(context.Background(), sp3)
	require.NoError(t, err)
	assert.Equal(t, "3.0.0", got)
}

// An MGS that serves only an older API refuses our version with dropshot's
// 400: one clear error naming our version and what the server said,
// classified fatal (neither a retry nor the other MGS of the rack helps).
func TestOlderMGSRefusesOurAPIVersionClearly(t *testing.T) {
	older := httpx.RequireAPIVersion("2.0.0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("a refused request reached the handler")
	}))
	srv := httptest.NewServer(older)
	t.Cleanup(srv.Close)
	_, err := New(srv.URL, checked(t, srv.Client().Transport)).SpState(context.Background(), sp3)
	require.Error(t, err)
	assert.True(t, apiversion.IsRefused(err))
	assert.Equal(t, ClassFatal, Classify(err))
	msg := err.Error()
	assert.Contains(t, msg, "refused API version 3.0.0")
	assert.Contains(t, msg, `server does not support this API version: 3.0.0`)
	assert.Contains(t, msg, srv.URL)
	t.Log(msg)
}
