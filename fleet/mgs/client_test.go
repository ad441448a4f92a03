package mgs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/openapi"
)

var mgsContract = openapi.MustLoad(openapi.MGS)

// checked is an HTTP client whose every request is checked against MGS's
// OpenAPI document (the fake servers' replies are not: they are the
// tests' inputs, malformed on purpose).
func checked(t *testing.T, base http.RoundTripper) *http.Client {
	return &http.Client{Transport: &openapi.Transport{Contract: mgsContract, Base: base, Rep: t}}
}

func serve(t *testing.T, status int, body string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return New(srv.URL, checked(t, srv.Client().Transport))
}

var sp3 = SpIdentifier{Type: SpTypeSled, Slot: 3}

func TestUpdateStatusDecoding(t *testing.T) {
	id := uuid.MustParse("6f1a3b52-7c2e-4d5e-9a8b-0c1d2e3f4a5b")
	good := map[string]UpdateStatus{
		`{"state":"none"}`: {State: UpdateNone},
		`{"state":"preparing","id":"` + id.String() + `","progress":null}`:                      {State: UpdatePreparing, ID: id},
		`{"state":"preparing","id":"` + id.String() + `","progress":{"current":1,"total":4}}`:   {State: UpdatePreparing, ID: id, Progress: &PreparationProgress{1, 4}},
		`{"state":"in_progress","id":"` + id.String() + `","bytes_received":5,"total_bytes":9}`: {State: UpdateInProgress, ID: id, BytesReceived: 5, TotalBytes: 9},
		`{"state":"complete","id":"` + id.String() + `"}`:                                       {State: UpdateComplete, ID: id},
		`{"state":"aborted","id":"` + id.String() + `"}`:                                        {State: UpdateAborted, ID: id},
		`{"state":"failed","id":"` + id.String() + `","code":13}`:                               {State: UpdateFailed, ID: id, Code: 13},
		`{"state":"rot_error","id":"` + id.String() + `","message":"bad"}`:                      {State: UpdateRotError, ID: id, Message: "bad"},
		`{"state":"complete","id":"` + id.String() + `","future_field":true}`:                   {State: UpdateComplete, ID: id},
	}
	for body, want := range good {
		got, err := serve(t, 200, body).UpdateStatus(context.Background(), sp3, ComponentSP)
		require.NoError(t, err, body)
		assert.Equal(t, want, got, body)
		// Round trip through MarshalJSON (activities return these).
		b, err := json.Marshal(got)
		require.NoError(t, err)
		var back UpdateStatus
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, got, back)
	}
	bad := []string{
		`{"state":"in_progress","id":"` + id.String() + `"}`,
		`{"state":"complete"}`,
		`{"state":"failed","id":"` + id.String() + `"}`,
		`{"state":"exploded","id":"` + id.String() + `"}`,
		`{"id":"` + id.String() + `"}`,
		`{"state":"complete","id":"nope"}`,
		`{"state":"in_progress","id":"` + id.String() + `","bytes_received":"5","total_bytes":9}`,
		`not json`,
		`[]`,
	}
	for _, body := range bad {
		_, err := serve(t, 200, body).UpdateStatus(context.Background(), sp3, ComponentSP)
		require.Error(t, err, body)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.True(t, e.Decode, body)
		assert.Equal(t, ClassFatal, Classify(err), body)
		assert.Contains(t, err.Error(), "malformed reply")
	}
}

func TestOtherDecoding(t *testing.T) {
	ctx := context.Background()
	_, err := serve(t, 200, `{"serial_number":"BRM1","model":"913"}`).SpState(ctx, sp3)
	assert.ErrorContains(t, err, "required")
	st, err := serve(t, 200, `{"serial_number":"BRM1","model":"913","revision":2,"hubris_archive_id":"ab","power_state":"A0","base_mac_address":[1,2,3,4,5,6],"rot":{"state":"v2"}}`).SpState(ctx, sp3)
	require.NoError(t, err)
	assert.Equal(t, "913", st.Model)

	_, err = serve(t, 200, `{"board":"b","name":"n","version":"1"}`).Caboose(ctx, sp3, ComponentSP, 0)
	assert.ErrorContains(t, err, "git_commit")

	_, err = serve(t, 200, `{}`).ActiveSlot(ctx, sp3, ComponentHostBootFlash)
	assert.ErrorContains(t, err, "slot is required")

	_, err = serve(t, 200, `"A7"`).PowerState(ctx, sp3)
	assert.ErrorContains(t, err, "unknown power state")

	p, err := serve(t, 200, `{"progress":"available","image_id":{"sha256_hash":"ab"},"offset":5,"total_size":10,"age":{"secs":1,"nanos":5}}`).HostPhase2Progress(ctx, sp3)
	require.NoError(t, err)
	assert.Equal(t, HostPhase2Progress{Available: true, ImageSHA256: "ab", Offset: 5, TotalSize: 10, Age: time.Second + 5}, p)
	_, err = serve(t, 200, `{"progress":"available","offset":5}`).HostPhase2Progress(ctx, sp3)
	assert.ErrorContains(t, err, "required")
	p, err = serve(t, 200, `{"progress":"none"}`).HostPhase2Progress(ctx, sp3)
	require.NoError(t, err)
	assert.False(t, p.Available)

	_, err = serve(t, 200, `{"status":"hashed","sha256":[1,2]}`).HashGet(ctx, sp3, ComponentHostBootFlash, 0)
	assert.ErrorContains(t, err, "32 bytes")

	// A 200 where a body was expected but none came.
	_, err = serve(t, 204, ``).UpdateStatus(ctx, sp3, ComponentSP)
	assert.ErrorContains(t, err, "expected 200")
}

func TestErrorReplies(t *testing.T) {
	ctx := context.Background()
	err := serve(t, 503, `{"request_id":"r1","error_code":"UpdateInProgress","message":"busy"}`).
		UpdateStart(ctx, sp3, ComponentSP, uuid.New(), 0, strings.NewReader("img"), 3)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 503, e.Status)
	assert.Equal(t, "UpdateInProgress", e.Code)
	assert.Equal(t, "r1", e.RequestID)
	assert.Equal(t, ClassBusy, Classify(err))
	assert.True(t, HasCode(err, CodeUpdateInProgress))

	err = serve(t, 400, `{"state":"reset_sp_of_local_sled"}`).Reset(ctx, sp3, ComponentSP)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "reset_sp_of_local_sled", e.ResetState)
	assert.True(t, HasCode(err, CodeResetSpOfLocalSled))
	assert.Equal(t, ClassTryNextMGS, Classify(err))

	err = serve(t, 500, `{"state":"other","message":"boom","error_code":null}`).Reset(ctx, sp3, ComponentSP)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "other", e.ResetState)
	assert.Equal(t, "boom", e.Message)
	assert.Equal(t, ClassTryNextMGS, Classify(err))

	err = serve(t, 502, `<html>bad gateway</html>`).UpdateAbort(ctx, sp3, ComponentSP, uuid.New())
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "<html>bad gateway</html>", e.Message)
	assert.Equal(t, ClassTryNextMGS, Classify(err))
}

func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		want Class
	}{
		{nil, ClassNone},
		{&Error{Err: errors.New("connection refused")}, ClassTryNextMGS},
		{&Error{Status: 503, Code: "ServiceUnavailable"}, ClassTryNextMGS},
		{&Error{Status: 503, Code: "SpCommunicationFailed"}, ClassTryNextMGS},
		{&Error{Status: 503, Code: CodeUpdateInProgress}, ClassBusy},
		{&Error{Status: 503, Code: CodeUpdateSlotBusy}, ClassBusy},
		{&Error{Status: 503, Code: CodeUpdateFailed}, ClassTryNextMGS},
		{&Error{Status: 400, Code: CodeInvalidSp}, ClassFatal},
		{&Error{Status: 400, ResetState: "reset_sp_of_local_sled"}, ClassTryNextMGS},
		{&Error{Status: 404, Code: "NotFound"}, ClassFatal},
		{&Error{Status: 429}, ClassTryNextMGS},
		{&Error{Status: 200, Decode: true}, ClassFatal},
		{fmt.Errorf("wrapped: %w", &Error{Status: 503, Code: CodeUpdateInProgress}), ClassBusy},
		{context.Canceled, ClassCanceled},
		{&Error{Err: context.Canceled}, ClassCanceled},
		{&Error{Err: context.DeadlineExceeded}, ClassTryNextMGS},
		{errors.New("something else"), ClassFatal},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, Classify(c.err), "%v", c.err)
	}
}

func TestTransportError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	_, err = New("http://"+addr, nil).SpState(context.Background(), sp3)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 0, e.Status)
	assert.Equal(t, ClassTryNextMGS, Classify(err))
}

func TestSetFailover(t *testing.T) {
	var hits [3]int
	mk := func(i, status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits[i]++
			w.WriteHeader(status)
			_, _ = fmt.Fprint(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	down := mk(0, 503, `{"request_id":"1","error_code":"ServiceUnavailable","message":"down"}`)
	busy := mk(1, 503, `{"request_id":"2","error_code":"UpdateInProgress","message":"busy"}`)
	ok := mk(2, 200, `{"state":"none"}`)
	ctx := context.Background()

	s, err := NewSet([]string{down, ok}, checked(t, nil))
	require.NoError(t, err)
	st, c, err := TryAllFrom(ctx, s, func(ctx context.Context, c *Client) (UpdateStatus, error) {
		return c.UpdateStatus(ctx, sp3, ComponentSP)
	})
	require.NoError(t, err)
	assert.Equal(t, UpdateNone, st.State)
	assert.Equal(t, ok, c.BaseURL())
	assert.Equal(t, ok, s.Clients()[0].BaseURL(), "the instance that answered is tried first next time")
	_, err = TryAll(ctx, s, func(ctx context.Context, c *Client) (UpdateStatus, error) {
		return c.UpdateStatus(ctx, sp3, ComponentSP)
	})
	require.NoError(t, err)
	assert.Equal(t, 1, hits[0], "the down instance was not asked again")

	// A busy answer is not something another MGS can fix: no failover.
	s2, _ := NewSet([]string{busy, ok}, checked(t, nil))
	err = s2.Do(ctx, func(ctx context.Context, c *Client) error {
		return c.UpdateStart(ctx, sp3, ComponentSP, uuid.New(), 0, strings.NewReader("img"), 3)
	})
	assert.Equal(t, ClassBusy, Classify(err))
	assert.Equal(t, 2, hits[2], "ok instance not asked after a busy answer")

	_, err = NewSet(nil, nil)
	assert.Error(t, err)
}
