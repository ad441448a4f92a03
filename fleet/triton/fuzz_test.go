package triton_test

// Fuzz targets for every CNAPI/SAPI/IMGAPI reply decoder and for the image
// digest check, and table tests of bad replies: each is one clear error
// after one request, with the retry decision the agent install relies on.

import (
	"bytes"
	"context"
	"crypto/sha1" //nolint:gosec // IMGAPI manifests carry SHA-1 digests.
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
)

type fzReply struct {
	status   int
	body     []byte
	truncate bool
	hang     bool
}

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
	if t.reply.truncate {
		body = &fzTruncated{bytes.NewReader(t.reply.body[:len(t.reply.body)/2])}
	}
	return &http.Response{StatusCode: t.reply.status, Status: http.StatusText(t.reply.status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(body),
		ContentLength: int64(len(t.reply.body)), Request: req}, nil
}

type fzAPIs struct {
	cnapi  *triton.CNAPI
	sapi   *triton.SAPI
	imgapi *triton.IMGAPI
	tr     *fzTransport
}

func fzClients(t testing.TB, r fzReply) fzAPIs {
	tr := &fzTransport{reply: r}
	opt := triton.WithHTTPClient(&http.Client{Transport: tr})
	c, err := triton.NewCNAPI("http://cnapi.test", opt)
	require.NoError(t, err)
	s, err := triton.NewSAPI("http://sapi.test", opt)
	require.NoError(t, err)
	i, err := triton.NewIMGAPI("http://imgapi.test", opt)
	require.NoError(t, err)
	return fzAPIs{c, s, i, tr}
}

var fzStatuses = []int{200, 200, 200, 201, 204, 400, 404, 408, 409, 429, 500, 501, 502, 503}

func fzStatus(s uint8) int { return fzStatuses[int(s)%len(fzStatuses)] }

var (
	fzServer = uuid.MustParse("44454c4c-3000-1039-8058-b2c04f4e3232")
	fzImage  = uuid.MustParse("9b5b7c1e-2a0e-4f5e-8c8a-6d0f6e1b2c3d")
)

const fzServerJSON = `{"uuid":"44454c4c-3000-1039-8058-b2c04f4e3232","hostname":"cn-17","datacenter":"fleetsim-1","status":"running",
 "setup":true,"headnode":false,"traits":{"rack":"r1","ssd":true},"last_heartbeat":"2025-01-01T00:00:00Z",
 "agents":[{"name":"cn-agent","version":"2.3.0","image_uuid":"9b5b7c1e-2a0e-4f5e-8c8a-6d0f6e1b2c3d","uuid":"3f1e0d2c-1b2a-4c3d-8e4f-5a6b7c8d9e0f"}]}`

const fzTaskJSON = `{"id":"task-17","task":"agent_install","server_uuid":"44454c4c-3000-1039-8058-b2c04f4e3232","status":"failure",
 "timestamp":"2025-01-01T00:00:00Z","history":[{"name":"error","timestamp":"2025-01-01T00:00:01Z","event":{"error":{"message":"disk full"}}},
 {"name":"finish","timestamp":"2025-01-01T00:00:01Z","event":{}}]}`

const fzImageJSON = `{"v":2,"uuid":"9b5b7c1e-2a0e-4f5e-8c8a-6d0f6e1b2c3d","owner":"00000000-0000-0000-0000-000000000000","name":"cn-agent",
 "version":"2.4.0-master-20250101T000000Z-g1a2b3c4","state":"active","disabled":false,"public":false,"type":"other","os":"other",
 "description":"Triton Compute Node Agent","tags":{"smartdc_service":"true","buildstamp":"master-20250101T000000Z-g1a2b3c4"},"files":[{"sha1":"da39a3ee5e6b4b0d3255bfef95601890afd80709","size":0,"compression":"gzip"}]}`

const fzInstanceJSON = `{"uuid":"3f1e0d2c-1b2a-4c3d-8e4f-5a6b7c8d9e0f","service_uuid":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","type":"agent",
 "params":{"server_uuid":"44454c4c-3000-1039-8058-b2c04f4e3232","image_uuid":"9b5b7c1e-2a0e-4f5e-8c8a-6d0f6e1b2c3d"}}`

const fzServiceJSON = `{"uuid":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","name":"cn-agent","application_uuid":"0a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
 "type":"agent","params":{"image_uuid":"9b5b7c1e-2a0e-4f5e-8c8a-6d0f6e1b2c3d"}}`

// checkTritonError: errors are *triton.Error naming the API, carrying the
// HTTP status, and retryable exactly by the documented rule.
func checkTritonError(t *testing.T, err error, status int) {
	t.Helper()
	var e *triton.Error
	if !errors.As(err, &e) {
		t.Fatalf("error is %T, not *triton.Error: %v", err, err)
	}
	if e.API == "" || !strings.Contains(err.Error(), e.API) {
		t.Fatalf("error %q does not name its API", err)
	}
	if status >= 300 {
		if e.Status != status {
			t.Fatalf("HTTP %d became status %d", status, e.Status)
		}
		want := status != 501 && (status >= 500 || status == 408 || status == 429) || e.Code == triton.CodeServerBusy
		if triton.IsRetryable(err) != want {
			t.Fatalf("HTTP %d code %q: retryable=%v", status, e.Code, !want)
		}
		return
	}
	// A 2xx that did not decode: retrying will not help.
	if triton.IsRetryable(err) {
		t.Fatalf("undecodable %d reply is retryable: %v", status, err)
	}
}

func FuzzTritonReplies(f *testing.F) {
	seeds := []string{
		fzServerJSON, "[" + fzServerJSON + "]", fzTaskJSON, `{"id":"task-1"}`, `{"id":""}`, fzImageJSON, "[" + fzImageJSON + "]",
		fzServiceJSON, fzInstanceJSON, "[" + fzInstanceJSON + "]",
		`{"uuid":"44454c4c-3000-1039-8058-b2c04f4e3232","unknown_field":1}`, `{"code":"ServerBusy","message":"task running"}`,
		`{"request_id":"r","error_code":"ServiceUnavailable","message":"injected"}`, `[] []`, `null`, `{"uuid":"nope"}`,
	}
	for op := range uint8(10) {
		for _, s := range seeds {
			f.Add(op, uint8(0), []byte(s))
		}
	}
	f.Add(uint8(4), uint8(8), []byte(`{"code":"ServerBusy","message":"task running"}`))
	f.Fuzz(func(t *testing.T, op, st uint8, body []byte) {
		status := fzStatus(st)
		a := fzClients(t, fzReply{status: status, body: body})
		ctx := context.Background()
		var err error
		switch op % 10 {
		case 0:
			_, err = a.cnapi.GetServer(ctx, fzServer)
		case 1:
			_, err = a.cnapi.ListServersPage(ctx, triton.ListServersOptions{Agents: true}, 10, 0)
		case 2:
			_, err = a.cnapi.GetTask(ctx, "task-17")
		case 3:
			_, err = a.cnapi.WaitTask(ctx, "task-17", time.Second)
		case 4:
			var id string
			id, err = a.cnapi.InstallAgent(ctx, fzServer, triton.InstallAgentRequest{ImageUUID: fzImage})
			if err == nil && id == "" {
				t.Fatal("install accepted without a task id")
			}
		case 5:
			_, err = a.imgapi.GetImage(ctx, fzImage)
		case 6:
			_, err = a.imgapi.ListImages(ctx, "cn-agent")
		case 7:
			_, err = a.sapi.GetService(ctx, fzServer)
		case 8:
			_, err = a.sapi.GetInstance(ctx, fzServer)
		case 9:
			_, err = a.sapi.ListInstances(ctx, fzServer)
		}
		if n := a.tr.calls.Load(); n != 1 {
			t.Fatalf("%d requests for one call", n)
		}
		if err != nil {
			checkTritonError(t, err, status)
			return
		}
		if status >= 300 {
			t.Fatalf("HTTP %d accepted", status)
		}
	})
}

// FuzzImageFileDigest: an image file is accepted only when its size and
// SHA-1 match the manifest (artifacts are verified before delivery).
func FuzzImageFileDigest(f *testing.F) {
	f.Add([]byte("agent tarball"), int64(13), "")
	f.Add([]byte("agent tarball"), int64(12), "")
	f.Add([]byte(""), int64(0), "da39a3ee5e6b4b0d3255bfef95601890afd80709")
	f.Add([]byte("x"), int64(1), "0000000000000000000000000000000000000000")
	f.Fuzz(func(t *testing.T, file []byte, size int64, digest string) {
		sum := sha1.Sum(file) //nolint:gosec
		actual := hex.EncodeToString(sum[:])
		if digest == "" {
			digest = actual // exercise the matching path too
		}
		a := fzClients(t, fzReply{status: 200, body: file})
		im := triton.Image{UUID: fzImage, Files: []triton.ImageFile{{SHA1: digest, Size: size}}}
		err := a.imgapi.VerifyFile(context.Background(), im)
		match := int64(len(file)) == size && digest == actual
		if match != (err == nil) {
			t.Fatalf("size %d/%d digest %s/%s: err=%v", len(file), size, digest, actual, err)
		}
		if err != nil {
			var fm *triton.FileMismatchError
			if !errors.As(err, &fm) || triton.IsRetryable(err) {
				t.Fatalf("mismatch gave %T %v (retryable=%v)", err, err, triton.IsRetryable(err))
			}
		}
	})
}

// TestBadInputTritonReplies: one clear error per bad reply, one request,
// the right retry decision, and no partial result.
func TestBadInputTritonReplies(t *testing.T) {
	cases := []struct {
		name      string
		reply     fzReply
		retryable bool
		want      string
	}{
		{"malformed JSON", fzReply{status: 200, body: []byte(`{"uuid":`)}, false, "bad response"},
		{"unknown field (shape drift)", fzReply{status: 200, body: []byte(`{"uuid":"44454c4c-3000-1039-8058-b2c04f4e3232","surprise":1}`)}, false, `unknown field "surprise"`},
		{"trailing data", fzReply{status: 200, body: []byte(fzServerJSON + `{}`)}, false, "trailing data"},
		{"wrong type", fzReply{status: 200, body: []byte(`{"uuid":42}`)}, false, "bad response"},
		{"truncated body", fzReply{status: 200, body: []byte(fzServerJSON), truncate: true}, true, "unexpected EOF"},
		{"500", fzReply{status: 500, body: []byte(`{"code":"InternalError","message":"boom"}`)}, true, "boom"},
		{"503 Dropshot shape", fzReply{status: 503, body: []byte(`{"request_id":"r","error_code":"ServiceUnavailable","message":"injected"}`)}, true, "ServiceUnavailable"},
		{"502 HTML", fzReply{status: 502, body: []byte(`<html>bad gateway</html>`)}, true, "<html>bad gateway</html>"},
		{"404", fzReply{status: 404, body: []byte(`{"code":"ResourceNotFound","message":"no such server"}`)}, false, "no such server"},
		{"409 server busy", fzReply{status: 409, body: []byte(`{"code":"ServerBusy","message":"task running"}`)}, true, "ServerBusy"},
		{"timeout", fzReply{hang: true}, true, "deadline exceeded"},
	}
	for _, tc := range cases {
		t.Run("get server/"+tc.name, func(t *testing.T) {
			a := fzClients(t, tc.reply)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			s, err := a.cnapi.GetServer(ctx, fzServer)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "cnapi")
			assert.Equal(t, tc.retryable, triton.IsRetryable(err), err.Error())
			assert.EqualValues(t, 1, a.tr.calls.Load())
			if tc.reply.status >= 300 || tc.reply.hang {
				assert.Equal(t, triton.Server{}, s, "no partial server on an error")
			}
		})
	}
	t.Run("install without a task id", func(t *testing.T) {
		a := fzClients(t, fzReply{status: 200, body: []byte(`{}`)})
		id, err := a.cnapi.InstallAgent(context.Background(), fzServer, triton.InstallAgentRequest{ImageUUID: fzImage})
		require.Error(t, err)
		assert.Empty(t, id)
		assert.Contains(t, err.Error(), "no task id")
		assert.False(t, triton.IsRetryable(err), "a second install must not be started blindly")
	})
	t.Run("a failed task reports the error of its last event", func(t *testing.T) {
		a := fzClients(t, fzReply{status: 200, body: []byte(fzTaskJSON)})
		task, err := a.cnapi.GetTask(context.Background(), "task-17")
		require.NoError(t, err)
		assert.True(t, task.Done())
		assert.Equal(t, "disk full", task.ErrorMessage())
	})
	t.Run("a task of another server comes back as that server's", func(t *testing.T) {
		other := uuid.New()
		a := fzClients(t, fzReply{status: 200, body: []byte(strings.Replace(fzTaskJSON, fzServer.String(), other.String(), 1))})
		task, err := a.cnapi.GetTask(context.Background(), "task-17")
		require.NoError(t, err)
		assert.Equal(t, other, task.ServerUUID, "callers must compare server_uuid with the server they installed on")
	})
	t.Run("image file: truncated download is retryable, a wrong digest is not", func(t *testing.T) {
		file := []byte("cn-agent-2.4.0.tgz contents")
		sum := sha1.Sum(file) //nolint:gosec
		im := triton.Image{UUID: fzImage, Files: []triton.ImageFile{{SHA1: hex.EncodeToString(sum[:]), Size: int64(len(file))}}}
		a := fzClients(t, fzReply{status: 200, body: file, truncate: true})
		err := a.imgapi.VerifyFile(context.Background(), im)
		require.Error(t, err)
		assert.True(t, triton.IsRetryable(err), err.Error())

		bad := append([]byte(nil), file...)
		bad[0] ^= 1
		a = fzClients(t, fzReply{status: 200, body: bad})
		err = a.imgapi.VerifyFile(context.Background(), im)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "sha1: manifest says")
		assert.False(t, triton.IsRetryable(err))

		a = fzClients(t, fzReply{status: 503})
		err = a.imgapi.VerifyFile(context.Background(), im)
		require.Error(t, err)
		assert.True(t, triton.IsRetryable(err))
	})
}
