package sledagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/openapi"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
)

func serve(t *testing.T, status int, body string) *sledagent.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return sledagent.New(srv.URL, srv.Client())
}

func TestErrorClassification(t *testing.T) {
	ctx := context.Background()
	cfg := sledagent.NewSledConfig(2)
	cases := []struct {
		name      string
		status    int
		body      string
		retryable bool
		check     func(error) bool
	}{
		// The real sled-agent's 400s have no error_code (omicron sled-agent
		// config-reconciler ledger.rs): recognised as a 400, decided by a re-read.
		{"generation out of date", 400, `{"request_id":"1","message":"sled config generation out of date (got 3, have 4)"}`, false, sledagent.IsBadRequest},
		{"changed with the same generation", 400, `{"request_id":"1","message":"sled config changed with the same generation (4)"}`, false, sledagent.IsBadRequest},
		{"ledger task busy", 503, `{"request_id":"1","message":"ledger task busy"}`, true, nil},
		{"zone removal failed", 500, `{"request_id":"1","error_code":"ZoneRemovalFailed","message":"x"}`, true,
			func(err error) bool { return sledagent.HasCode(err, sledagent.CodeZoneRemovalFailed) }},
		{"unavailable", 503, `{"request_id":"1","message":"busy"}`, true, nil},
		{"too many requests", 429, `{"request_id":"1","message":"slow down"}`, true, nil},
		{"not found", 404, `{"request_id":"1","error_code":"NotFound","message":"no sled"}`, false, nil},
		{"non-JSON error body", 502, `<html>bad gateway</html>`, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := serve(t, tc.status, tc.body).PutOmicronConfig(ctx, cfg)
			require.Error(t, err)
			var he *sledagent.Error
			require.ErrorAs(t, err, &he)
			assert.Equal(t, tc.status, he.StatusCode)
			assert.NotEmpty(t, he.Message)
			assert.Equal(t, tc.retryable, sledagent.IsRetryable(err))
			if tc.check != nil {
				assert.True(t, tc.check(err))
			}
		})
	}
}

func TestTransportErrorsAreRetryable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := sledagent.New(url, nil).Inventory(context.Background())
	require.Error(t, err)
	assert.True(t, sledagent.IsRetryable(err))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = sledagent.New(url, nil).Inventory(ctx)
	assert.False(t, sledagent.IsRetryable(err), "a cancelled call is not retried")
}

func TestInventoryStrictDecoding(t *testing.T) {
	id := uuid.NewString()
	z := uuid.NewString()
	good := `{"sled_id":"` + id + `","reconciler_status":{"status":"idle","completed_at":"2025-01-01T00:00:00Z","ran_for":{"secs":1,"nanos":0}},
		"ledgered_sled_config":{"generation":3,"zones":{"` + z + `":{"id":"` + z + `","zone_type":{"type":"nexus","external_tls":true}}},"datasets":{},"disks":{},"measurements":[]},
		"last_reconciliation":{"last_reconciled_config":{"generation":3,"zones":{},"datasets":{},"disks":{},"measurements":[]},
		  "zones":{"` + z + `":{"result":"err","message":"halt failed"}},"datasets":{},"external_disks":{},"orphaned_datasets":[]},
		"usable_hardware_threads":128}`
	inv, err := serve(t, 200, good).Inventory(context.Background())
	require.NoError(t, err, "fields fleetsaga does not model are tolerated")
	assert.Equal(t, uint64(3), inv.LedgeredGeneration())
	present, res := inv.ZonePresent(uuid.MustParse(z))
	assert.True(t, present)
	assert.Equal(t, "halt failed", res.Message)
	// Unmodelled zone_type fields survive a round trip.
	b, _ := json.Marshal(inv.LedgeredSledConfig.Zones[uuid.MustParse(z)].ZoneType)
	assert.JSONEq(t, `{"type":"nexus","external_tls":true}`, string(b))

	bad := map[string]string{
		"no sled id":        `{"reconciler_status":{"status":"idle"}}`,
		"unknown status":    `{"sled_id":"` + id + `","reconciler_status":{"status":"sleeping"}}`,
		"bad result":        `{"sled_id":"` + id + `","reconciler_status":{"status":"idle"},"last_reconciliation":{"zones":{"` + z + `":{"result":"maybe"}}}}`,
		"zone key mismatch": `{"sled_id":"` + id + `","reconciler_status":{"status":"idle"},"ledgered_sled_config":{"generation":1,"zones":{"` + z + `":{"id":"` + id + `","zone_type":{"type":"ntp"}}}}}`,
		"wrong type":        `{"sled_id":"` + id + `","reconciler_status":{"status":"idle"},"ledgered_sled_config":{"generation":"three"}}`,
		"trailing data":     `{"sled_id":"` + id + `","reconciler_status":{"status":"idle"}} {}`,
		"not json":          `hello`,
	}
	for name, body := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := serve(t, 200, body).Inventory(context.Background())
			require.Error(t, err)
			assert.True(t, errors.Is(err, sledagent.ErrBadResponse), "%v", err)
			assert.False(t, sledagent.IsRetryable(err))
		})
	}
}

func TestPutSendsEveryRequiredField(t *testing.T) {
	var got map[string]json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, http.MethodPut, r.Method)
		assert.Equal(t, "/sled-agent/x/omicron-config", r.URL.Path)
		require.NoError(t, json.NewDecoder(r.Body).Decode(&got))
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	z := sledagent.OmicronZoneConfig{ID: uuid.New(), ZoneType: sledagent.OmicronZoneType{Type: "ntp"}}
	require.NoError(t, sledagent.New(srv.URL+"/sled-agent/x/", nil).PutOmicronConfig(context.Background(),
		sledagent.OmicronSledConfig{Generation: 5, Zones: map[uuid.UUID]sledagent.OmicronZoneConfig{z.ID: z}}))
	for _, f := range []string{"generation", "zones", "datasets", "disks", "measurements"} {
		assert.Contains(t, got, f)
	}
	assert.JSONEq(t, `{"`+z.ID.String()+`":{"id":"`+z.ID.String()+`","zone_type":{"type":"ntp"}}}`, string(got["zones"]))
}

func TestSameContentsAndWithoutZone(t *testing.T) {
	a := sledagent.OmicronZoneConfig{ID: uuid.New(), ZoneType: sledagent.OmicronZoneType{Type: "ntp"}}
	b := sledagent.OmicronZoneConfig{ID: uuid.New(), ZoneType: sledagent.OmicronZoneType{Type: "nexus"}}
	cfg := sledagent.NewSledConfig(3, a, b)
	next := cfg.WithoutZone(4, b.ID)
	assert.Len(t, cfg.Zones, 2, "WithoutZone does not modify the original")
	assert.Len(t, next.Zones, 1)
	assert.Equal(t, uint64(4), next.Generation)

	var decoded sledagent.OmicronSledConfig
	raw, _ := json.Marshal(cfg)
	require.NoError(t, json.Unmarshal(raw, &decoded))
	same, err := sledagent.SameContents(cfg, decoded)
	require.NoError(t, err)
	assert.True(t, same, "a JSON round trip keeps the contents")
	same, err = sledagent.SameContents(cfg, next)
	require.NoError(t, err)
	assert.False(t, same)
}

// Every JSON field of the client's types exists, under that name, in the
// sled-agent OpenAPI document (no renamed fields).
func TestTypesFollowOpenAPI(t *testing.T) {
	raw, err := openapi.Document(openapi.SledAgent)
	require.NoError(t, err)
	var doc struct {
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
				OneOf      []struct {
					Properties map[string]any `json:"properties"`
				} `json:"oneOf"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	assert.Contains(t, doc.Paths["/omicron-config"], "put")
	assert.Contains(t, doc.Paths["/inventory"], "get")

	check := func(schema string, v any) {
		s, ok := doc.Components.Schemas[schema]
		require.True(t, ok, "schema %s", schema)
		props := map[string]bool{}
		for p := range s.Properties {
			props[p] = true
		}
		for _, o := range s.OneOf {
			for p := range o.Properties {
				props[p] = true
			}
		}
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			tag := strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			assert.True(t, props[tag], "%s.%s: field %q is not in OpenAPI schema %s", rt.Name(), rt.Field(i).Name, tag, schema)
		}
	}
	check("OmicronSledConfig", sledagent.OmicronSledConfig{})
	check("OmicronZoneConfig", sledagent.OmicronZoneConfig{})
	check("Inventory", sledagent.Inventory{})
	check("BaseboardId", sledagent.BaseboardID{})
	check("ConfigReconcilerInventory", sledagent.ConfigReconcilerInventory{})
	check("ConfigReconcilerInventoryResult", sledagent.ConfigReconcilerInventoryResult{})
	check("ConfigReconcilerInventoryStatus", sledagent.ConfigReconcilerInventoryStatus{})
	check("Duration", sledagent.Duration{})
	check("Error", struct {
		RequestID string `json:"request_id"`
		ErrorCode string `json:"error_code"`
		Message   string `json:"message"`
	}{})
}
