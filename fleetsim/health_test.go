package fleetsim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// fleetsim's /metrics gives each device a health gauge that a bad release
// (a bad_version fault) turns to 0 on exactly the devices running it.
func TestMetricsReportDeviceHealthABadVersionTurnsOff(t *testing.T) {
	s, err := spec.Generate(spec.GenerateOptions{Sleds: 3, Servers: 2, Seed: 1, SpeedUp: 30})
	require.NoError(t, err)
	srv, err := fleetsim.Start(context.Background(), fleetsim.Env{Spec: s}, "127.0.0.1:0")
	require.NoError(t, err)
	defer srv.Close()

	health := func() map[string]float64 {
		resp, err := http.Get(srv.URL + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		require.NoError(t, err)
		out := map[string]float64{}
		for _, m := range fams["fleetsim_device_healthy"].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["target"]+" "+labels["kind"]+" "+labels["version"]] = m.GetGauge().GetValue()
		}
		return out
	}
	before := health()
	sp1 := "sp/sled/1 sp " + spec.GeneratedSPActive
	require.Equal(t, 1.0, before[sp1], "every device starts healthy: %v", before)
	var hosts, agents int
	for k := range before {
		hosts += b2i(strings.HasPrefix(k, "host/"))
		agents += b2i(strings.HasPrefix(k, "server/"))
	}
	require.Equal(t, 3, hosts)
	require.Positive(t, agents)

	b, _ := json.Marshal(faults.Fault{Kind: faults.BadVersion, Target: "sp/sled/1", Version: spec.GeneratedSPActive})
	resp, err := http.Post(srv.URL+"/faults", "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	after := health()
	require.Equal(t, 0.0, after[sp1], "the SP running the bad version")
	require.Equal(t, 1.0, after["sp/sled/2 sp "+spec.GeneratedSPActive], "another SP on the same version, not named")
	health() // a second read is the same device, not a second firing
	fired := srv.Env.Faults.Fired()
	require.Len(t, fired, 1)
	require.Equal(t, 1, fired[0].Fired, "one device caught")

	bad := faults.Fault{Kind: faults.BadVersion, Target: "*"}
	require.ErrorContains(t, bad.Validate(), "version is required")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
