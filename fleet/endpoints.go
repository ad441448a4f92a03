// Package fleet holds the typed clients for the external control-plane APIs
// fleetsaga drives (one sub-package per API). They speak the real APIs'
// shapes, so they work against real endpoints as well as against fleetsim.
package fleet

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
)

// Endpoints says where each external API lives.
type Endpoints struct {
	// MGS lists the management gateway instances (one per scrimlet).
	MGS []string `json:"mgs"`
	// SledAgent is a URL template with "{sled}" replaced by the sled UUID.
	SledAgent string `json:"sledAgent"`
	// NexusDB is the database URL holding Nexus's saga table.
	NexusDB string `json:"nexusDB"`
	CNAPI   string `json:"cnapi"`
	SAPI    string `json:"sapi"`
	IMGAPI  string `json:"imgapi"`
	// Kube is a multi-cluster Kubernetes API root for the machine API
	// ({Kube}/clusters/{name}).
	Kube string `json:"kube"`
	// Kubeconfig is a kubeconfig file: each cluster is the context named
	// after it (takes precedence over Kube).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// KubeInCluster names the cluster the worker runs in (in-cluster config).
	KubeInCluster string `json:"kubeInCluster,omitempty"`
	// Fleetsim, when set, is the simulator's base URL (truth and faults).
	Fleetsim string `json:"fleetsim,omitempty"`
}

// FromFleetsim derives every HTTP endpoint from a fleetsim base URL.
// nexusDB is the database fleetsim's Nexus instances use.
func FromFleetsim(base, nexusDB string) Endpoints {
	base = strings.TrimRight(base, "/")
	return Endpoints{
		MGS:       []string{base + "/mgs/0", base + "/mgs/1"},
		SledAgent: base + "/sled-agent/{sled}",
		NexusDB:   nexusDB,
		CNAPI:     base + "/cnapi",
		SAPI:      base + "/sapi",
		IMGAPI:    base + "/imgapi",
		Kube:      base + "/kube",
		Fleetsim:  base,
	}
}

// SledAgentURL returns the sled-agent base URL of one sled.
func (e Endpoints) SledAgentURL(sled string) string {
	return strings.ReplaceAll(e.SledAgent, "{sled}", sled)
}

// Validate checks that every configured URL parses as http(s).
func (e Endpoints) Validate() error {
	var errs []error
	check := func(name, raw string) {
		if raw == "" {
			return
		}
		u, err := url.Parse(strings.ReplaceAll(raw, "{sled}", "x"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s endpoint %q is not an http(s) URL", name, raw))
		}
	}
	for i, m := range e.MGS {
		check(fmt.Sprintf("mgs[%d]", i), m)
	}
	check("sled-agent", e.SledAgent)
	check("cnapi", e.CNAPI)
	check("sapi", e.SAPI)
	check("imgapi", e.IMGAPI)
	check("kube", e.Kube)
	check("fleetsim", e.Fleetsim)
	if e.SledAgent != "" && !strings.Contains(e.SledAgent, "{sled}") {
		errs = append(errs, fmt.Errorf("sled-agent endpoint %q must contain {sled}", e.SledAgent))
	}
	return errors.Join(errs...)
}

// KubeAccess is how the machine API reaches each cluster.
func (e Endpoints) KubeAccess() machineapi.Access {
	return machineapi.Access{BaseURL: e.Kube, Kubeconfig: e.Kubeconfig, InCluster: e.KubeInCluster}
}
