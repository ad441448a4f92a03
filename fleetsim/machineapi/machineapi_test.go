package machineapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

func start(t *testing.T, clusters ...spec.Cluster) string {
	t.Helper()
	for i := range clusters {
		// These tests patch MachineSets themselves: the MCO, on by
		// default, is off unless a test turns it on.
		if clusters[i].MCO == nil {
			clusters[i].MCO = spec.Off()
		}
	}
	s := &spec.Spec{Seed: 1, SpeedUp: 2400, Timings: spec.DefaultTimings(), Clusters: clusters}
	require.NoError(t, s.Validate())
	srv, err := fleetsim.Start(context.Background(), fleetsim.Env{Spec: s, Faults: faults.NewRegistry(1), Log: zerolog.Nop()}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv.URL
}

func do(t *testing.T, method, url, contentType, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// TestBadRequestsGetStatusJSON: every bad request is a 4xx metav1.Status.
func TestBadRequestsGetStatusJSON(t *testing.T) {
	base := start(t, spec.SampleCluster("c1", spec.PlatformAWS, false)) + "/kube/clusters/c1"
	ms := base + "/apis/machine.openshift.io/v1beta1/namespaces/openshift-machine-api/machinesets"
	const merge = "application/merge-patch+json"
	cases := []struct {
		name, method, url, ct, body string
		code                        int
		reason                      metav1.StatusReason
	}{
		{"unknown cluster", "GET", strings.Replace(ms, "/c1/", "/c9/", 1), "", "", 404, metav1.StatusReasonNotFound},
		{"no cluster prefix", "GET", strings.Replace(base, "/clusters/c1", "", 1) + "/api/v1/nodes", "", "", 404, metav1.StatusReasonNotFound},
		{"unknown group", "GET", base + "/apis/apps/v1/deployments", "", "", 404, metav1.StatusReasonNotFound},
		{"unknown object", "GET", ms + "/nope", "", "", 404, metav1.StatusReasonNotFound},
		{"namespaced by name without namespace", "GET", base + "/apis/machine.openshift.io/v1beta1/machinesets/c1-worker-a", "", "", 404, metav1.StatusReasonNotFound},
		{"cluster-scoped in a namespace", "GET", base + "/api/v1/namespaces/x/nodes", "", "", 404, metav1.StatusReasonNotFound},
		{"unknown subresource", "GET", ms + "/c1-worker-a/scale", "", "", 404, metav1.StatusReasonNotFound},
		{"bad label selector", "GET", ms + "?labelSelector=a%20in%20(", "", "", 400, metav1.StatusReasonBadRequest},
		{"field selector", "GET", ms + "?fieldSelector=metadata.name%3Dx", "", "", 400, metav1.StatusReasonBadRequest},
		{"watch", "GET", ms + "?watch=true", "", "", 405, metav1.StatusReasonMethodNotAllowed},
		{"delete", "DELETE", ms + "/c1-worker-a", "", "", 405, metav1.StatusReasonMethodNotAllowed},
		{"put", "PUT", ms + "/c1-worker-a", "application/json", "{}", 405, metav1.StatusReasonMethodNotAllowed},
		{"patch a collection", "PATCH", ms, merge, "{}", 405, metav1.StatusReasonMethodNotAllowed},
		{"patch read-only machines", "PATCH", base + "/apis/machine.openshift.io/v1beta1/namespaces/openshift-machine-api/machines/x", merge, "{}", 405, metav1.StatusReasonMethodNotAllowed},
		{"json patch media type", "PATCH", ms + "/c1-worker-a", "application/json-patch+json", "[]", 415, metav1.StatusReasonUnsupportedMediaType},
		{"strategic merge media type", "PATCH", ms + "/c1-worker-a", "application/strategic-merge-patch+json", "{}", 415, metav1.StatusReasonUnsupportedMediaType},
		{"no media type", "PATCH", ms + "/c1-worker-a", "", "{}", 415, metav1.StatusReasonUnsupportedMediaType},
		{"not JSON", "PATCH", ms + "/c1-worker-a", merge, "{nope", 400, metav1.StatusReasonBadRequest},
		{"JSON array", "PATCH", ms + "/c1-worker-a", merge, "[1]", 400, metav1.StatusReasonBadRequest},
		{"JSON null", "PATCH", ms + "/c1-worker-a", merge, "null", 400, metav1.StatusReasonBadRequest},
		{"numeric resourceVersion", "PATCH", ms + "/c1-worker-a", merge, `{"metadata":{"resourceVersion":5}}`, 400, metav1.StatusReasonBadRequest},
		{"rename", "PATCH", ms + "/c1-worker-a", merge, `{"metadata":{"name":"other"}}`, 422, metav1.StatusReasonInvalid},
		{"change kind", "PATCH", ms + "/c1-worker-a", merge, `{"kind":"Machine"}`, 422, metav1.StatusReasonInvalid},
		{"negative replicas", "PATCH", ms + "/c1-worker-a", merge, `{"spec":{"replicas":-1}}`, 422, metav1.StatusReasonInvalid},
		{"string replicas", "PATCH", ms + "/c1-worker-a", merge, `{"spec":{"replicas":"2"}}`, 422, metav1.StatusReasonInvalid},
		{"fractional replicas", "PATCH", ms + "/c1-worker-a", merge, `{"spec":{"replicas":1.5}}`, 422, metav1.StatusReasonInvalid},
		{"huge replicas", "PATCH", ms + "/c1-worker-a", merge, `{"spec":{"replicas":100000}}`, 422, metav1.StatusReasonInvalid},
		{"drop providerSpec", "PATCH", ms + "/c1-worker-a", merge, `{"spec":{"template":{"spec":{"providerSpec":null}}}}`, 422, metav1.StatusReasonInvalid},
		{"unknown provider kind", "PATCH", ms + "/c1-worker-a", merge, `{"spec":{"template":{"spec":{"providerSpec":{"value":{"kind":"X"}}}}}}`, 422, metav1.StatusReasonInvalid},
		{"stale resourceVersion", "PATCH", ms + "/c1-worker-a", merge, `{"metadata":{"resourceVersion":"1"}}`, 409, metav1.StatusReasonConflict},
		{"oversized body", "PATCH", ms + "/c1-worker-a", merge, `{"metadata":{"annotations":{"x":"` + strings.Repeat("a", 1<<20) + `"}}}`, 413, metav1.StatusReasonRequestEntityTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, tc.method, tc.url, tc.ct, tc.body)
			require.Equal(t, tc.code, code, "%s", body)
			var st metav1.Status
			require.NoError(t, json.Unmarshal(body, &st), "%s", body)
			assert.Equal(t, "Status", st.Kind)
			assert.Equal(t, metav1.StatusFailure, st.Status)
			assert.Equal(t, int32(tc.code), st.Code)
			assert.Equal(t, tc.reason, st.Reason, "%s", body)
			assert.NotEmpty(t, st.Message)
		})
	}
	// Nothing above changed the MachineSet.
	code, body := do(t, "GET", ms+"/c1-worker-a", "", "")
	require.Equal(t, 200, code)
	assert.NotContains(t, string(body), `"other"`)
}

func TestStatusSubresourceRules(t *testing.T) {
	base := start(t, spec.SampleCluster("c1", spec.PlatformAWS, false)) + "/kube/clusters/c1"
	cv := base + "/apis/config.openshift.io/v1/clusterversions/version"
	const merge = "application/merge-patch+json"
	// A main-resource patch cannot change status...
	code, body := do(t, "PATCH", cv, merge, `{"spec":{"channel":"fast-4.19"},"status":{"desired":{"version":"9.9.9"}}}`)
	require.Equal(t, 200, code, "%s", body)
	assert.Contains(t, string(body), `"fast-4.19"`)
	assert.NotContains(t, string(body), "9.9.9")
	// ...and a /status patch cannot change spec.
	code, body = do(t, "PATCH", cv+"/status", merge, `{"spec":{"channel":"candidate"},"status":{"history":[{"state":"Partial","version":"4.19.2"}]}}`)
	require.Equal(t, 200, code, "%s", body)
	assert.NotContains(t, string(body), "candidate")
	tr := truth(t, strings.TrimSuffix(base, "/kube/clusters/c1"))
	assert.Equal(t, "Partial", tr.Clusters["c1"].UpgradeState)
}

func TestDiscoveryAndVersion(t *testing.T) {
	base := start(t, spec.SampleCluster("c1", spec.PlatformAWS, false)) + "/kube/clusters/c1"
	for _, p := range []string{"/version", "/api", "/apis", "/api/v1", "/apis/machine.openshift.io/v1beta1"} {
		code, body := do(t, "GET", base+p, "", "")
		assert.Equal(t, 200, code, "%s: %s", p, body)
	}
	code, body := do(t, "GET", base+"/apis/machine.openshift.io/v1beta1", "", "")
	require.Equal(t, 200, code)
	var rl metav1.APIResourceList
	require.NoError(t, json.Unmarshal(body, &rl))
	var names []string
	for _, r := range rl.APIResources {
		names = append(names, r.Name)
	}
	assert.ElementsMatch(t, []string{"machinesets", "machinesets/status", "machines"}, names)
	code, _ = do(t, "GET", base+"/apis/nope.io/v1", "", "")
	assert.Equal(t, 404, code)
}

func truth(t *testing.T, base string) machineapi.Truth {
	t.Helper()
	code, body := do(t, "GET", base+"/truth/machineapi", "", "")
	require.Equal(t, 200, code)
	var tr machineapi.Truth
	require.NoError(t, json.Unmarshal(body, &tr))
	return tr
}

func TestTruthDescribesEachMachineSet(t *testing.T) {
	c := spec.SampleCluster("c1", spec.PlatformAWS, true)
	base := start(t, c)
	tr := truth(t, base)
	ct := tr.Clusters["c1"]
	assert.Equal(t, spec.SampleCurrentRelease, ct.Release)
	assert.Equal(t, "Completed", ct.UpgradeState)
	assert.Equal(t, spec.SampleCurrentRelease, ct.GoldenRelease)
	assert.Equal(t, machineapi.BootImageRecord{Mode: "Automatic", OCPVersion: spec.SampleInstallRelease, RHCOSVersion: "9.4.20240715-0"}, ct.BootImage)
	assert.Equal(t, "True", ct.Upgradeable.Status)
	require.Len(t, ct.MachineSets, len(c.MachineSets))
	a := ct.MachineSets["c1-worker-a"]
	assert.Equal(t, "aws", a.Platform)
	assert.Equal(t, "amd64", a.Arch)
	assert.Equal(t, spec.SampleBootImages()[0].Images["amd64"].AWS["us-east-1"], a.Image)
	assert.Equal(t, int64(1), a.Replicas)
	assert.Equal(t, 1, a.Joined)
	require.Len(t, a.Machines, 1)
	assert.True(t, a.Machines[0].Joined)
	assert.Equal(t, "arm64", ct.MachineSets["c1-arm64"].Arch)
	assert.Equal(t, spec.SampleBootImages()[0].Images["arm64"].AWS["us-east-1"], ct.MachineSets["c1-arm64"].Image)
}

func TestClusterSpecValidation(t *testing.T) {
	good := spec.SampleCluster("c1", spec.PlatformAWS, true)
	b, err := yaml.Marshal(map[string]any{"clusters": []spec.Cluster{good}})
	require.NoError(t, err)
	parsed, err := spec.Parse(b)
	require.NoError(t, err, "a sample cluster round-trips through YAML")
	require.Len(t, parsed.Clusters, 1)
	assert.Equal(t, good.MachineSets[len(good.MachineSets)-1].Arch, parsed.Clusters[0].MachineSets[len(good.MachineSets)-1].Arch)

	bad := []func(c *spec.Cluster){
		func(c *spec.Cluster) { c.Name = "" },
		func(c *spec.Cluster) { c.Platform = "openstack" },
		func(c *spec.Cluster) { c.Release = "4.19" },
		func(c *spec.Cluster) { c.Release = "4.20.0" }, // no boot images for it
		func(c *spec.Cluster) { c.ControlPlaneArch = "x86" },
		func(c *spec.Cluster) { c.InstallRelease = "4.1.0" },
		func(c *spec.Cluster) { c.MachineSets[0].Name = c.MachineSets[1].Name },
		func(c *spec.Cluster) { c.MachineSets[0].Arch = "i386" },
		func(c *spec.Cluster) { c.MachineSets[0].Replicas = -1 },
		func(c *spec.Cluster) { c.MachineSets[0].BootRelease = "1.2.3" },
		func(c *spec.Cluster) { c.BootImages[0].OSVersion = "nine" },
		func(c *spec.Cluster) { c.BootImages[1].Release = c.BootImages[0].Release },
	}
	for i, mutate := range bad {
		c := spec.SampleCluster("c1", spec.PlatformAWS, true)
		mutate(&c)
		s := &spec.Spec{SpeedUp: 1, Clusters: []spec.Cluster{c}}
		assert.Error(t, s.Validate(), "case %d", i)
	}
	dup := &spec.Spec{SpeedUp: 1, Clusters: []spec.Cluster{good, good}}
	assert.Error(t, dup.Validate())
	_, err = spec.Parse([]byte("clusters:\n- name: c1\n  platfrom: aws\n"))
	assert.Error(t, err, "unknown fields are errors")
}

func TestGenerateClusters(t *testing.T) {
	cs := spec.GenerateClusters(250, 7)
	require.Len(t, cs, 3)
	n := 0
	kinds := map[string]int{}
	for _, c := range cs {
		n += len(c.MachineSets)
		for _, m := range c.MachineSets {
			switch {
			case len(m.OwnerReferences) > 0:
				kinds["owned"]++
			case m.Windows:
				kinds["windows"]++
			case m.CustomImage != "":
				kinds["custom"]++
			case m.BootRelease == spec.SampleCurrentRelease:
				kinds["current"]++
			default:
				kinds["outdated"]++
			}
		}
	}
	assert.Equal(t, 250, n)
	assert.Greater(t, kinds["outdated"], 150)
	assert.Positive(t, kinds["owned"])
	assert.Positive(t, kinds["custom"])
	s := &spec.Spec{SpeedUp: 1, Timings: spec.DefaultTimings(), Clusters: cs}
	require.NoError(t, s.Validate())
	assert.Equal(t, cs, spec.GenerateClusters(250, 7), "deterministic for a seed")

	// fleetsim serves them all.
	base := start(t, cs...)
	tr := truth(t, base)
	total := 0
	for _, c := range tr.Clusters {
		total += len(c.MachineSets)
	}
	assert.Equal(t, 250, total)
}

// TestOddPatchesNeverPanic: odd but well-formed JSON never crashes the
// server and never yields a 5xx.
func TestOddPatchesNeverPanic(t *testing.T) {
	base := start(t, spec.SampleCluster("c1", spec.PlatformGCP, false)) + "/kube/clusters/c1"
	targets := []string{
		base + "/apis/machine.openshift.io/v1beta1/namespaces/openshift-machine-api/machinesets/c1-worker-a",
		base + "/apis/machine.openshift.io/v1beta1/namespaces/openshift-machine-api/machinesets/c1-worker-a/status",
		base + "/api/v1/namespaces/openshift-machine-config-operator/configmaps/coreos-bootimages",
		base + "/apis/operator.openshift.io/v1/machineconfigurations/cluster/status",
		base + "/apis/config.openshift.io/v1/clusterversions/version/status",
	}
	bodies := []string{`{}`, `{"metadata":"x"}`, `{"metadata":null}`, `{"kind":null}`, `{"apiVersion":"v2"}`,
		`{"spec":"x"}`, `{"spec":null}`, `{"spec":{"template":"x"}}`, `{"spec":{"template":{"spec":{"providerSpec":{"value":"x"}}}}}`,
		`{"status":"x"}`, `{"status":null}`, `{"data":{"stream":5}}`, `{"data":null}`, `{"metadata":{"labels":{"a":1}}}`,
		`{"metadata":{"resourceVersion":null}}`, `{"spec":{"replicas":null}}`, `{"spec":{"template":{"spec":{"providerSpec":{"value":{"disks":5}}}}}}`}
	for _, u := range targets {
		for _, b := range bodies {
			code, body := do(t, "PATCH", u, "application/merge-patch+json", b)
			assert.Less(t, code, 500, "%s %s: %s", u, b, body)
			if code >= 400 {
				var st metav1.Status
				assert.NoError(t, json.Unmarshal(body, &st), "%s", body)
				assert.Equal(t, "Status", st.Kind)
			}
		}
	}
	// The sim still answers, and the truth still renders.
	code, _ := do(t, "GET", targets[0], "", "")
	assert.Equal(t, 200, code)
	truth(t, strings.TrimSuffix(base, "/kube/clusters/c1"))
}
