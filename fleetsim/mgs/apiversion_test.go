package mgs_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
)

// MGS is a versioned dropshot server (omicron gateway/src/lib.rs): a
// request without api-version, with a value that is not a semver, or
// naming a version newer than it serves is refused with dropshot's 400
// (no error_code) before anything happens; the response follows the
// document's error shape (contractChecked).
func TestMGSRefusesRequestsWithoutAServedAPIVersion(t *testing.T) {
	h := start(t)
	path := "/mgs/0/sp/sled/2/power-state"
	for header, msg := range map[string]string{
		"":      `missing expected header "api-version"`,
		"3.1.0": "server does not support this API version: 3.1.0",
		"three": `bad value for header "api-version": unexpected character 't' while parsing major version number: three`,
	} {
		req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(`"A2"`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if header != "" {
			req.Header.Set("api-version", header)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var body map[string]any
		require.NoError(t, decodeJSON(resp, &body))
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "api-version %q: %v", header, body)
		assert.Equal(t, msg, body["message"])
		assert.NotContains(t, body, "error_code")
	}
	assert.Equal(t, mgs.HostRunning, h.truth(sledA).Host.State, "no refused request powered the host off")

	// The product's client names the version fleetsim serves.
	_, err := h.mgs[0].PowerState(t.Context(), sled(sledA))
	require.NoError(t, err)
}

func decodeJSON(resp *http.Response, out any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}
