package devstack

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// noNamedServer makes the test choose the private cluster, whatever the
// environment of `make test` names.
func noNamedServer(t *testing.T) {
	for _, v := range append(libpqServerVars, "DATABASE_URL", "PGPASSWORD", "PGSSLMODE") {
		t.Setenv(v, "") // restored after the test
		os.Unsetenv(v)
	}
}

func testLog(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

// The stack's state directory sits below a 0700 directory (root's home, a
// mktemp workspace): the private cluster still starts, as root too, where
// the server runs as another user, and nothing of the user's directories is
// changed.
func TestPrivateClusterFromAPrivateDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	noNamedServer(t)
	home := t.TempDir()
	require.NoError(t, os.Chmod(home, 0o700))
	stateDir := filepath.Join(home, "clone", ".stack", "demo", "pg")
	pg, err := FindOrStartPostgres(context.Background(), stateDir, testLog(t))
	require.NoError(t, err)
	require.True(t, pg.Private)
	require.NoError(t, Ping(context.Background(), pg.URL))
	info, err := os.Stat(home)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "the user's directory was changed")

	// A second stack on the same state directory is refused while this one runs.
	_, err = FindOrStartPostgres(context.Background(), stateDir, testLog(t))
	require.ErrorContains(t, err, "belongs to a running stack")

	require.NoError(t, pg.Stop())
	_, err = os.Stat(pg.dir)
	require.True(t, os.IsNotExist(err), "make down must remove the private cluster")
}

// The standard libpq variables name a server; it is used, not a private one.
func TestLibpqVariablesNameTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	noNamedServer(t)
	private, err := FindOrStartPostgres(context.Background(), filepath.Join(t.TempDir(), "pg"), testLog(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = private.Stop() })
	u, err := url.Parse(private.URL)
	require.NoError(t, err)
	t.Setenv("PGHOST", u.Hostname())
	t.Setenv("PGPORT", u.Port())
	t.Setenv("PGUSER", "postgres")
	t.Setenv("PGSSLMODE", "disable")
	pg, err := FindOrStartPostgres(context.Background(), filepath.Join(t.TempDir(), "other"), testLog(t))
	require.NoError(t, err)
	require.False(t, pg.Private)
	require.Contains(t, pg.Source, "PGHOST")
	require.Contains(t, pg.URL, ":"+u.Port()+"/postgres")
}

// A test binary killed mid-run leaves its private cluster (and its server
// running); the next start removes both.
func TestLeftoverOfAKilledRunIsRemoved(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	noNamedServer(t)
	child := exec.Command(os.Args[0], "-test.run=^TestHelperHoldCluster$")
	child.Env = append(os.Environ(), "FLEETSAGA_HOLD_CLUSTER="+filepath.Join(t.TempDir(), "killed"))
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	dir := ""
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if d, ok := strings.CutPrefix(sc.Text(), "cluster "); ok {
			dir = d
			break
		}
	}
	require.NotEmpty(t, dir, "the child did not start its cluster")
	pid := postmasterPID(dir)
	require.NotZero(t, pid)
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	require.NoError(t, syscall.Kill(pid, 0), "the killed run's server should still run")

	pg, err := FindOrStartPostgres(context.Background(), filepath.Join(t.TempDir(), "next"), testLog(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = pg.Stop() })
	_, err = os.Stat(dir)
	require.True(t, os.IsNotExist(err), "leftover %s not removed", dir)
	require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 20*time.Second, 100*time.Millisecond,
		"the leftover server still runs")
}

// TestHelperHoldCluster is the child of TestLeftoverOfAKilledRunIsRemoved:
// it starts a cluster, says where, and waits to be killed.
func TestHelperHoldCluster(t *testing.T) {
	stateDir := os.Getenv("FLEETSAGA_HOLD_CLUSTER")
	if stateDir == "" {
		t.Skip("helper process")
	}
	pg, err := FindOrStartPostgres(context.Background(), stateDir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("cluster " + pg.dir)
	time.Sleep(10 * time.Minute)
}
