package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/fleetsaga/fleetsaga/internal/config"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// compose is the part of docker-compose.yml the deployment facts live in.
type compose struct {
	Services map[string]struct {
		Image       string            `json:"image"`
		Environment map[string]string `json:"environment"`
		Command     []string          `json:"command"`
		Entrypoint  []string          `json:"entrypoint"`
		Ports       []string          `json:"ports"`
	} `json:"services"`
}

func loadCompose(t *testing.T) compose {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docker-compose.yml"))
	require.NoError(t, err)
	var c compose
	require.NoError(t, yaml.Unmarshal(b, &c))
	return c
}

// toolVersion is the version of module in tools/go.mod: what the pinned
// Temporal CLI (the dev server every test runs) embeds.
func toolVersion(t *testing.T, module string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "tools", "go.mod"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(module) + ` v(\S+)`).FindSubmatch(b)
	require.NotNil(t, m, "tools/go.mod does not require %s", module)
	return string(m[1])
}

// envRead lists the environment variables a binary reads, from its --help.
func envRead(t *testing.T, bin string, args ...string) map[string]bool {
	t.Helper()
	out, _ := exec.Command(filepath.Join(binaries(t), bin), append(args, "--help")...).CombinedOutput()
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`env ([A-Z][A-Z0-9_]+)`).FindAllStringSubmatch(string(out), -1) {
		names[m[1]] = true
	}
	require.NotEmpty(t, names, "%s --help names no environment variables:\n%s", bin, out)
	return names
}

// docker-compose.yml cannot be run here (no Docker engine), so it is held
// to the code: search attributes, the variables the binaries read, the
// addresses between services, and the server and UI versions the tests run.
func TestComposeMatchesTheCode(t *testing.T) {
	c := loadCompose(t)

	t.Run("search attributes", func(t *testing.T) {
		var want, got []string
		for _, sa := range workflows.SearchAttributes() {
			want = append(want, sa.GetName()+"=Keyword")
		}
		got = strings.Fields(c.Services["temporal-setup"].Environment["SEARCH_ATTRIBUTES"])
		sort.Strings(want)
		sort.Strings(got)
		require.Equal(t, want, got, "temporal-setup's SEARCH_ATTRIBUTES must register exactly workflows.SearchAttributes()")
	})

	t.Run("versions", func(t *testing.T) {
		server, ui := toolVersion(t, "go.temporal.io/server"), toolVersion(t, "github.com/temporalio/ui-server/v2")
		require.Equal(t, "temporalio/auto-setup:"+server, c.Services["temporal"].Image)
		require.Equal(t, "temporalio/admin-tools:"+server, c.Services["temporal-setup"].Image)
		require.Equal(t, "temporalio/ui:"+ui, c.Services["temporal-ui"].Image)
		// One module graph builds the CLI (dev server) and the cluster
		// stack's server and UI, so they are these versions too; devstack
		// and the Makefile name them.
		require.Equal(t, "v"+server, devstack.TemporalServerVersion)
		require.Equal(t, "v"+ui, devstack.TemporalUIVersion)
		mk, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
		require.NoError(t, err)
		require.Contains(t, string(mk), "temporal-server-v"+server)
		require.Contains(t, string(mk), "temporal-sql-tool-v"+server)
		require.Contains(t, string(mk), "temporal-ui-server-v"+ui)
	})

	t.Run("environment", func(t *testing.T) {
		for svc, bin := range map[string][]string{"worker": {"worker"}, "starter": {"starter", "list"}} {
			read := envRead(t, bin[0], bin[1:]...)
			for name := range c.Services[svc].Environment {
				require.True(t, read[name], "compose sets %s on %s, which %s does not read", name, svc, bin[0])
			}
		}
	})

	t.Run("versioned workers", func(t *testing.T) {
		w := c.Services["worker"].Environment
		requireVersioned(t, "docker-compose.yml's worker", w)
		// The one-shot service makes exactly that version current, or the
		// workers would get no tasks.
		set := c.Services["worker-version"]
		require.Equal(t, "temporalio/admin-tools:"+toolVersion(t, "go.temporal.io/server"), set.Image)
		require.Equal(t, w[config.EnvDeploymentName], set.Environment[config.EnvDeploymentName])
		require.Equal(t, w[config.EnvBuildID], set.Environment[config.EnvBuildID])
		require.Contains(t, strings.Join(set.Entrypoint, " "), "temporal worker deployment set-current-version")
	})

	t.Run("addresses", func(t *testing.T) {
		listens := map[string]string{"postgres": "5432", "temporal": "7233", "temporal-ui": "8080"}
		for i, arg := range c.Services["fleetsim"].Command {
			if arg == "--listen" {
				_, port, _ := strings.Cut(c.Services["fleetsim"].Command[i+1], ":")
				listens["fleetsim"] = port
			}
		}
		ref := regexp.MustCompile(`(?:^|//|@)([a-z][a-z0-9-]*):(\d+)`)
		for svc, s := range c.Services {
			values := append([]string{}, s.Command...)
			for _, v := range s.Environment {
				values = append(values, v)
			}
			for _, v := range values {
				for _, m := range ref.FindAllStringSubmatch(v, -1) {
					port, ok := listens[m[1]]
					require.True(t, ok, "%s refers to %s:%s, which no service provides", svc, m[1], m[2])
					require.Equal(t, port, m[2], "%s refers to %s on port %s; it listens on %s", svc, m[1], m[2], port)
				}
			}
		}
	})
}
