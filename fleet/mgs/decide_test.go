package mgs

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Today's MGS answers SP refusals with 503 SpCommunicationFailed: only the
// message tells an invalid caboose, and nothing tells an abort refused
// for good from a transient failure but the SP's state.
func TestAmbiguousAnswersAreDecidedFromTheSP(t *testing.T) {
	ctx := context.Background()
	invalid := serve(t, 503, `{"request_id":"1","error_code":"SpCommunicationFailed","message":"error communicating with SP: Error response from SP: the image does not include a caboose"}`)
	_, err := invalid.Caboose(ctx, sp3, ComponentSP, 1)
	assert.True(t, CabooseInvalid(err))
	assert.True(t, Ambiguous(err))
	assert.Equal(t, ClassTryNextMGS, Classify(err), "by its code alone it looks transient")

	flaky := serve(t, 503, `{"request_id":"2","error_code":"SpCommunicationFailed","message":"error communicating with SP: RPC call failed (gave up after 5 attempts)"}`)
	_, err = flaky.Caboose(ctx, sp3, ComponentSP, 1)
	assert.False(t, CabooseInvalid(err))
	assert.True(t, Ambiguous(err))
	assert.False(t, Ambiguous(&Error{Status: 503, Code: CodeUpdateInProgress}))

	ours, other := uuid.New(), uuid.New()
	cases := []struct {
		st           UpdateStatus
		start, abort Verdict
	}{
		{UpdateStatus{State: UpdateNone}, VerdictRetry, VerdictNotCurrent},
		{UpdateStatus{State: UpdatePreparing, ID: ours}, VerdictOurs, VerdictRetry},
		{UpdateStatus{State: UpdateInProgress, ID: ours}, VerdictOurs, VerdictRetry},
		{UpdateStatus{State: UpdateComplete, ID: ours}, VerdictOurs, VerdictTooLate},
		{UpdateStatus{State: UpdateAborted, ID: ours}, VerdictOurs, VerdictAborted},
		{UpdateStatus{State: UpdateFailed, ID: ours}, VerdictOurs, VerdictRetry},
		{UpdateStatus{State: UpdateInProgress, ID: other}, VerdictBusy, VerdictNotCurrent},
		{UpdateStatus{State: UpdateComplete, ID: other}, VerdictRetry, VerdictNotCurrent},
	}
	for _, c := range cases {
		assert.Equal(t, c.start, StartVerdict(c.st, ours), "start after %s", c.st)
		assert.Equal(t, c.abort, AbortVerdict(c.st, ours), "abort after %s", c.st)
	}
}

// The startup options travel as the whole HostStartupOptions object, every
// field present, and the request follows the document.
func TestStartupOptionsRoundTrip(t *testing.T) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			require.NoError(t, json.Unmarshal(b, &got))
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"boot_net":false,"boot_ramdisk":false,"bootrd":false,"kbm":false,"kmdb":false,"kmdb_boot":false,"phase2_recovery_mode":false,"prom":false,"verbose":true}`)
	}))
	t.Cleanup(srv.Close)
	c := New(srv.URL, checked(t, srv.Client().Transport))
	ctx := context.Background()
	opts, err := c.StartupOptions(ctx, sp3)
	require.NoError(t, err)
	assert.True(t, opts.Verbose)
	opts.Phase2RecoveryMode = true
	require.NoError(t, c.SetStartupOptions(ctx, sp3, opts))
	assert.Len(t, got, 9)
	assert.Equal(t, true, got["phase2_recovery_mode"])
	assert.Equal(t, true, got["verbose"], "the other options are kept")

	_, err = serve(t, 200, `{"phase2_recovery_mode":true}`).StartupOptions(ctx, sp3)
	assert.ErrorContains(t, err, "required")
	assert.True(t, strings.Contains(err.Error(), "malformed reply"))
}
