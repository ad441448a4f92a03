package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/fleetsaga/fleetsaga/internal/config"
)

// docs/DEPLOYING.md's Kubernetes example is a valid apps/v1 Deployment
// (strict: no misspelt or misplaced field), sets only variables the worker
// reads, and names a deployment version the worker accepts.
func TestDeployingKubernetesExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "DEPLOYING.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)<!-- deploying-example: kubernetes -->\n```yaml\n(.*?)```").FindSubmatch(doc)
	require.NotNil(t, m, "no kubernetes example in docs/DEPLOYING.md")
	var d appsv1.Deployment
	require.NoError(t, yaml.UnmarshalStrict(m[1], &d))
	require.Equal(t, "apps/v1", d.APIVersion)
	require.Equal(t, "Deployment", d.Kind)
	require.Equal(t, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels, "the selector must match the pod labels")

	// The names the worker reads are the ones its flags' help names.
	read := map[string]bool{}
	for _, n := range regexp.MustCompile(`env ([A-Z][A-Z0-9_]+)`).FindAllStringSubmatch(newCommand().Flags().FlagUsages(), -1) {
		read[n[1]] = true
	}
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	c := d.Spec.Template.Spec.Containers[0]
	vals := map[string]string{}
	for _, e := range c.Env {
		require.True(t, read[e.Name], "the example sets %s, which the worker does not read", e.Name)
		vals[e.Name] = e.Value
	}
	dep := config.Deployment{Name: vals[config.EnvDeploymentName], BuildID: vals[config.EnvBuildID]}
	require.NoError(t, dep.Validate())
	require.True(t, dep.Versioned(), "the example runs a versioned worker")
	require.Equal(t, dep.BuildID, d.Labels["build"], "the Deployment is named and labelled after its build")
	require.Contains(t, d.Name, dep.BuildID)
}
