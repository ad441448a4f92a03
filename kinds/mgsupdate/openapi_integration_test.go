package mgsupdate_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/openapi"
)

// contractProxy serves fleetsim (at simURL) through a reverse proxy that
// checks every response of its MGS instances against MGS's OpenAPI
// document; a violation fails the test. It returns the proxy's URL. A
// reply fleetsim drops (a lost reply) is dropped here too.
func contractProxy(t *testing.T, simURL string, instances int) string {
	t.Helper()
	target, err := url.Parse(simURL)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorHandler = func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) }
	mux := http.NewServeMux()
	mux.Handle("/", rp)
	for i := range instances {
		prefix := fmt.Sprintf("/mgs/%d", i)
		notMGS := func(r *http.Request) bool { return mgsContract.Operation(r, prefix) == "" }
		mux.Handle(prefix+"/", openapi.Middleware(mgsContract, prefix, t, notMGS, rp))
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}
