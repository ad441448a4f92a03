package nexusexternal_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/nexusexternal"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// GET /v1/system/update/status, with target_release and suspended, is in
// every external API version from INITIAL (2025112000.0.0; omicron
// nexus/external-api/src/lib.rs api_versions!, system_update_status_v2025_11_20_00,
// nexus/types/versions/src/initial/update.rs). Dropshot refuses a version
// newer than its latest (400), so the client asks the oldest: a rack on the
// May 2026 release reads its target release, where a client asking the
// newest version failed every SP and host update with APIVersionRefused.
func TestClientReadsTheUpdateStatusOfARackOnAnOlderRelease(t *testing.T) {
	const rackLatest = "2026052000.0.0" // ADD_CONTACT_SUPPORT_TO_UPDATE_STATUS
	srv := httptest.NewServer(httpx.DefaultAPIVersion(rackLatest, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"target_release": nil, "suspended": true, "contact_support": false,
			"components_by_release_version": map[string]int{}, "time_last_step_planned": "2026-12-01T00:00:00Z"})
	})))
	defer srv.Close()
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, []byte("oxide-token-x\n"), 0o600))
	_, err := nexusexternal.New(srv.URL, tok, nil).UpdateStatus(context.Background())
	require.NoError(t, err, "a rack on an older release cannot be read")
}
