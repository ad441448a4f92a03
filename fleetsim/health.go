package fleetsim

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fleetsaga/fleetsaga/fleetsim/dc"
	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
)

// fleetsim's /metrics is what a fleet's monitoring would scrape: one
// health gauge per device and what it runs. A device is unhealthy while
// it runs a version a bad_version fault names (a bad release), so a
// rollout's health gates have something real to query.

var deviceHealthy = prometheus.NewDesc("fleetsim_device_healthy",
	"1 when the device is healthy, 0 when it is not (a bad_version fault names what it runs).",
	[]string{"target", "kind", "version"}, nil)

// device is one health reading's subject.
type device struct{ target, kind, version string }

// healthCollector reads every device at each scrape.
type healthCollector struct{ sim *Sim }

func (c healthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- deviceHealthy }

func (c healthCollector) Collect(ch chan<- prometheus.Metric) {
	for _, d := range c.sim.devices() {
		healthy := 1.0
		if c.sim.Env.Faults.Unhealthy(d.target, d.version) {
			healthy = 0
		}
		ch <- prometheus.MustNewConstMetric(deviceHealthy, prometheus.GaugeValue, healthy, d.target, d.kind, d.version)
	}
}

// devices lists the SPs, the hosts (the phase 1 they booted) and every
// agent on every server.
func (s *Sim) devices() []device {
	var out []device
	for _, d := range s.domains {
		switch d := d.(type) {
		case *mgs.Domain:
			for _, r := range d.TruthSnapshot().Racks {
				for _, sp := range r.SPs {
					where := fmt.Sprintf("%s/%d", sp.Type, sp.Slot)
					out = append(out, device{"sp/" + where, "sp", sp.SP.Active.Version})
					if sp.Type == "sled" {
						out = append(out, device{"host/" + where, "host", sp.Host.Slots[sp.Host.BootedSlot].Version})
					}
				}
			}
		case *dc.DC:
			for _, srv := range d.Truth().(dc.Truth).Servers {
				for _, a := range srv.Agents {
					out = append(out, device{"server/" + srv.UUID.String(), "agent/" + a.Name, a.Version})
				}
			}
		}
	}
	return out
}

// mountMetrics serves GET /metrics on its own registry (no Go runtime
// noise: these are the fleet's metrics, not fleetsim's).
func (s *Sim) mountMetrics() {
	reg := prometheus.NewRegistry()
	reg.MustRegister(healthCollector{s})
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
}
