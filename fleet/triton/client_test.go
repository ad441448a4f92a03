package triton_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
)

func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestErrorClassification(t *testing.T) {
	cases := []struct {
		status    int
		body      string
		retryable bool
		code      string
	}{
		{500, `{"code":"InternalError","message":"boom"}`, true, "InternalError"},
		{503, `{"request_id":"1","error_code":"ServiceUnavailable","message":"x"}`, true, "ServiceUnavailable"},
		{501, `{"code":"NotImplemented","message":"x"}`, false, "NotImplemented"},
		{429, `{}`, true, ""},
		{408, `not json`, true, ""},
		{409, `{"code":"ServerBusy","message":"task running"}`, true, triton.CodeServerBusy},
		{409, `{"code":"ServerNotRunning","message":"offline"}`, false, triton.CodeServerNotRunning},
		{404, `{"code":"ResourceNotFound","message":"no"}`, false, triton.CodeResourceNotFound},
		{400, `{"code":"InvalidContent","message":"bad"}`, false, triton.CodeInvalidContent},
	}
	for _, c := range cases {
		url := serve(t, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(c.status)
			_, _ = w.Write([]byte(c.body))
		})
		api, err := triton.NewCNAPI(url)
		require.NoError(t, err)
		_, err = api.GetServer(context.Background(), uuid.New())
		var e *triton.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, c.status, e.Status)
		assert.Equal(t, c.retryable, triton.IsRetryable(err), "%d %s", c.status, c.body)
		assert.Equal(t, c.code, triton.ErrorCode(err))
		assert.NotEmpty(t, e.Message)
		assert.Equal(t, c.status == 404, triton.IsNotFound(err))
	}
}

func TestTransportErrorsAreRetryableButCancelIsNot(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	api, err := triton.NewSAPI(url)
	require.NoError(t, err)
	_, err = api.ListServices(context.Background(), triton.ListServicesOptions{})
	require.Error(t, err)
	assert.True(t, triton.IsRetryable(err), err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = api.ListServices(ctx, triton.ListServicesOptions{})
	require.Error(t, err)
	assert.False(t, triton.IsRetryable(err))
	assert.True(t, errors.Is(err, context.Canceled))

	assert.False(t, triton.IsRetryable(errors.New("plain")))
	_, err = triton.NewIMGAPI("ftp://x")
	assert.Error(t, err)
}

func TestStrictDecoding(t *testing.T) {
	id := uuid.New()
	body := fmt.Sprintf(`{"uuid":"%s","hostname":"cn1","datacenter":"dc","status":"running","setup":true,"headnode":false,"traits":{},"sysinfo":{}}`, id)
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(body))
	})
	strict, _ := triton.NewCNAPI(url)
	_, err := strict.GetServer(context.Background(), id)
	require.Error(t, err, "unknown field sysinfo")
	assert.False(t, triton.IsRetryable(err), "a shape mismatch does not heal")

	lenient, _ := triton.NewCNAPI(url, triton.WithAllowUnknownFields())
	s, err := lenient.GetServer(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, "cn1", s.Hostname)

	for _, bad := range []string{`{"uuid":"nope"}`, `{"hostname":1}`, `{} {}`, `[`} {
		body = bad
		_, err := lenient.GetServer(context.Background(), id)
		assert.Error(t, err, bad)
		assert.False(t, triton.IsRetryable(err), bad)
	}
}

func TestListServersFollowsPages(t *testing.T) {
	const total = 2345
	ids := make([]uuid.UUID, total)
	for i := range ids {
		ids[i] = uuid.New()
	}
	var calls int
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		calls++
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		assert.Equal(t, "agents", r.URL.Query().Get("extras"))
		w.Write([]byte("["))
		for i := offset; i < min(offset+limit, total); i++ {
			if i > offset {
				w.Write([]byte(","))
			}
			fmt.Fprintf(w, `{"uuid":"%s","hostname":"h%d","datacenter":"d","status":"running","setup":true,"headnode":false,"traits":{}}`, ids[i], i)
		}
		w.Write([]byte("]"))
	})
	api, _ := triton.NewCNAPI(url)
	all, err := api.ListServers(context.Background(), triton.ListServersOptions{Agents: true})
	require.NoError(t, err)
	assert.Len(t, all, total)
	assert.Equal(t, 3, calls)
	assert.Equal(t, ids[total-1], all[total-1].UUID)
	_, err = api.ListServersPage(context.Background(), triton.ListServersOptions{}, 1001, 0)
	assert.Error(t, err)
}

// A failed task as CNAPI records it: the error first, then "finish"
// (sdc-cnapi lib/models/server.js sendTaskRequest); sdcadm reads
// history[0] (lib/procedures/update-agent-v1.js).
func TestTaskErrorMessageIsHistoryZero(t *testing.T) {
	tk := triton.Task{ID: "t", Status: triton.TaskFailure, History: []triton.TaskEvent{
		{Name: "error", Event: triton.EventBody{Error: &triton.TaskError{Message: "AgentInstall error: sha1 mismatch"}}},
		{Name: "finish", Timestamp: time.Now()},
	}}
	assert.True(t, tk.Done())
	assert.Equal(t, "AgentInstall error: sha1 mismatch", tk.ErrorMessage())
	tk.History = tk.History[1:]
	assert.Contains(t, tk.ErrorMessage(), "without an error event")
	tk.Status = triton.TaskActive
	assert.False(t, tk.Done())
	assert.Empty(t, tk.ErrorMessage())
}

// realAgentManifest is an agent image as IMGAPI holds it: the fields of
// sdc-cn-agent's manifest.tmpl filled as its Makefile's release target
// fills them (version "VERSION-BUILDSTAMP"), plus published_at.
func realAgentManifest(id uuid.UUID, version, stamp, published string) string {
	return fmt.Sprintf(`{"v":2,"uuid":"%s","owner":"00000000-0000-0000-0000-000000000000","name":"cn-agent",
 "version":"%s-%s","state":"active","disabled":false,"public":false,"type":"other","os":"other",
 "files":[{"sha1":"da39a3ee5e6b4b0d3255bfef95601890afd80709","size":0,"compression":"gzip"}],
 "description":"Triton Compute Node Agent","tags":{"smartdc_service":"true","buildstamp":"%s"},"published_at":"%s"}`,
		id, version, stamp, stamp, published)
}

func TestRealAgentManifestIsAnAgentImage(t *testing.T) {
	id := uuid.New()
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, realAgentManifest(id, "2.14.0", "master-20240101T000000Z-g1a2b3c4", "2024-01-01T00:10:00Z"))
	})
	api, err := triton.NewIMGAPI(url)
	require.NoError(t, err)
	im, err := api.GetImage(context.Background(), id)
	require.NoError(t, err, "the client reads every field of the real manifest")
	assert.True(t, im.IsAgent())
	assert.Equal(t, "2.14.0-master-20240101T000000Z-g1a2b3c4", im.Version)
	assert.Equal(t, "master-20240101T000000Z-g1a2b3c4", im.Buildstamp())
	im.Tags = map[string]any{"smartdc_agent": true}
	assert.False(t, im.IsAgent(), "a tag no agent build writes does not make an agent image")
	im.Tags = map[string]any{"smartdc_service": "true"}
	im.Type = triton.ImageTypeZone
	assert.False(t, im.IsAgent(), "zone images are not agents")
}

// sdcadm takes the image published last, whatever its version says.
func TestNewestIsPublishedLast(t *testing.T) {
	at := func(s string) *time.Time { v, _ := time.Parse(time.RFC3339, s); return &v }
	older := triton.Image{Version: "9.0.0-master-20230101T000000Z-gaaaaaaa", PublishedAt: at("2023-01-01T00:00:00Z")}
	newer := triton.Image{Version: "1.0.0-master-20240101T000000Z-gbbbbbbb", PublishedAt: at("2024-01-01T00:00:00Z")}
	unpublished := triton.Image{Version: "99.0.0"}
	got, ok := triton.Newest([]triton.Image{newer, unpublished, older})
	require.True(t, ok)
	assert.Equal(t, newer.Version, got.Version)
	_, ok = triton.Newest(nil)
	assert.False(t, ok)
}
