package httpx

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RequireAPIVersion answers as dropshot's ClientSpecifiesVersionInHeader
// does without a default: the messages of dropshot's own tests
// (tests/integration-tests/versions.rs) and of the semver crate.
func TestRequireAPIVersionAnswersAsDropshot(t *testing.T) {
	served := false
	h := RequireAPIVersion("3.0.0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served = true
		w.WriteHeader(http.StatusNoContent)
	}))
	cases := []struct {
		header string // "-": none
		status int
		msg    string
	}{
		{"-", 400, `missing expected header "api-version"`},
		{"not-a-semver", 400, `bad value for header "api-version": unexpected character 'n' while parsing major version number: not-a-semver`},
		{"", 400, `bad value for header "api-version": empty string, expected a semver version: `},
		{"3", 400, `bad value for header "api-version": unexpected end of input while parsing major version number: 3`},
		{"3.0", 400, `bad value for header "api-version": unexpected end of input while parsing minor version number: 3.0`},
		{"3.x.0", 400, `bad value for header "api-version": unexpected character 'x' while parsing minor version number: 3.x.0`},
		{"03.0.0", 400, `bad value for header "api-version": invalid leading zero in major version number: 03.0.0`},
		{"3.0.0x", 400, `bad value for header "api-version": unexpected character 'x' after patch version number: 3.0.0x`},
		{"3.0.1", 400, "server does not support this API version: 3.0.1"},
		{"4.0.0", 400, "server does not support this API version: 4.0.0"},
		{"3.0.0", 204, ""},
		{"2.0.0", 204, ""},
		{"3.0.0-rc.1", 204, ""},
		{"3.0.0+build.7", 204, ""},
	}
	for _, tc := range cases {
		served = false
		req := httptest.NewRequest(http.MethodGet, "/sp/sled/3", nil)
		if tc.header != "-" {
			req.Header.Set(VersionHeader, tc.header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, tc.status, rec.Code, "header %q: %s", tc.header, rec.Body)
		if tc.status != 400 {
			assert.True(t, served, "header %q", tc.header)
			continue
		}
		assert.False(t, served, "header %q: refused before the handler", tc.header)
		var body map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		assert.Equal(t, tc.msg, body["message"], "header %q", tc.header)
		assert.NotContains(t, body, "error_code", "dropshot's version errors carry no code")
		assert.NotEmpty(t, body["request_id"])
	}
}
