package openapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type collect struct{ errs []string }

func (c *collect) Errorf(f string, a ...any) { c.errs = append(c.errs, f) }

func TestDocumentsLoadAndRoute(t *testing.T) {
	for _, name := range []string{MGS, SledAgent} {
		if _, err := Load(name); err != nil {
			t.Fatal(err)
		}
	}
	mgs := MustLoad(MGS)
	req := httptest.NewRequest(http.MethodGet, "http://x/mgs/0/sp/sled/3/component/sp/update-status", nil)
	if op := mgs.Operation(req, "/mgs/0"); op != "sp_component_update_status" {
		t.Fatalf("operation = %q", op)
	}
}

// The checks must be able to fail: a renamed field, a wrong status and an
// unknown path are each reported.
func TestViolationsAreReported(t *testing.T) {
	mgs := MustLoad(MGS)
	get := httptest.NewRequest(http.MethodGet, "http://x/sp/sled/3/component/sp/update-status", nil)
	h := http.Header{"Content-Type": {"application/json"}}
	if err := mgs.ValidateResponse(get, "", 200, h, []byte(`{"state":"in_progress","id":"6f1e4a56-3c48-4d8e-9a4c-1b2a3c4d5e6f","bytes_received":1,"total_bytes":2}`)); err != nil {
		t.Fatalf("valid status rejected: %v", err)
	}
	if err := mgs.ValidateResponse(get, "", 200, h, []byte(`{"state":"in_progress","id":"6f1e4a56-3c48-4d8e-9a4c-1b2a3c4d5e6f","received":1,"total_bytes":2}`)); err == nil {
		t.Fatal("renamed field accepted")
	}
	if err := mgs.ValidateResponse(get, "", 503, h, []byte(`{"message":"x"}`)); err == nil {
		t.Fatal("error body without request_id accepted")
	}
	if err := mgs.ValidateResponse(get, "", 503, h, []byte(`{"request_id":"r","error_code":"SpCommunicationFailed","message":"x"}`)); err != nil {
		t.Fatalf("dropshot error rejected: %v", err)
	}
	bad := httptest.NewRequest(http.MethodGet, "http://x/sp/sled/3/nonsense", nil)
	if err := mgs.ValidateRequest(bad, "", nil); err == nil || !strings.Contains(err.Error(), "no such operation") {
		t.Fatalf("unknown path: %v", err)
	}
	start := httptest.NewRequest(http.MethodPost, "http://x/sp/sled/3/component/sp/update?id=6f1e4a56-3c48-4d8e-9a4c-1b2a3c4d5e6f&firmware_slot=0", strings.NewReader("img"))
	start.Header.Set("Content-Type", "application/octet-stream")
	if err := mgs.ValidateRequest(start, "", []byte("img")); err == nil || !strings.Contains(err.Error(), "api-version") {
		t.Fatalf("start without api-version: %v", err)
	}
	start.Header.Set("api-version", "2.0.0")
	if err := mgs.ValidateRequest(start, "", []byte("img")); err == nil || !strings.Contains(err.Error(), `"3.0.0"`) {
		t.Fatalf("start for another API version: %v", err)
	}
	start.Header.Set("api-version", mgs.Version())
	if err := mgs.ValidateRequest(start, "", []byte("img")); err != nil {
		t.Fatalf("valid start rejected: %v", err)
	}
	noID := httptest.NewRequest(http.MethodPost, "http://x/sp/sled/3/component/sp/update?firmware_slot=0", strings.NewReader("img"))
	noID.Header.Set("Content-Type", "application/octet-stream")
	noID.Header.Set("api-version", "3.0.0")
	if err := mgs.ValidateRequest(noID, "", []byte("img")); err == nil {
		t.Fatal("start without id accepted")
	}
}

func TestMiddlewareReportsBadResponses(t *testing.T) {
	var c collect
	h := Middleware(MustLoad(SledAgent), "", &c, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"msg":"nope"}`))
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://x/inventory", nil))
	if rec.Code != 400 || len(c.errs) != 1 {
		t.Fatalf("code %d, violations %d", rec.Code, len(c.errs))
	}
}
