package e2e

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// portRefusalBound is how long a stack may take to refuse a Web UI port
// another process holds: it checks before it starts anything (it used to
// retry for three minutes and fail on another port).
const portRefusalBound = 30 * time.Second

// `make demo` with the Web UI's port taken (a `make up` still
// running) fails at once, naming the port and the way out, and starts
// nothing.
func TestStackRefusesATakenWebUIPortAtOnce(t *testing.T) {
	bin := binaries(t)
	held, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer held.Close()
	port := held.Addr().(*net.TCPAddr).Port

	ctx, cancel := context.WithTimeout(context.Background(), portRefusalBound)
	defer cancel()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, bin+"/devstack", "run", "--dir", dir, "--ui-port", strconv.Itoa(port),
		"--database", "fleetsaga_e2e_port", "--", "true")
	out, err := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "the stack did not refuse the taken port within %s:\n%s", portRefusalBound, out)
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "devstack run with a taken UI port: %v\n%s", err, out)
	require.Contains(t, string(out), "port "+strconv.Itoa(port)+" for the Temporal Web UI is already in use")
	require.Contains(t, string(out), "make down")
	require.NoDirExists(t, dir+"/pg", "nothing is started before the port is checked")
}
