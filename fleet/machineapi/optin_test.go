package machineapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// patchMC merge-patches MachineConfiguration "cluster" (sub: "" or "/status").
func (h *harness) patchMC(sub, body string) {
	req, err := http.NewRequest(http.MethodPatch, h.srv.URL+"/kube/clusters/c1/apis/operator.openshift.io/v1/machineconfigurations/cluster"+sub,
		strings.NewReader(body))
	require.NoError(h.t, err)
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	resp.Body.Close()
	require.Equal(h.t, http.StatusOK, resp.StatusCode)
}

// The opt-in is read from the operator's resolved status first, then from
// the spec; no machinesets entry is None; a bad mode is malformed.
func TestBootImageOptInFromMachineConfiguration(t *testing.T) {
	c1 := spec.SampleCluster("c1", spec.PlatformAWS, false)
	c1.MCO = spec.On() // the operator resolves the opt-in in its status
	h := start(t, c1)
	c := h.client("c1")
	ctx := context.Background()

	o, err := c.BootImageOptIn(ctx)
	require.NoError(t, err)
	assert.Equal(t, machineapi.OptIn{Mode: "All", Source: "status.managedBootImagesStatus"}, o)
	assert.True(t, o.ManagedByMCO())

	// The spec says Partial (matchExpressions), the status is not resolved yet.
	h.patchMC("/status", `{"status":{"managedBootImagesStatus":null}}`)
	h.patchMC("", `{"spec":{"managedBootImages":{"machineManagers":[
		{"resource":"controlplanemachinesets","apiGroup":"machine.openshift.io","selection":{"mode":"All"}},
		{"resource":"machinesets","apiGroup":"machine.openshift.io","selection":{"mode":"Partial",
		 "partial":{"machineResourceSelector":{"matchExpressions":[{"key":"fleetsaga.io/pool","operator":"In","values":["a"]}]}}}}]}}}`)
	o, err = c.BootImageOptIn(ctx)
	require.NoError(t, err)
	assert.Equal(t, machineapi.OptIn{Mode: "Partial", Selector: "fleetsaga.io/pool in (a)", Source: "spec.managedBootImages"}, o)
	assert.False(t, o.ManagedByMCO(), "no controller resolved it")
	sets, _, err := c.ListMachineSets(ctx, o.Selector)
	require.NoError(t, err)
	require.Len(t, sets, 1)
	assert.Equal(t, "c1-worker-a", sets[0].Name)

	// Only another resource type opted in: MachineSets are not managed.
	h.patchMC("", `{"spec":{"managedBootImages":{"machineManagers":[
		{"resource":"controlplanemachinesets","apiGroup":"machine.openshift.io","selection":{"mode":"All"}}]}}}`)
	o, err = c.BootImageOptIn(ctx)
	require.NoError(t, err)
	assert.Equal(t, "None", o.Mode)

	h.patchMC("", `{"spec":{"managedBootImages":{"machineManagers":[
		{"resource":"machinesets","apiGroup":"machine.openshift.io","selection":{"mode":"Sometimes"}}]}}}`)
	_, err = c.BootImageOptIn(ctx)
	assert.True(t, machineapi.IsMalformed(err), "%v", err)
}
