package sledagent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/apiversion"
	"github.com/fleetsaga/fleetsaga/fleet/openapi"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// A sled-agent that serves only an older API refuses our version: one
// clear, non-retryable error naming our version and the server's words;
// not a "bad request" to rebase on.
func TestOlderSledAgentRefusesOurAPIVersionClearly(t *testing.T) {
	assert.Equal(t, openapi.MustLoad(openapi.SledAgent).Version(), sledagent.APIVersion)
	srv := httptest.NewServer(httpx.RequireAPIVersion("47.0.0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("a refused request reached the handler")
	})))
	t.Cleanup(srv.Close)
	_, err := checkedClient(t, srv.URL).Inventory(context.Background())
	require.Error(t, err)
	assert.True(t, apiversion.IsRefused(err))
	assert.False(t, sledagent.IsRetryable(err))
	assert.False(t, sledagent.IsBadRequest(err), "a refused version is not a config to rebase")
	msg := err.Error()
	assert.Contains(t, msg, "refused API version 48.0.0")
	assert.Contains(t, msg, "server does not support this API version: 48.0.0")
	t.Log(msg)
}
