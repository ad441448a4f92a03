package sled_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
)

// The sled-agent is a versioned dropshot server (omicron
// sled-agent/src/server.rs): a request that does not name a version it
// serves in api-version is refused with dropshot's 400, before anything
// happens, and the sled keeps its ledger.
func TestSledAgentRefusesRequestsWithoutAServedAPIVersion(t *testing.T) {
	s := rackSpec(t, []string{"internal_ntp"})
	srv := startSim(t, s, "")
	sl := s.Racks[0].Sleds[0]
	url := sledURL(t, srv, sl.ID) + "/omicron-config"
	valid := `{"generation":4,"zones":{},"datasets":{},"disks":{},"measurements":[]}`
	for header, msg := range map[string]string{
		"":        `missing expected header "api-version"`,
		"49.0.0":  "server does not support this API version: 49.0.0",
		"forty-8": `bad value for header "api-version": unexpected character 'f' while parsing major version number: forty-8`,
	} {
		req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(valid))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if header != "" {
			req.Header.Set("api-version", header)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "api-version %q: %s", header, raw)
		var body map[string]any
		require.NoError(t, json.Unmarshal(raw, &body))
		assert.Equal(t, msg, body["message"])
		assert.NotContains(t, body, "error_code")
	}
	assert.Equal(t, uint64(3), sledTruth(t, srv, sl.ID).LedgeredGeneration, "no refused PUT reached the ledger")

	// The version fleetsim serves (and an older one) is accepted.
	status, eb := rawRequest(t, http.MethodPut, url, valid)
	require.Equal(t, http.StatusNoContent, status, "%+v", eb)
	assert.Equal(t, uint64(4), sledTruth(t, srv, sl.ID).LedgeredGeneration)
	assert.Equal(t, "48.0.0", sled.APIVersion)
}
