package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKubeconfigFlagsReachTheMachineAPIAccess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\ncontexts:\n- name: c1\n  context: {cluster: c1}\nclusters:\n- name: c1\n  cluster: {server: https://c1.example:6443}\n"), 0o600))
	var f Fleet
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f.Bind(fs)
	require.NoError(t, fs.Parse([]string{"--kubeconfig", path, "--kube-in-cluster", "home"}))
	e, err := f.Endpoints()
	require.NoError(t, err)
	a := e.KubeAccess()
	assert.Equal(t, path, a.Kubeconfig)
	assert.Equal(t, "home", a.InCluster)

	f.Kubeconfig = filepath.Join(t.TempDir(), "missing")
	_, err = f.Endpoints()
	assert.ErrorContains(t, err, "--kubeconfig")
}
