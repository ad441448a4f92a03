package machineapi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// A kubeconfig written by the test: the context named after the cluster
// points at fleetsim's machine API for it; the current context points
// elsewhere, so only a per-cluster context choice reaches the cluster.
func TestKubeconfigContextPerClusterReachesIt(t *testing.T) {
	h := start(t, spec.SampleCluster("c1", spec.PlatformAWS, false))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
current-context: elsewhere
clusters:
- name: c1-api
  cluster:
    server: `+h.srv.URL+`/kube/clusters/c1
- name: nowhere
  cluster:
    server: http://127.0.0.1:1
contexts:
- name: c1
  context: {cluster: c1-api, user: admin}
- name: elsewhere
  context: {cluster: nowhere, user: admin}
users:
- name: admin
  user: {token: test-token}
`), 0o600))

	access := machineapi.Access{Kubeconfig: kubeconfig}
	require.NoError(t, access.Validate())
	c, err := access.Client("c1", nil)
	require.NoError(t, err)
	st, err := c.ClusterStatus(context.Background())
	require.NoError(t, err)
	assert.Equal(t, spec.SampleCurrentRelease, st.DesiredVersion)

	_, err = access.Client("c9", nil)
	require.Error(t, err, "a cluster without a context is an error, not the current context")
	assert.Contains(t, err.Error(), "c9")

	// The base URL stays one option.
	c, err = machineapi.Access{BaseURL: h.srv.URL + "/kube"}.Client("c1", nil)
	require.NoError(t, err)
	_, err = c.ClusterStatus(context.Background())
	require.NoError(t, err)

	assert.Error(t, machineapi.Access{}.Validate(), "no way in")
	assert.Error(t, machineapi.Access{Kubeconfig: filepath.Join(t.TempDir(), "missing")}.Validate())
}
