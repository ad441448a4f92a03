package sledagent_test

// Fuzz targets for the sled-agent reply decoders (inventory, error bodies)
// and table tests of bad replies: each gives a clear error, the right
// retry decision, exactly one request, and no partial result.

import (
	"bytes"
	"context"
	"encoding/json"
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

	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
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
	sent  [][]byte
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
		b, _ := io.ReadAll(req.Body)
		_ = req.Body.Close()
		t.sent = append(t.sent, b)
	}
	if t.reply.hang {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	var body io.Reader = bytes.NewReader(t.reply.body)
	if t.reply.truncate {
		body = &fzTruncated{bytes.NewReader(t.reply.body[:len(t.reply.body)/2])}
	}
	return &http.Response{StatusCode: t.reply.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(body),
		ContentLength: int64(len(t.reply.body)), Request: req}, nil
}

func fzClient(r fzReply) (*sledagent.Client, *fzTransport) {
	tr := &fzTransport{reply: r}
	return sledagent.New("http://sled.test/sled-agent/0c6bd4b4-0d6e-4b6b-9b7d-1a4e0b2f6a11", &http.Client{Transport: tr}), tr
}

var fzStatuses = []int{200, 200, 200, 201, 204, 400, 404, 408, 409, 429, 500, 502, 503}

func fzStatus(s uint8) int { return fzStatuses[int(s)%len(fzStatuses)] }

const (
	fzSled  = "0c6bd4b4-0d6e-4b6b-9b7d-1a4e0b2f6a11"
	fzZone  = "5d0b0f8e-8d0a-4d8e-9a60-3f2b1c0e9a77"
	fzZone2 = "7a1c2b3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
)

var fzInventory = `{"sled_id":"` + fzSled + `","sled_agent_address":"[fd00::1]:12345","sled_role":"gimlet",
 "baseboard_id":{"part_number":"913","serial_number":"BRM4"},
 "ledgered_sled_config":{"generation":3,"zones":{"` + fzZone + `":{"id":"` + fzZone + `","zone_type":{"type":"nexus","external_ip":"10.0.0.1"},"image_source":{"type":"install_dataset"}},
   "` + fzZone2 + `":{"id":"` + fzZone2 + `","zone_type":{"type":"crucible"}}},"datasets":{},"disks":{},"measurements":[]},
 "reconciler_status":{"status":"idle","completed_at":"2025-01-01T00:00:00Z","ran_for":{"secs":1,"nanos":0}},
 "last_reconciliation":{"last_reconciled_config":{"generation":3,"zones":{},"datasets":{},"disks":{},"measurements":[]},
   "zones":{"` + fzZone + `":{"result":"ok"},"` + fzZone2 + `":{"result":"err","message":"shutdown failed"}},
   "datasets":{},"external_disks":{},"orphaned_datasets":[]}}`

func FuzzInventoryReply(f *testing.F) {
	for _, s := range []string{
		fzInventory,
		`{"sled_id":"` + fzSled + `","ledgered_sled_config":null,"reconciler_status":{"status":"not_yet_run"},"last_reconciliation":null}`,
		`{"sled_id":"` + fzSled + `","reconciler_status":{"status":"running"},"ledgered_sled_config":{"generation":1,"zones":{"` + fzZone + `":{"id":"` + fzZone2 + `","zone_type":{"type":"nexus"}}}}}`,
		`{"sled_id":"` + fzSled + `","reconciler_status":{"status":"exploded"}}`,
		`{"sled_id":"` + fzSled + `","reconciler_status":{"status":"idle"},"last_reconciliation":{"zones":{"` + fzZone + `":{"result":"maybe"}}}}`,
		`{"sled_id":"` + fzSled + `","reconciler_status":{"status":"idle"},"last_reconciliation":{}}`,
		`{"sled_id":"` + fzSled + `","reconciler_status":{"status":"idle"},"ledgered_sled_config":{"generation":1,"zones":{"` + fzZone + `":{"id":"` + fzZone + `","zone_type":{}}}}}`,
		`{"reconciler_status":{"status":"idle"}}`,
		`{"request_id":"r","error_code":"ZoneRemovalFailed","message":"zone stuck"}`,
		`{} {}`, `null`, `[]`, fzInventory[:200],
	} {
		f.Add(uint8(0), []byte(s))
	}
	f.Add(uint8(10), []byte(`{"request_id":"r","error_code":"ZoneRemovalFailed","message":"zone stuck"}`))
	f.Fuzz(func(t *testing.T, st uint8, body []byte) {
		status := fzStatus(st)
		c, tr := fzClient(fzReply{status: status, body: body})
		inv, err := c.Inventory(context.Background())
		if n := tr.calls.Load(); n != 1 {
			t.Fatalf("%d requests for one call", n)
		}
		if err != nil {
			if inv != nil {
				t.Fatalf("error %v with an inventory", err)
			}
			checkSledAgentError(t, err, status, "inventory")
			return
		}
		if status >= 300 {
			t.Fatalf("HTTP %d decoded as an inventory", status)
		}
		if inv.SledID == uuid.Nil {
			t.Fatal("inventory without sled_id accepted")
		}
		switch inv.ReconcilerStatus.Status {
		case sledagent.StatusNotYetRun, sledagent.StatusRunning, sledagent.StatusIdle:
		default:
			t.Fatalf("unknown reconciler status %q accepted", inv.ReconcilerStatus.Status)
		}
		if lr := inv.LastReconciliation; lr != nil {
			for id, r := range lr.Zones {
				if r.Result != sledagent.ResultOK && r.Result != sledagent.ResultErr {
					t.Fatalf("zone %s result %q accepted", id, r.Result)
				}
			}
		}
		cfg := inv.LedgeredSledConfig
		if cfg == nil {
			return
		}
		// A ledgered config read from inventory must be sendable back
		// unchanged (the zone expunge PUTs it minus one zone).
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted ledgered config does not validate: %v", err)
		}
		b, err := json.Marshal(cfg.Normalized())
		if err != nil {
			t.Fatalf("re-encode ledgered config: %v", err)
		}
		var back sledagent.OmicronSledConfig
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("ledgered config does not decode after re-encoding: %v (%s)", err, b)
		}
		if same, err := sledagent.SameContents(*cfg, back); err != nil || !same {
			t.Fatalf("ledgered config changed in a round trip (%v): %s", err, b)
		}
		for _, id := range cfg.ZoneIDs() {
			next := cfg.WithoutZone(cfg.Generation+1, id)
			if _, still := next.Zones[id]; still || next.Generation != cfg.Generation+1 {
				t.Fatalf("WithoutZone(%s) kept the zone or the generation", id)
			}
			if len(cfg.Zones) != len(next.Zones)+1 {
				t.Fatal("WithoutZone changed the config it was derived from")
			}
		}
	})
}

// checkSledAgentError: HTTP errors carry their status and the right retry
// decision; bad 2xx bodies are ErrBadResponse and not retried.
func checkSledAgentError(t *testing.T, err error, status int, op string) {
	t.Helper()
	if !strings.Contains(err.Error(), op) {
		t.Fatalf("error %q does not name %q", err, op)
	}
	var he *sledagent.Error
	switch {
	case status >= 300:
		if !errors.As(err, &he) || he.StatusCode != status {
			t.Fatalf("HTTP %d gave %T %v", status, err, err)
		}
		want := status >= 500 || status == 429 || status == 408
		if sledagent.IsRetryable(err) != want {
			t.Fatalf("HTTP %d retryable=%v", status, !want)
		}
	default:
		if !errors.Is(err, sledagent.ErrBadResponse) {
			t.Fatalf("bad %d body gave %v, not ErrBadResponse", status, err)
		}
		if sledagent.IsRetryable(err) {
			t.Fatalf("malformed reply %v is retryable", err)
		}
	}
}

func FuzzPutConfigErrorReply(f *testing.F) {
	for _, s := range []string{
		`{"request_id":"1","error_code":"GenerationOutdated","message":"old"}`,
		`{"request_id":"1","error_code":"ConfigurationChanged","message":"x"}`,
		`{"request_id":"1","error_code":"ZoneRemovalFailed","message":"x"}`,
		`{"request_id":"1","message":"busy"}`, `<html>bad gateway</html>`, ``, `{"message":7}`,
	} {
		for st := range uint8(len(fzStatuses)) {
			f.Add(st, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, st uint8, body []byte) {
		status := fzStatus(st)
		c, tr := fzClient(fzReply{status: status, body: body})
		cfg := sledagent.NewSledConfig(4)
		err := c.PutOmicronConfig(context.Background(), cfg)
		if n := tr.calls.Load(); n != 1 {
			t.Fatalf("%d PUTs for one call", n)
		}
		if status < 300 {
			if err != nil {
				t.Fatalf("HTTP %d: %v", status, err)
			}
			return
		}
		if err == nil {
			t.Fatalf("HTTP %d accepted", status)
		}
		checkSledAgentError(t, err, status, "PUT /omicron-config")
	})
}

// TestBadInputSledAgentReplies: every bad reply is one clear error after one
// request, with the retry decision the zone expunge relies on.
func TestBadInputSledAgentReplies(t *testing.T) {
	cases := []struct {
		name      string
		reply     fzReply
		retryable bool
		want      string
	}{
		{"malformed JSON", fzReply{status: 200, body: []byte(`{"sled_id":`)}, false, "malformed response"},
		{"wrong shape", fzReply{status: 200, body: []byte(`[1]`)}, false, "malformed response"},
		{"trailing data", fzReply{status: 200, body: []byte(fzInventory + ` {}`)}, false, "trailing data"},
		{"unknown reconciler state", fzReply{status: 200, body: []byte(strings.Replace(fzInventory, `"idle"`, `"sleeping"`, 1))}, false, `unknown reconciler_status.status "sleeping"`},
		{"zones keyed by another id", fzReply{status: 200, body: []byte(strings.Replace(fzInventory, `"`+fzZone+`":{"id":"`+fzZone+`"`, `"`+fzZone+`":{"id":"`+fzZone2+`"`, 1))}, false, "does not match zone id"},
		{"truncated body", fzReply{status: 200, body: []byte(fzInventory), truncate: true}, true, "unexpected EOF"},
		{"500", fzReply{status: 500, body: []byte(`{"request_id":"r","message":"internal"}`)}, true, "500"},
		{"503 HTML", fzReply{status: 503, body: []byte(`<html>unavailable</html>`)}, true, "<html>unavailable</html>"},
		{"404", fzReply{status: 404, body: []byte(`{"request_id":"r","error_code":"NotFound","message":"no such sled"}`)}, false, "no such sled"},
		{"timeout", fzReply{hang: true}, true, "deadline exceeded"},
	}
	for _, tc := range cases {
		t.Run("inventory/"+tc.name, func(t *testing.T) {
			c, tr := fzClient(tc.reply)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			inv, err := c.Inventory(ctx)
			require.Error(t, err)
			assert.Nil(t, inv)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "inventory")
			assert.Equal(t, tc.retryable, sledagent.IsRetryable(err), err.Error())
			assert.EqualValues(t, 1, tr.calls.Load())
		})
	}
	t.Run("inventory of another sled is returned as that sled's", func(t *testing.T) {
		other := uuid.New()
		c, _ := fzClient(fzReply{status: 200, body: []byte(strings.Replace(fzInventory, fzSled, other.String(), 1))})
		inv, err := c.Inventory(context.Background())
		require.NoError(t, err)
		assert.Equal(t, other, inv.SledID, "callers must compare sled_id with the sled they asked")
	})
	t.Run("PUT: an invalid config is refused before anything is sent", func(t *testing.T) {
		c, tr := fzClient(fzReply{status: 204})
		cfg := sledagent.NewSledConfig(5)
		cfg.Zones[uuid.MustParse(fzZone)] = sledagent.OmicronZoneConfig{ID: uuid.MustParse(fzZone2), ZoneType: sledagent.OmicronZoneType{Type: "nexus"}}
		err := c.PutOmicronConfig(context.Background(), cfg)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "invalid config")
		assert.EqualValues(t, 0, tr.calls.Load())
	})
	t.Run("PUT: a failed zone removal is retryable and sent once", func(t *testing.T) {
		c, tr := fzClient(fzReply{status: 500, body: []byte(`{"request_id":"r","error_code":"ZoneRemovalFailed","message":"zone ` + fzZone + ` did not stop"}`)})
		err := c.PutOmicronConfig(context.Background(), sledagent.NewSledConfig(5))
		require.Error(t, err)
		assert.True(t, sledagent.HasCode(err, sledagent.CodeZoneRemovalFailed))
		assert.True(t, sledagent.IsRetryable(err))
		assert.Contains(t, err.Error(), "did not stop")
		assert.EqualValues(t, 1, tr.calls.Load())
	})
	t.Run("PUT: a timeout is retryable", func(t *testing.T) {
		c, _ := fzClient(fzReply{hang: true})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := c.PutOmicronConfig(ctx, sledagent.NewSledConfig(5))
		require.Error(t, err)
		assert.True(t, sledagent.IsRetryable(err))
	})
}
