package mgsupdate_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

// releasedRack is a single rack's external API whose target release is
// 18.0.0, and the file of the token it takes.
func releasedRack(t *testing.T) (url, tokenFile string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer oxide-token-rack" {
			httpx.WriteError(w, http.StatusUnauthorized, "Unauthorized", "credentials missing or invalid")
			return
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"target_release": map[string]any{"version": "18.0.0", "time_requested": "2026-12-01T00:00:00Z"},
			"suspended": false, "components_by_release_version": map[string]int{}, "time_last_step_planned": "2026-12-01T00:00:00Z"})
	}))
	t.Cleanup(srv.Close)
	tokenFile = filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("oxide-token-rack\n"), 0o600))
	return srv.URL, tokenFile
}

// The SP's last target-release check is right before its image is sent:
// a rack that got a target release after the precheck refuses the send
// (OwnedByTargetRelease), and nothing reaches the SP, whose inactive bank
// then holds no image of ours for the next reset to activate.
func TestSPStartRefusesToSendOnceTheRackHasATargetRelease(t *testing.T) {
	m := newMGSAct(t)
	ep := directEndpoints(m.sim.URL)
	ep.DirectMode = false
	ep.NexusExternal, ep.NexusExternalTokenFile = releasedRack(t)
	a := mgsupdate.NewMGSActivities(ep, &http.Client{Timeout: 10 * time.Second}, nil, "test")
	a.ArtifactRoot = m.dir
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(a)

	before := m.truth()
	_, err := env.ExecuteActivity(a.MGSStartUpdate, mgsupdate.StartUpdateInput{
		SP: sled2, Component: mgs.ComponentSP, UpdateID: uuid.New(), Artifact: m.artifact("1.1.0"),
		PollInterval: 10 * time.Millisecond, RackRelease: true})
	require.Error(t, err)
	assert.Equal(t, failure.OwnedByTargetRelease, mgsErrType(err), "%v", err)
	assert.Contains(t, err.Error(), "stopped before sending the image (nothing was written)")
	assert.Contains(t, err.Error(), "target release 18.0.0")
	after := m.truth()
	assert.Empty(t, after.Deliveries, "nothing sent to the SP")
	assert.Equal(t, before.SP, after.SP, "the banks hold nothing of ours")
}
