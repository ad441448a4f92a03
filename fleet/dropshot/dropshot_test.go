package dropshot_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/apiversion"
	"github.com/fleetsaga/fleetsaga/fleet/dropshot"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// A versioned client names its version and recognises the server's
// refusal of it; an unversioned one (Nexus's lockstep API) sends no
// api-version header at all.
func TestVersionHeaderOnlyOnAVersionedAPI(t *testing.T) {
	seen := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get(apiversion.Header)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	_, err := dropshot.New("nexus lockstep", srv.URL, nil, "", 1<<10).Do(context.Background(), dropshot.JSON(http.MethodGet, "/x", nil))
	require.NoError(t, err)
	assert.Empty(t, <-seen)

	old := httptest.NewServer(httpx.RequireAPIVersion("47.0.0", http.NotFoundHandler()))
	t.Cleanup(old.Close)
	c := dropshot.New("sled-agent", old.URL, nil, "48.0.0", 1<<10)
	reply, err := c.Do(context.Background(), dropshot.JSON(http.MethodPut, "/omicron-config?x=1", []byte(`{}`)))
	require.NoError(t, err)
	assert.Equal(t, "PUT /omicron-config", reply.Op)
	f := c.Failure(reply, 100)
	require.NotNil(t, f.Refused)
	assert.Equal(t, "48.0.0", f.Refused.Ours)
}

// A reply longer than the bound is cut and says so; an error answer that
// is not dropshot's body is kept as text up to the clip, without a code.
func TestBoundedReplyAndForeignErrorBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/long":
			_, _ = w.Write([]byte(strings.Repeat("a", 11)))
		case "/fits":
			_, _ = w.Write([]byte(strings.Repeat("a", 10)))
		case "/proxy":
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("  <html>bad gateway</html>"))
		default:
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"request_id":"r1","error_code":"Busy","message":"moved on"}`))
		}
	}))
	t.Cleanup(srv.Close)
	get := func(maxReply int, path string) (*dropshot.Client, dropshot.Reply) {
		c := dropshot.New("sled-agent", srv.URL+"/", nil, "48.0.0", maxReply)
		reply, err := c.Do(context.Background(), dropshot.JSON(http.MethodGet, path, nil))
		require.NoError(t, err)
		return c, reply
	}
	_, long := get(10, "/long")
	_, fits := get(10, "/fits")
	assert.True(t, long.Over)
	assert.Len(t, long.Body, 10)
	assert.False(t, fits.Over)
	assert.True(t, fits.OK())

	c, proxy := get(1<<10, "/proxy")
	assert.False(t, proxy.OK())
	assert.Equal(t, dropshot.Failure{Message: "<html>bad"}, c.Failure(proxy, 11))
	c, busy := get(1<<10, "/busy")
	assert.Equal(t, dropshot.Failure{RequestID: "r1", ErrorCode: "Busy", Message: "moved on"}, c.Failure(busy, 100))
}
