// Package machineapi simulates the Kubernetes API of OpenShift-style clusters
// for the MachineSet boot image bump: enough of the API server that
// k8s.io/client-go (dynamic client, unstructured objects) works against it.
//
// Each cluster of the spec lives under its own API root:
//
//	/kube/clusters/{cluster}/...   (a client's rest.Config.Host)
//
// Served resources (get, list with labelSelector, JSON merge patch where
// patchable, with resourceVersion optimistic concurrency):
//
//	machine.openshift.io/v1beta1 machinesets (namespaced; patch + /status)
//	machine.openshift.io/v1beta1 machines    (namespaced; read-only)
//	v1 configmaps                            (namespaced; patch)
//	v1 nodes                                 (read-only)
//	config.openshift.io/v1 clusterversions   (patch + /status)
//	config.openshift.io/v1 infrastructures   (read-only)
//	operator.openshift.io/v1 machineconfigurations (patch + /status)
//
// plus /version and minimal discovery (/api, /apis, /apis/{g}/{v}).
//
// The golden boot image record is the coreos-bootimages ConfigMap in
// openshift-machine-config-operator; coreos-bootimages-history (fleetsaga
// convention) holds earlier releases' streams. The cluster's recorded boot
// image version is MachineConfiguration "cluster"
// status.bootImageSkewEnforcementStatus, and skew enforcement's verdict is
// its status condition "Upgradeable".
//
// Scaling a MachineSet (merge patch of spec.replicas) creates Machines with
// the template's providerSpec; each joins as a Node after
// Timings.MachineBootTime (scaled) if its image is one fleetsim can boot
// (an official image of any known release, or a custom image the spec
// declares) and no machine_boot_failure fault fires. Scale-down deletes the
// newest machines.
//
// Faults (target machineset/<cluster>/<name>): patch_conflict (the patch gets
// 409 and the object changes underneath), machineset_revert (after each patch
// that changes the providerSpec, another actor restores the previous one),
// machine_boot_failure (a new machine never joins). Latency and error_rate
// apply to api/kube.
package machineapi

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fm "github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim/domain"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// Name is the domain's key under /truth.
const Name = "machineapi"

// Sim is the machine API domain.
type Sim struct {
	env domain.Env

	mu       sync.Mutex
	closed   bool
	clusters map[string]*cluster
	order    []string
	timers   []*time.Timer
}

type cluster struct {
	name    string
	spec    *spec.Cluster
	install string
	rv      int64
	// objs: resource key → "namespace/name" → object.
	objs   map[string]map[string]*unstructured.Unstructured
	known  map[string]bool
	stats  map[string]*MachineSetStats
	seq    int
	events []string
	mco    mcoState
}

// MachineSetStats counts what happened to one MachineSet.
type MachineSetStats struct {
	Patches      int `json:"patches"`      // successful patches of the MachineSet
	ImagePatches int `json:"imagePatches"` // patches that changed the providerSpec
	Reverts      int `json:"reverts"`      // reverts by the simulated other actor
	Conflicts    int `json:"conflicts"`    // 409s returned (stale resourceVersion or fault)
}

// New is the domain constructor.
func New(_ context.Context, env domain.Env) (domain.Domain, error) {
	s := &Sim{env: env, clusters: map[string]*cluster{}}
	for i := range env.Spec.Clusters {
		c, err := s.buildCluster(&env.Spec.Clusters[i])
		if err != nil {
			return nil, fmt.Errorf("machineapi: cluster %q: %w", env.Spec.Clusters[i].Name, err)
		}
		s.clusters[c.name] = c
		s.order = append(s.order, c.name)
	}
	return s, nil
}

func (s *Sim) buildCluster(cs *spec.Cluster) (*cluster, error) {
	install := cs.InstallRelease
	if install == "" {
		install = oldestRelease(cs)
	}
	c := &cluster{
		name: cs.Name, spec: cs, install: install,
		objs:  map[string]map[string]*unstructured.Unstructured{},
		known: knownImages(cs),
		stats: map[string]*MachineSetStats{},
		mco:   mcoState{hot: map[string]hotLoop{}, Patches: map[string]int{}, Refused: map[string]string{}},
	}
	golden := cs.GoldenStampedRelease
	if golden == "" {
		golden = cs.Release
	}
	cpArch := cs.ControlPlaneArch
	if cpArch == "" {
		cpArch = "amd64"
	}
	add := func(gvrKeyed string, m map[string]any) error {
		u, err := normalize(m)
		if err != nil {
			return err
		}
		c.put(gvrKeyed, u)
		return nil
	}
	objs := []struct {
		key string
		m   map[string]any
	}{
		{gvKey(fm.GVRConfigMaps), goldenConfigMap(cs, golden)},
		{gvKey(fm.GVRSecrets), awsCredentials(cs)},
		{gvKey(fm.GVRSecrets), userData(cs)},
		{gvKey(fm.GVRClusterVersions), clusterVersion(cs, install)},
		{gvKey(fm.GVRInfrastructures), infrastructure(cs)},
		{gvKey(fm.GVRMachineConfigurations), machineConfiguration(cs, install)},
	}
	for i := range 3 {
		objs = append(objs, struct {
			key string
			m   map[string]any
		}{gvKey(fm.GVRNodes), node(cs, fmt.Sprintf("%s-master-%d", cs.Name, i), cpArch, true, "")})
	}
	for i := range cs.MachineSets {
		objs = append(objs, struct {
			key string
			m   map[string]any
		}{gvKey(fm.GVRMachineSets), machineSet(cs, &cs.MachineSets[i], install)})
		c.stats[cs.MachineSets[i].Name] = &MachineSetStats{}
	}
	for _, o := range objs {
		if err := add(o.key, o.m); err != nil {
			return nil, err
		}
	}
	// Existing replicas are running machines already.
	for i := range cs.MachineSets {
		ms := c.get(gvKey(fm.GVRMachineSets), fm.NamespaceMachineAPI, cs.MachineSets[i].Name)
		for range cs.MachineSets[i].Replicas {
			m := c.newMachine(ms)
			c.join(m, s.env.Faults)
		}
		c.updateMachineSetStatus(ms)
	}
	if cs.Upgrading && cs.UpgradeCompletesAfter.Duration > 0 {
		s.after(cs.UpgradeCompletesAfter.Duration, func() { s.completeUpgrade(c) })
	}
	if golden != cs.Release && cs.GoldenStampAfter.Duration > 0 {
		s.after(cs.GoldenStampAfter.Duration, func() { s.stampGolden(c) })
	}
	s.mcoSoon(c)
	return c, nil
}

func oldestRelease(cs *spec.Cluster) string {
	best := cs.Release
	bv, _ := spec.ParseRelease(best)
	for _, b := range cs.BootImages {
		v, err := spec.ParseRelease(b.Release)
		if err == nil && lessVersion(v, bv) {
			best, bv = b.Release, v
		}
	}
	return best
}

func lessVersion(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// after runs f after the scaled real-world duration d, unless the sim closed.
// Must be called with s.mu held or during construction.
func (s *Sim) after(d time.Duration, f func()) {
	t := time.AfterFunc(s.env.Scale(d), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return
		}
		f()
	})
	s.timers = append(s.timers, t)
}

// completeUpgrade marks the latest ClusterVersion history entry Completed
// (as the cluster version operator does). Called with s.mu held.
func (s *Sim) completeUpgrade(c *cluster) {
	cv := c.get(gvKey(fm.GVRClusterVersions), "", fm.ClusterVersionName)
	if cv == nil {
		return
	}
	cv = cv.DeepCopy()
	hist, _, _ := unstructured.NestedSlice(cv.Object, "status", "history")
	if len(hist) > 0 {
		if h, ok := hist[0].(map[string]any); ok {
			h["state"] = "Completed"
			h["completionTime"] = time.Now().UTC().Format(time.RFC3339)
		}
		_ = unstructured.SetNestedSlice(cv.Object, hist, "status", "history")
	}
	_ = unstructured.SetNestedSlice(cv.Object, []any{map[string]any{"type": "Progressing", "status": "False"}}, "status", "conditions")
	c.bump(cv)
	c.put(gvKey(fm.GVRClusterVersions), cv)
	c.event("clusterversion: upgrade to " + c.spec.Release + " completed")
}

// stampGolden re-stamps the golden ConfigMap for the current release (as the
// MCO does once it runs the new release). Called with s.mu held.
func (s *Sim) stampGolden(c *cluster) {
	u, err := normalize(goldenConfigMap(c.spec, c.spec.Release))
	if err != nil {
		return
	}
	c.bump(u)
	c.put(gvKey(fm.GVRConfigMaps), u)
	c.event("golden record stamped for " + c.spec.Release)
	s.mcoSoon(c)
}

// Name implements domain.Domain.
func (s *Sim) Name() string { return Name }

// Mount implements domain.Domain.
func (s *Sim) Mount(mux *http.ServeMux) {
	mux.Handle("/kube/", s.env.Faults.Middleware("kube", http.HandlerFunc(s.serveKube)))
	mux.HandleFunc("POST /ec2", s.serveEC2)
	mux.HandleFunc("POST /ec2/", s.serveEC2)
	mux.HandleFunc("GET /truth/"+Name, func(w http.ResponseWriter, _ *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, s.Truth())
	})
}

// Close implements domain.Domain.
func (s *Sim) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, t := range s.timers {
		t.Stop()
	}
	s.timers = nil
	return nil
}

// --- object store (callers hold s.mu) ---

func objKey(ns, name string) string { return ns + "/" + name }

func (c *cluster) get(res, ns, name string) *unstructured.Unstructured {
	return c.objs[res][objKey(ns, name)]
}

func (c *cluster) put(res string, u *unstructured.Unstructured) {
	m := c.objs[res]
	if m == nil {
		m = map[string]*unstructured.Unstructured{}
		c.objs[res] = m
	}
	if u.GetResourceVersion() == "" {
		c.bump(u)
	}
	m[objKey(u.GetNamespace(), u.GetName())] = u
}

func (c *cluster) del(res, ns, name string) { delete(c.objs[res], objKey(ns, name)) }

// bump gives u the cluster's next resourceVersion.
func (c *cluster) bump(u *unstructured.Unstructured) {
	c.rv++
	u.SetResourceVersion(strconv.FormatInt(c.rv, 10))
}

func (c *cluster) list(res string) []*unstructured.Unstructured {
	m := c.objs[res]
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*unstructured.Unstructured, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

func (c *cluster) event(msg string) {
	const keep = 200
	c.events = append(c.events, time.Now().UTC().Format(time.RFC3339Nano)+" "+msg)
	if len(c.events) > keep {
		c.events = c.events[len(c.events)-keep:]
	}
}

func faultTarget(cluster, ms string) string { return "machineset/" + cluster + "/" + ms }
