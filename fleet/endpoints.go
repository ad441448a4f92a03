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
	"github.com/fleetsaga/fleetsaga/internal/redact"
)

// Endpoints says where each external API lives.
type Endpoints struct {
	// MGS lists the management gateway instances (one per scrimlet).
	MGS []string `json:"mgs"`
	// SledAgent, when set, is a URL template with "{sled}" replaced by the
	// sled UUID. No real rack has one: there, leave it empty and sled-agents
	// are reached at the ip:port Nexus's sled table records for each sled.
	// fleetsim without a database is the one place it is needed.
	SledAgent string `json:"sledAgent,omitempty"`
	// NexusDB is the URL of Nexus's database: the saga and sled tables
	// (database omicron on a real rack).
	NexusDB string `json:"nexusDB"`
	// NexusLockstep is Nexus's lockstep API (the owner of sled configs
	// and SP updates through the target blueprint, docs/CONFORMANCE.md §I); "{rack}"
	// in it, if any, is replaced by the sled's rack_id from Nexus's sled
	// table. Every rack with a Nexus needs it: without it (and without
	// DirectMode) zone expunge, host flash and SP firmware stop with
	// OwnerUnknown.
	NexusLockstep string `json:"nexusLockstep,omitempty"`
	// NexusExternal is Nexus's external (operator) API, where a rack's
	// target release is read ("{rack}" as in NexusLockstep): once a rack
	// has one, its own update system owns its SPs and hosts, and SP
	// firmware and host flash refuse them. Every rack with a Nexus needs
	// it: without it (and without DirectMode) they stop with OwnerUnknown.
	NexusExternal string `json:"nexusExternal,omitempty"`
	// NexusExternalTokenFile is the file holding the API token the worker
	// authenticates to NexusExternal with (a bearer token; the file's
	// name, never the token, appears in errors). A token is valid on one
	// rack only (each rack's Nexus has its own users and tokens): with
	// "{rack}" in NexusExternal, put "{rack}" in this path too, one file
	// per rack.
	NexusExternalTokenFile string `json:"nexusExternalTokenFile,omitempty"`
	// NexusExternalCA is a PEM bundle of the CAs NexusExternal's TLS
	// certificates are checked against (empty: the system's roots); a
	// rack's external API serves the operator's certificate.
	NexusExternalCA string `json:"nexusExternalCA,omitempty"`
	// DirectMode says the racks have no Nexus: fleetsaga writes sled
	// configs itself and asks no owner (docs/DEPLOYING.md). Exclusive with
	// NexusLockstep.
	DirectMode bool   `json:"directMode,omitempty"`
	CNAPI      string `json:"cnapi"`
	SAPI       string `json:"sapi"`
	IMGAPI     string `json:"imgapi"`
	// Kube is a multi-cluster Kubernetes API root for the machine API
	// ({Kube}/clusters/{name}).
	Kube string `json:"kube"`
	// Kubeconfig is a kubeconfig file: each cluster is the context named
	// after it (takes precedence over Kube).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// KubeInCluster names the cluster the worker runs in (in-cluster config).
	KubeInCluster string `json:"kubeInCluster,omitempty"`
	// EC2 replaces the regions' public EC2 endpoints (empty: AWS's own).
	EC2 string `json:"ec2,omitempty"`
	// Fleetsim, when set, is the simulator's base URL (truth and faults).
	Fleetsim string `json:"fleetsim,omitempty"`
	// Prometheus is the monitoring server a rollout's health checks query
	// (its HTTP API; empty: query checks are refused).
	Prometheus string `json:"prometheus,omitempty"`
}

// NoOwnerConfigured says, for an operator, what to configure when neither a
// Nexus lockstep endpoint nor direct mode is set.
const NoOwnerConfigured = "no owner of the rack's sled configs and SP updates is configured: set the Nexus lockstep endpoint " +
	"(--nexus-lockstep, FLEETSAGA_NEXUS_LOCKSTEP_URL: a Nexus zone's lockstep port) or, for racks without a Nexus, " +
	"direct mode (--direct-mode, FLEETSAGA_DIRECT_MODE=true)"

// NoReleaseOwnerConfigured says, for an operator, what to configure when
// neither Nexus's external API nor direct mode is set.
const NoReleaseOwnerConfigured = "whether the rack's own update system owns its SPs and hosts (a target release) is unknown: set Nexus's external API " +
	"(--nexus-external, FLEETSAGA_NEXUS_EXTERNAL_URL, and its API token's file --nexus-external-token-file, FLEETSAGA_NEXUS_EXTERNAL_TOKEN_FILE) or, for racks without a Nexus, " +
	"direct mode (--direct-mode, FLEETSAGA_DIRECT_MODE=true)"

// FromFleetsim derives every HTTP endpoint from a fleetsim base URL.
// nexusDB is the database fleetsim's Nexus instances use; with it,
// sled-agents are found in its sled table like on a real rack (fleetsim
// records each one's loopback listener). Without it, fleetsim's
// /sled-agent/{sled} routing is the only way to them. The external API's
// token file is fleetsim's --nexus-token-file, which the worker is given
// (internal/config).
func FromFleetsim(base, nexusDB string) Endpoints {
	base = strings.TrimRight(base, "/")
	e := Endpoints{
		MGS:      []string{base + "/mgs/0", base + "/mgs/1"},
		NexusDB:  FleetsimNexusDB(nexusDB),
		CNAPI:    base + "/cnapi",
		SAPI:     base + "/sapi",
		IMGAPI:   base + "/imgapi",
		Kube:     base + "/kube",
		EC2:      base + "/ec2",
		Fleetsim: base,
	}
	if nexusDB == "" {
		e.SledAgent = base + "/sled-agent/{sled}"
	} else {
		// fleetsim serves each rack's Nexus (when its spec has one) under
		// its rack_id too; the rack comes from the sled table.
		e.NexusLockstep = base + "/nexus/{rack}"
		e.NexusExternal = base + "/nexus/{rack}/external"
	}
	return e
}

// FleetsimSchema is the PostgreSQL schema holding fleetsim's copy of
// Nexus's tables (omicron.public.* on a real rack's CockroachDB).
const FleetsimSchema = "omicron"

// FleetsimNexusDB points a database URL at fleetsim's Nexus tables by
// search_path, so fleet/nexusdb's unqualified table names resolve there as
// they do in a real rack's database omicron. A URL that sets search_path
// already is kept.
func FleetsimNexusDB(dbURL string) string {
	if dbURL == "" || strings.Contains(dbURL, "search_path") {
		return dbURL
	}
	if u, err := url.Parse(dbURL); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("search_path", FleetsimSchema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dbURL + " search_path=" + FleetsimSchema // key=value DSN
}

// SledAgentURL returns the sled-agent base URL of one sled from the
// SledAgent template ("" without one: look the sled up in Nexus's database).
func (e Endpoints) SledAgentURL(sled string) string {
	return strings.ReplaceAll(e.SledAgent, "{sled}", sled)
}

// NexusLockstepURL is the lockstep API of the rack with this rack_id ("":
// none configured).
func (e Endpoints) NexusLockstepURL(rack string) string {
	return strings.ReplaceAll(e.NexusLockstep, "{rack}", rack)
}

// NexusExternalURL is the external API of the rack with this rack_id ("":
// none configured).
func (e Endpoints) NexusExternalURL(rack string) string {
	return strings.ReplaceAll(e.NexusExternal, "{rack}", rack)
}

// NexusExternalTokenFileOf is the token file of the rack with this
// rack_id (its "{rack}" replaced).
func (e Endpoints) NexusExternalTokenFileOf(rack string) string {
	return strings.ReplaceAll(e.NexusExternalTokenFile, "{rack}", rack)
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
			errs = append(errs, fmt.Errorf("%s endpoint %q is not an http(s) URL", name, redact.URL(raw))) // it may hold a password
		}
	}
	for i, m := range e.MGS {
		check(fmt.Sprintf("mgs[%d]", i), m)
	}
	check("sled-agent", e.SledAgent)
	check("nexus-lockstep", strings.ReplaceAll(e.NexusLockstep, "{rack}", "x"))
	check("nexus-external", strings.ReplaceAll(e.NexusExternal, "{rack}", "x"))
	check("cnapi", e.CNAPI)
	check("sapi", e.SAPI)
	check("imgapi", e.IMGAPI)
	check("kube", e.Kube)
	check("ec2", e.EC2)
	check("fleetsim", e.Fleetsim)
	check("prometheus", e.Prometheus)
	if e.DirectMode && e.NexusLockstep != "" {
		errs = append(errs, errors.New("direct mode (racks without a Nexus) and a nexus-lockstep endpoint exclude each other: set one"))
	}
	if e.DirectMode && e.NexusExternal != "" {
		errs = append(errs, errors.New("direct mode (racks without a Nexus) and a nexus-external endpoint exclude each other: set one"))
	}
	if strings.Contains(e.NexusExternalTokenFile, "{rack}") && !strings.Contains(e.NexusExternal, "{rack}") {
		errs = append(errs, errors.New("the nexus-external token file names {rack} but the nexus-external endpoint does not: the rack is not known to name its token"))
	}
	if e.SledAgent != "" && !strings.Contains(e.SledAgent, "{sled}") {
		errs = append(errs, fmt.Errorf("sled-agent endpoint %q must contain {sled}", redact.URL(e.SledAgent)))
	}
	return errors.Join(errs...)
}

// KubeAccess is how the machine API reaches each cluster.
func (e Endpoints) KubeAccess() machineapi.Access {
	return machineapi.Access{BaseURL: e.Kube, Kubeconfig: e.Kubeconfig, InCluster: e.KubeInCluster, EC2: e.EC2}
}
