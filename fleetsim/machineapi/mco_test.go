package machineapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// With the MCO on, an opted-in MachineSet is patched to the golden image
// and patched back when someone changes it, until the hot-loop guard
// refuses a fourth patch to the same providerSpec; an opted-out MachineSet
// is left alone.
func TestMCOKeepsOptedInMachineSetsAtTheGoldenImage(t *testing.T) {
	c := spec.SampleCluster("c1", spec.PlatformAWS, false)
	c.ManagedBootImages = &spec.BootImageOptIn{Mode: "Partial", MatchLabels: map[string]string{"fleetsaga.io/pool": "a"}}
	s := &spec.Spec{Seed: 1, SpeedUp: 2400, Timings: spec.DefaultTimings(), Clusters: []spec.Cluster{c}}
	require.NoError(t, s.Validate())
	srv, err := fleetsim.Start(context.Background(), fleetsim.Env{Spec: s, Faults: faults.NewRegistry(1), Log: zerolog.Nop()}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })

	amiOf := func(release string) string {
		b, ok := c.ReleaseImages(release)
		require.True(t, ok)
		return b.Images["amd64"].AWS[spec.DefaultRegion(spec.PlatformAWS)]
	}
	golden, install, mid := amiOf(spec.SampleCurrentRelease), amiOf(spec.SampleInstallRelease), amiOf(spec.SampleMidRelease)
	truth := func() machineapi.ClusterTruth {
		var tr machineapi.Truth
		resp, err := http.Get(srv.URL + "/truth/machineapi")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&tr))
		return tr.Clusters["c1"]
	}
	ms := srv.URL + "/kube/clusters/c1/apis/machine.openshift.io/v1beta1/namespaces/openshift-machine-api/machinesets/"
	setAMI := func(name, ami string) {
		status, body := do(t, http.MethodPatch, ms+name, "application/merge-patch+json",
			`{"spec":{"template":{"spec":{"providerSpec":{"value":{"ami":{"id":"`+ami+`"}}}}}}}`)
		require.Equal(t, http.StatusOK, status, string(body))
	}
	const a, b = "c1-worker-a", "c1-worker-b"
	atGolden := func(n int) func() bool {
		return func() bool { ct := truth(); return ct.MachineSets[a].Image == golden && ct.MCO.Patches[a] == n }
	}

	require.Eventually(t, atGolden(1), 5*time.Second, 2*time.Millisecond, "the MCO patches the opted-in MachineSet")
	assert.Equal(t, install, truth().MachineSets[b].Image, "the opted-out MachineSet keeps its image")

	// Someone else rolls the opted-in MachineSet back, and changes the
	// opted-out one: the first is patched back, the second left alone.
	setAMI(a, install)
	setAMI(b, mid)
	require.Eventually(t, atGolden(2), 5*time.Second, 2*time.Millisecond, "the MCO undoes the other writer's change")
	time.Sleep(50 * time.Millisecond) // many reaction times at this speed-up
	ct := truth()
	assert.Equal(t, mid, ct.MachineSets[b].Image)
	assert.Zero(t, ct.MCO.Patches[b])

	// Two writers: the third patch to the same providerSpec is the last.
	setAMI(a, install)
	require.Eventually(t, atGolden(3), 5*time.Second, 2*time.Millisecond)
	setAMI(a, install)
	require.Eventually(t, func() bool { return truth().MCO.Refused[a] != "" }, 5*time.Second, 2*time.Millisecond)
	ct = truth()
	assert.Equal(t, install, ct.MachineSets[a].Image, "the hot-loop guard leaves the other writer's image")
	assert.Equal(t, 3, ct.MCO.Patches[a])
	assert.Contains(t, ct.MCO.Refused[a], "hot loop detected")
	status, body := do(t, http.MethodGet, srv.URL+"/kube/clusters/c1/apis/operator.openshift.io/v1/machineconfigurations/cluster", "", "")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(body), `"type":"BootImageUpdateDegraded"`)
}

// Turned off (mco: false) no MCO runs: an opted-in MachineSet keeps the
// image it was installed with.
func TestMCOTurnedOff(t *testing.T) {
	off := spec.SampleCluster("c1", spec.PlatformAWS, false)
	off.MCO = spec.Off()
	url := start(t, off)
	time.Sleep(20 * time.Millisecond)
	var tr machineapi.Truth
	resp, err := http.Get(url + "/truth/machineapi")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tr))
	assert.Nil(t, tr.Clusters["c1"].MCO)
	c := spec.SampleCluster("c1", spec.PlatformAWS, false)
	b, _ := c.ReleaseImages(spec.SampleInstallRelease)
	assert.Equal(t, b.Images["amd64"].AWS[spec.DefaultRegion(spec.PlatformAWS)], tr.Clusters["c1"].MachineSets["c1-worker-a"].Image)
}

// The MCO patches a GCP MachineSet too (its boot disk image); it used to
// crash fleetsim (the golden providerSpec carried Go ints that unstructured
// cannot copy), found by chaos with the owners on.
func TestMCOPatchesAGCPMachineSet(t *testing.T) {
	c := spec.SampleCluster("c1", spec.PlatformGCP, false)
	c.MCO = spec.On()
	url := start(t, c)
	require.Eventually(t, func() bool {
		var tr machineapi.Truth
		resp, err := http.Get(url + "/truth/machineapi")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if json.NewDecoder(resp.Body).Decode(&tr) != nil || tr.Clusters["c1"].MCO == nil {
			return false
		}
		return tr.Clusters["c1"].MCO.Patches["c1-worker-a"] == 1
	}, 5*time.Second, 5*time.Millisecond, "the MCO patched the GCP MachineSet")
}

// The MCO leaves alone a MachineSet labelled with another OS stream (its
// own label, not the template's) and one that boots a custom image, as
// machine-config-operator pkg/controller/bootimage/ms_helpers.go and
// aws_helpers.go do; it patches the rest.
func TestMCOSkipsOtherStreamsAndCustomImages(t *testing.T) {
	c := spec.SampleCluster("c1", spec.PlatformAWS, true)
	c.MCO = spec.On()
	c.ManagedBootImages = &spec.BootImageOptIn{Mode: "All"}
	c.MachineSets = append(c.MachineSets, spec.MachineSet{Name: "c1-rhel10", OSStream: "rhel-10"})
	url := start(t, c)
	truth := func() machineapi.ClusterTruth {
		var tr machineapi.Truth
		resp, err := http.Get(url + "/truth/machineapi")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&tr))
		return tr.Clusters["c1"]
	}
	require.Eventually(t, func() bool { return truth().MCO.Patches["c1-worker-a"] == 1 }, 5*time.Second, 2*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // many reaction times at this speed-up
	ct := truth()
	assert.Zero(t, ct.MCO.Patches["c1-rhel10"], "another OS stream is not the MCO's")
	assert.Zero(t, ct.MCO.Patches["c1-custom"], "a custom AMI is not the MCO's")
	custom := ""
	for _, m := range c.MachineSets {
		if m.Name == "c1-custom" {
			custom = m.CustomImage
		}
	}
	assert.Equal(t, custom, ct.MachineSets["c1-custom"].Image)
}
