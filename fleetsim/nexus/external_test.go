package nexus_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/openapi"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/nexus"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

const externalToken = "oxide-token-fleetsim-test"

// Every answer of the external API subset, refusals included, follows the
// vendored document: without the token (or with another) 401 as Nexus
// answers an unauthenticated caller; a newer api-version refused as
// dropshot does, a missing one served as the latest; a target release set
// shows in the status and in the truth.
func TestExternalAPIAnswersFollowOpenAPI(t *testing.T) {
	ext := openapi.MustLoad(openapi.NexusExternalLatest)
	s := rackSpec(t, spec.RackOwners{Nexus: spec.On(), Executor: spec.Off(), MGSUpdates: spec.Off()})
	srv, err := fleetsim.Start(context.Background(), fleetsim.Env{
		Spec: s, Faults: faults.NewRegistry(s.Seed), Log: zerolog.Nop(), NexusToken: externalToken,
		Check: func(api, prefix string, h http.Handler) http.Handler {
			if api != "nexus-external" {
				return h
			}
			return openapi.Middleware(ext, prefix, t, func(r *http.Request) bool { return ext.Operation(r, prefix) == "" }, h)
		},
	}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	base := srv.URL + "/nexus/" + rackID + "/external"
	hc := &http.Client{Timeout: 10 * time.Second}
	call := func(method, path, tok, version, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if version != "" {
			req.Header.Set("api-version", version)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}

	code, m := call("GET", "/v1/system/update/status", "", nexus.ExternalAPIVersion, "")
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Equal(t, "credentials missing or invalid", m["message"])
	code, _ = call("GET", "/v1/system/update/status", "oxide-token-other", nexus.ExternalAPIVersion, "")
	assert.Equal(t, http.StatusUnauthorized, code)
	code, m = call("GET", "/v1/system/update/status", externalToken, "9999999999.0.0", "")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Equal(t, "server does not support this API version: 9999999999.0.0", m["message"])

	code, m = call("GET", "/v1/system/update/status", externalToken, "", "")
	require.Equal(t, http.StatusOK, code)
	assert.Nil(t, m["target_release"])

	code, _ = call("PUT", "/v1/system/update/target-release", externalToken, nexus.ExternalAPIVersion, `{"system_version":"not-a-version"}`)
	assert.Equal(t, http.StatusBadRequest, code)
	code, _ = call("PUT", "/v1/system/update/target-release", externalToken, nexus.ExternalAPIVersion, `{"system_version":"18.0.0"}`)
	require.Equal(t, http.StatusNoContent, code)
	code, m = call("GET", "/v1/system/update/status", externalToken, nexus.ExternalAPIVersion, "")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "18.0.0", m["target_release"].(map[string]any)["version"])

	resp, err := hc.Get(srv.URL + "/truth/nexus")
	require.NoError(t, err)
	defer resp.Body.Close()
	var tr nexus.Truth
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tr))
	require.NotNil(t, tr.Racks[0].TargetRelease)
	assert.Equal(t, "18.0.0", tr.Racks[0].TargetRelease.Version)
}
