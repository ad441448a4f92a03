package mgs_test

// Fuzz targets for every MGS reply decoder, and table tests of bad replies
// (malformed JSON, 5xx, timeouts, truncated bodies, a status naming another
// update): each gives a clear error, is classified for the caller, and is
// never retried or failed over by the client on its own (so a start is
// never sent twice). `go test` runs the fuzz targets over their corpora in
// testdata/fuzz; `go test -fuzz=FuzzUpdateStatusReply` explores further.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleet/openapi"
)

// fzReply is what a fake MGS answers.
type fzReply struct {
	status   int
	body     []byte
	truncate bool // the body ends early (connection dropped mid-reply)
	hang     bool // never answer (until the caller's deadline)
}

// fzTransport answers every request with one reply and counts requests.
type fzTransport struct {
	reply fzReply
	calls atomic.Int32
}

type fzTruncated struct{ r io.Reader }

func (t *fzTruncated) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err == io.EOF {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

func (t *fzTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.calls.Add(1)
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	if t.reply.hang {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	var body io.Reader = bytes.NewReader(t.reply.body)
	n := int64(len(t.reply.body))
	if t.reply.truncate {
		body = &fzTruncated{bytes.NewReader(t.reply.body[:len(t.reply.body)/2])}
	}
	return &http.Response{
		StatusCode: t.reply.status, Status: http.StatusText(t.reply.status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(body), ContentLength: n, Request: req,
	}, nil
}

var fzContract = openapi.MustLoad(openapi.MGS)

// fzClient is a client of a fake MGS answering r; every request it sends
// is checked against MGS's OpenAPI document.
func fzClient(t testing.TB, r fzReply) (*mgs.Client, *fzTransport) {
	tr := &fzTransport{reply: r}
	checked := &openapi.Transport{Contract: fzContract, Prefix: "/mgs/0", Base: tr, Rep: t}
	return mgs.New("http://mgs.test/mgs/0", &http.Client{Transport: checked}), tr
}

// fzStatuses are the HTTP statuses the fuzzers pick from.
var fzStatuses = []int{200, 200, 200, 201, 204, 400, 404, 409, 429, 500, 502, 503}

func fzStatus(s uint8) int { return fzStatuses[int(s)%len(fzStatuses)] }

var fzSP = mgs.SpIdentifier{Type: mgs.SpTypeSled, Slot: 14}

// checkMGSError: a failed call is an *mgs.Error that names the instance and
// the operation, is classified, and (for HTTP errors) carries the status.
func checkMGSError(t *testing.T, err error, status int, op string) {
	t.Helper()
	var e *mgs.Error
	if !errors.As(err, &e) {
		t.Fatalf("error is %T, not *mgs.Error: %v", err, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "http://mgs.test/mgs/0") || !strings.Contains(msg, op) {
		t.Fatalf("error %q does not name the MGS and the operation %q", msg, op)
	}
	if mgs.Classify(err) == mgs.ClassNone {
		t.Fatalf("error %q classified as none", msg)
	}
	if status >= 400 && e.Status != status {
		t.Fatalf("error %q has status %d, reply had %d", msg, e.Status, status)
	}
	if status < 300 && mgs.Classify(err) != mgs.ClassFatal {
		t.Fatalf("malformed 2xx reply %q classified %s, want fatal", msg, mgs.Classify(err))
	}
}

func FuzzUpdateStatusReply(f *testing.F) {
	id := uuid.MustParse("6f1a3b52-7c2e-4d5e-9a8b-0c1d2e3f4a5b").String()
	for _, s := range []string{
		`{"state":"none"}`,
		`{"state":"preparing","id":"` + id + `","progress":{"current":1,"total":4}}`,
		`{"state":"preparing","id":"` + id + `","progress":null}`,
		`{"state":"in_progress","id":"` + id + `","bytes_received":5,"total_bytes":9}`,
		`{"state":"complete","id":"` + id + `"}`,
		`{"state":"aborted","id":"` + id + `"}`,
		`{"state":"failed","id":"` + id + `","code":13}`,
		`{"state":"rot_error","id":"` + id + `","message":"bad"}`,
		`{"state":"in_progress","id":"` + id + `"}`,
		`{"state":"exploded"}`,
		`{"request_id":"r","error_code":"UpdateInProgress","message":"busy"}`,
		`null`, `[]`, `{"state":"complete","id":"` + id[:20],
	} {
		f.Add(uint8(0), []byte(s))
	}
	f.Add(uint8(11), []byte(`{"request_id":"r","error_code":"UpdateInProgress","message":"busy"}`))
	f.Fuzz(func(t *testing.T, st uint8, body []byte) {
		status := fzStatus(st)
		c, tr := fzClient(t, fzReply{status: status, body: body})
		got, err := c.UpdateStatus(context.Background(), fzSP, mgs.ComponentSP)
		if n := tr.calls.Load(); n != 1 {
			t.Fatalf("%d requests for one call", n)
		}
		if err != nil {
			checkMGSError(t, err, status, "update-status")
			if !reflect.DeepEqual(got, mgs.UpdateStatus{}) {
				t.Fatalf("failed decode leaked a partial status %+v", got)
			}
			return
		}
		if status != 200 {
			t.Fatalf("HTTP %d with body %q decoded as a status", status, body)
		}
		switch got.State {
		case mgs.UpdateNone, mgs.UpdatePreparing, mgs.UpdateInProgress, mgs.UpdateComplete,
			mgs.UpdateAborted, mgs.UpdateFailed, mgs.UpdateRotError:
		default:
			t.Fatalf("unknown state %q accepted", got.State)
		}
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", got, err)
		}
		var back mgs.UpdateStatus
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, got) {
			t.Fatalf("round trip of %+v gave %+v, %v", got, back, err)
		}
	})
}

// FuzzMGSReplies feeds one reply to each of the other decoding calls.
func FuzzMGSReplies(f *testing.F) {
	seeds := []string{
		`{"serial_number":"BRM1","model":"913-0000019","revision":2,"hubris_archive_id":"ab","power_state":"A0"}`,
		`{"serial_number":"BRM1","model":"913"}`,
		`{"board":"gimlet-c","git_commit":"abc","name":"gimlet","version":"1.0.4"}`,
		`{"board":"b","name":"n","version":"1","sign":"s","epoch":"1"}`,
		`{"slot":1}`, `{}`, `"A0"`, `"A7"`,
		`{"status":"hashed","sha256":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31]}`,
		`{"status":"hashed","sha256":[1,2]}`, `{"status":"hash_in_progress"}`,
		`{"progress":"available","image_id":{"sha256_hash":"ab"},"offset":5,"total_size":10,"age":{"secs":1,"nanos":5}}`,
		`{"progress":"none"}`, `{"progress":"available","offset":5}`,
		`{"sha256_hash":"abcd"}`, `[{"type":"sled","slot":3},{"type":"switch","slot":0}]`,
		`{"request_id":"r","error_code":"InvalidSp","message":"no such SP"}`,
		`{"state":"reset_sp_of_local_sled"}`, `not json`, `null`,
	}
	for op := range uint8(9) {
		for _, s := range seeds {
			f.Add(op, uint8(0), []byte(s))
		}
	}
	f.Add(uint8(3), uint8(9), []byte(`{"request_id":"r","error_code":"SpCommunicationFailed","message":"x"}`))
	f.Fuzz(func(t *testing.T, op, st uint8, body []byte) {
		status := fzStatus(st)
		c, tr := fzClient(t, fzReply{status: status, body: body})
		ctx := context.Background()
		var (
			err    error
			opName string
			check  func() // properties of a successful decode
		)
		switch op % 9 {
		case 0:
			opName = "sp-get"
			var v mgs.SpState
			v, err = c.SpState(ctx, fzSP)
			if err != nil && v != (mgs.SpState{}) {
				t.Fatalf("failed decode leaked %+v", v)
			}
		case 1:
			opName = "caboose"
			var v mgs.Caboose
			v, err = c.Caboose(ctx, fzSP, mgs.ComponentSP, 0)
			if err != nil && (v.Version != "" || v.Board != "") {
				t.Fatalf("failed decode leaked %+v", v)
			}
		case 2:
			opName = "active-slot"
			_, err = c.ActiveSlot(ctx, fzSP, mgs.ComponentHostBootFlash)
		case 3:
			opName = "power-state"
			var v mgs.PowerState
			v, err = c.PowerState(ctx, fzSP)
			check = func() {
				if v != mgs.PowerA0 && v != mgs.PowerA1 && v != mgs.PowerA2 {
					t.Fatalf("power state %q accepted", v)
				}
			}
		case 4:
			opName = "hash"
			var v mgs.HashStatus
			v, err = c.HashGet(ctx, fzSP, mgs.ComponentHostBootFlash, 1)
			check = func() {
				b, merr := json.Marshal(v)
				var back mgs.HashStatus
				if merr != nil || json.Unmarshal(b, &back) != nil || back != v {
					t.Fatalf("hash status %+v does not round-trip (%s)", v, b)
				}
				if v.Status == mgs.HashHashed && len(v.SHA256) != 64 {
					t.Fatalf("hashed without a 32-byte digest: %+v", v)
				}
			}
		case 5:
			opName = "host-phase2-progress"
			var v mgs.HostPhase2Progress
			v, err = c.HostPhase2Progress(ctx, fzSP)
			check = func() {
				b, merr := json.Marshal(v)
				var back mgs.HostPhase2Progress
				if merr != nil || json.Unmarshal(b, &back) != nil || back != v {
					t.Fatalf("phase 2 progress %+v does not round-trip (%s)", v, b)
				}
			}
		case 6:
			opName = "recovery-host-phase2"
			_, err = c.UploadHostPhase2(ctx, strings.NewReader("image"), 5)
		case 7:
			opName = "all-sp-ids"
			_, err = c.AllSpIDs(ctx)
		case 8:
			opName = "reset"
			err = c.Reset(ctx, fzSP, mgs.ComponentSP)
		}
		if n := tr.calls.Load(); n != 1 {
			t.Fatalf("%d requests for one %s call", n, opName)
		}
		if err != nil {
			checkMGSError(t, err, status, opName)
			return
		}
		if status >= 400 {
			t.Fatalf("%s: HTTP %d accepted", opName, status)
		}
		if check != nil {
			check()
		}
	})
}

// TestBadInputMGSReplies: every way a reply can be wrong gives a clear,
// classified error after exactly one request.
func TestBadInputMGSReplies(t *testing.T) {
	ours := uuid.MustParse("11111111-2222-4333-8444-555555555555")
	type call struct {
		name string
		op   string
		do   func(ctx context.Context, c *mgs.Client) error
	}
	calls := []call{
		{"update status", "update-status", func(ctx context.Context, c *mgs.Client) error {
			_, err := c.UpdateStatus(ctx, fzSP, mgs.ComponentSP)
			return err
		}},
		{"sp state", "sp-get", func(ctx context.Context, c *mgs.Client) error { _, err := c.SpState(ctx, fzSP); return err }},
		{"caboose", "caboose", func(ctx context.Context, c *mgs.Client) error {
			_, err := c.Caboose(ctx, fzSP, mgs.ComponentSP, 0)
			return err
		}},
		{"phase 2 progress", "host-phase2-progress", func(ctx context.Context, c *mgs.Client) error {
			_, err := c.HostPhase2Progress(ctx, fzSP)
			return err
		}},
		{"update start", "update sled/14 sp", func(ctx context.Context, c *mgs.Client) error {
			return c.UpdateStart(ctx, fzSP, mgs.ComponentSP, ours, 1, strings.NewReader("img"), 3)
		}},
		{"update abort", "update-abort", func(ctx context.Context, c *mgs.Client) error {
			return c.UpdateAbort(ctx, fzSP, mgs.ComponentSP, ours)
		}},
		{"reset", "reset", func(ctx context.Context, c *mgs.Client) error { return c.Reset(ctx, fzSP, mgs.ComponentSP) }},
		{"set active slot", "set-active-slot", func(ctx context.Context, c *mgs.Client) error {
			return c.SetActiveSlot(ctx, fzSP, mgs.ComponentHostBootFlash, 1, true)
		}},
	}
	replies := []struct {
		name   string
		reply  fzReply
		class  mgs.Class
		decode bool // only calls that decode a body fail on it
		want   string
	}{
		{"malformed JSON", fzReply{status: 200, body: []byte(`{"state":`)}, mgs.ClassFatal, true, "malformed reply"},
		{"wrong shape", fzReply{status: 200, body: []byte(`[1,2,3]`)}, mgs.ClassFatal, true, "malformed reply"},
		{"truncated body", fzReply{status: 200, body: []byte(`{"state":"complete","id":"` + ours.String() + `"}`), truncate: true}, mgs.ClassTryNextMGS, false, "unexpected EOF"},
		{"500 without body", fzReply{status: 500}, mgs.ClassTryNextMGS, false, "HTTP 500"},
		{"500 HTML", fzReply{status: 500, body: []byte("<html>oops</html>")}, mgs.ClassTryNextMGS, false, "<html>oops</html>"},
		{"503 busy", fzReply{status: 503, body: []byte(`{"request_id":"r1","error_code":"UpdateInProgress","message":"SP busy"}`)}, mgs.ClassBusy, false, "UpdateInProgress: SP busy"},
		{"503 no code", fzReply{status: 503, body: []byte(`{"request_id":"r1","message":"MGS down"}`)}, mgs.ClassTryNextMGS, false, "MGS down"},
		{"400 invalid SP", fzReply{status: 400, body: []byte(`{"request_id":"r2","error_code":"InvalidSp","message":"no such SP"}`)}, mgs.ClassFatal, false, "InvalidSp"},
		{"timeout", fzReply{hang: true}, mgs.ClassTryNextMGS, false, "deadline exceeded"},
	}
	for _, c := range calls {
		for _, r := range replies {
			t.Run(c.name+"/"+r.name, func(t *testing.T) {
				cl, tr := fzClient(t, r.reply)
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				err := c.do(ctx, cl)
				assert.EqualValues(t, 1, tr.calls.Load(), "exactly one request: the client never re-sends on its own")
				if r.decode && strings.Contains("update start|update abort|reset|set active slot", c.name) {
					// Calls without a reply body ignore a 200's contents.
					assert.NoError(t, err)
					return
				}
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.op)
				assert.Contains(t, err.Error(), r.want)
				assert.Equal(t, r.class, mgs.Classify(err), err.Error())
			})
		}
	}
}

// TestBadInputStatusOfAnotherUpdate: a status naming another update's ID
// comes back as that ID (the caller must not take it for its own).
func TestBadInputStatusOfAnotherUpdate(t *testing.T) {
	other := uuid.MustParse("99999999-2222-4333-8444-555555555555")
	for _, state := range []string{"complete", "aborted"} {
		c, _ := fzClient(t, fzReply{status: 200, body: []byte(`{"state":"` + state + `","id":"` + other.String() + `"}`)})
		st, err := c.UpdateStatus(context.Background(), fzSP, mgs.ComponentSP)
		require.NoError(t, err)
		assert.Equal(t, other, st.ID)
		assert.Equal(t, mgs.UpdateState(state), st.State)
	}
}

// TestBadInputNoFailoverOnBadReply: a malformed or busy reply from one MGS
// is not retried on the other (that could start a second update); only
// an unreachable or timed-out instance is.
func TestBadInputNoFailoverOnBadReply(t *testing.T) {
	id := uuid.New()
	for _, r := range []struct {
		name     string
		first    fzReply
		failover bool
	}{
		{"unknown SP", fzReply{status: 404, body: []byte(`{"request_id":"r","error_code":"InvalidSp","message":"no such SP"}`)}, false},
		{"busy", fzReply{status: 503, body: []byte(`{"request_id":"r","error_code":"UpdateInProgress","message":"busy"}`)}, false},
		{"invalid", fzReply{status: 400, body: []byte(`{"request_id":"r","error_code":"InvalidUpdateId","message":"bad id"}`)}, false},
		{"timeout", fzReply{hang: true}, true},
		{"500", fzReply{status: 500}, true},
	} {
		t.Run(r.name, func(t *testing.T) {
			t0 := &fzTransport{reply: r.first}
			t1 := &fzTransport{reply: fzReply{status: 204}}
			hc := &http.Client{Transport: fzRouter{"mgs0.test": t0, "mgs1.test": t1}}
			set, err := mgs.NewSet([]string{"http://mgs0.test", "http://mgs1.test"}, hc)
			require.NoError(t, err)
			err = set.Do(context.Background(), func(ctx context.Context, c *mgs.Client) error {
				ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
				return c.UpdateStart(ctx, fzSP, mgs.ComponentSP, id, 1, strings.NewReader("img"), 3)
			})
			assert.EqualValues(t, 1, t0.calls.Load())
			if r.failover {
				assert.NoError(t, err)
				assert.EqualValues(t, 1, t1.calls.Load(), "the other MGS took the start")
			} else {
				assert.Error(t, err)
				assert.EqualValues(t, 0, t1.calls.Load(), "the other MGS was not asked to start it again")
			}
		})
	}
}

type fzRouter map[string]*fzTransport

func (r fzRouter) RoundTrip(req *http.Request) (*http.Response, error) {
	return r[req.URL.Host].RoundTrip(req)
}
