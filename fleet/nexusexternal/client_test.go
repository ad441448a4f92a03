package nexusexternal_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/apiversion"
	"github.com/fleetsaga/fleetsaga/fleet/nexusexternal"
	"github.com/fleetsaga/fleetsaga/fleet/openapi"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

const token = "oxide-token-the-test-s-own-secret"

// simExternal serves one rack's Nexus, whose external API accepts token.
func simExternal(t *testing.T) (*fleetsim.Server, *faults.Registry) {
	t.Helper()
	rack := spec.SampleRack("r", []string{"internal_ntp"})
	rack.Owners = spec.RackOwners{Nexus: spec.On(), Executor: spec.Off(), MGSUpdates: spec.Off()}
	s := &spec.Spec{Seed: 1, SpeedUp: 100, Timings: spec.DefaultTimings(), Racks: []spec.Rack{rack}}
	require.NoError(t, s.Validate())
	reg := faults.NewRegistry(1)
	srv, err := fleetsim.Start(context.Background(), fleetsim.Env{Spec: s, Faults: reg, Log: zerolog.Nop(), NexusToken: token}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv, reg
}

func tokenFile(t *testing.T, tok string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(p, []byte(tok+"\n"), 0o600))
	return p
}

// The client's traffic with fleetsim's Nexus follows the vendored external
// document (requests, the api-version header and answers): a rack without
// a target release reports none; once one is set, its version.
func TestClientTrafficFollowsOpenAPI(t *testing.T) {
	ctx := context.Background()
	srv, _ := simExternal(t)
	tr := &openapi.Transport{Contract: openapi.MustLoad(openapi.NexusExternal), Prefix: "/nexus/r/external", Rep: t, Responses: true}
	c := nexusexternal.New(srv.URL+"/nexus/r/external", tokenFile(t, token), &http.Client{Transport: tr, Timeout: 10 * time.Second})

	st, err := c.UpdateStatus(ctx)
	require.NoError(t, err)
	assert.Nil(t, st.TargetRelease, "the initial release: no target release")

	require.NoError(t, c.SetTargetRelease(ctx, "18.0.0"))
	st, err = c.UpdateStatus(ctx)
	require.NoError(t, err)
	require.NotNil(t, st.TargetRelease)
	assert.Equal(t, "18.0.0", st.TargetRelease.Version)
}

// A wrong token, a missing token file and a refused API version are one
// clear, non-retryable error each, naming the token's file but never the
// token; a 5xx or a refused connection is retried.
func TestClientErrorsAreClassified(t *testing.T) {
	ctx := context.Background()
	srv, reg := simExternal(t)
	base := srv.URL + "/nexus/r/external"

	wrong := tokenFile(t, "oxide-token-not-the-one")
	_, err := nexusexternal.New(base, wrong, nil).UpdateStatus(ctx)
	require.Error(t, err)
	assert.True(t, nexusexternal.IsUnauthorized(err), "%v", err)
	assert.False(t, nexusexternal.IsRetryable(err))
	assert.Contains(t, err.Error(), "401 Unauthorized: credentials missing or invalid")
	assert.Contains(t, err.Error(), wrong)
	assert.NotContains(t, err.Error(), "oxide-token-not-the-one")

	missing := filepath.Join(t.TempDir(), "nope")
	_, err = nexusexternal.New(base, missing, nil).UpdateStatus(ctx)
	require.ErrorIs(t, err, nexusexternal.ErrToken)
	assert.False(t, nexusexternal.IsRetryable(err))
	assert.Contains(t, err.Error(), missing)

	good := tokenFile(t, token)
	_, err = reg.Arm(faults.Fault{Kind: faults.ErrorRate, Target: "api/nexus-external", Rate: 1})
	require.NoError(t, err)
	_, err = nexusexternal.New(base, good, nil).UpdateStatus(ctx)
	require.Error(t, err)
	assert.True(t, nexusexternal.IsRetryable(err), "a 503 may pass: %v", err)
	assert.NotContains(t, err.Error(), token)

	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"request_id":"1","message":"server does not support this API version: ` + r.Header.Get("api-version") + `"}`))
	}))
	t.Cleanup(refusing.Close)
	_, err = nexusexternal.New(refusing.URL, good, nil).UpdateStatus(ctx)
	assert.True(t, apiversion.IsRefused(err), "%v", err)
	assert.False(t, nexusexternal.IsRetryable(err))
	assert.Contains(t, err.Error(), nexusexternal.APIVersion)
	assert.Contains(t, err.Error(), "an older Nexus external API than")
	assert.NotContains(t, err.Error(), token)

	refusing.Close()
	_, err = nexusexternal.New(refusing.URL, good, nil).UpdateStatus(ctx)
	assert.True(t, nexusexternal.IsRetryable(err), "a refused connection may pass: %v", err)
}
