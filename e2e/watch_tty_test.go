package e2e

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/workflows"
)

var percent = regexp.MustCompile(`(\d{1,3}) %`)

// An operator watches an SP firmware update on a terminal: the bar moves
// while the SP receives the image and ends full, and status reports the
// completed update's bytes, not 0/0.
func TestWatchedUpdateShowsMovingBarEndingFull(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	// Real device time: a 2 MiB image takes the SP about 8 s to receive.
	s, err := spec.Generate(spec.GenerateOptions{Sleds: 2, Servers: 1, Seed: 11, SpeedUp: 1})
	require.NoError(t, err)
	stack := startStack(t, s, 1, 0)
	sled := s.Racks[0].Sleds[1]
	img := filepath.Join(t.TempDir(), "sp-1.1.0.img")
	out, err := exec.Command(filepath.Join(binaries(t), "fleetsim"), "artifact", "--component", "sp", "--version", "1.1.0",
		"--size", strconv.Itoa(2<<20), "--out", img).CombinedOutput()
	require.NoError(t, err, string(out))

	cmd := exec.Command(filepath.Join(binaries(t), "starter"), "sp-firmware", "--sled", "1", "--serial", sled.Serial,
		"--artifact", img, "--version", "1.1.0", "--poll-interval", "250ms", "--wait")
	cmd.Env = append(os.Environ(), stack.Env()...)
	term, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 200})
	require.NoError(t, err)
	var screen bytes.Buffer
	copied := make(chan error, 1)
	go func() { _, err := io.Copy(&screen, term); copied <- err }()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(4 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("starter --wait did not end; screen:\n%s", screen.String())
	}
	if err := <-copied; err != nil && !errors.Is(err, syscall.EIO) {
		require.NoError(t, err)
	}
	term.Close()
	require.NoError(t, err, "starter --wait failed; screen:\n%s", screen.String())

	var seen []int
	for _, m := range percent.FindAllStringSubmatch(screen.String(), -1) {
		n, _ := strconv.Atoi(m[1])
		seen = append(seen, n)
	}
	require.NotEmpty(t, seen, "no bar on the terminal:\n%s", screen.String())
	moving := false
	for _, n := range seen {
		moving = moving || (n > 0 && n < 100)
	}
	require.True(t, moving, "the bar never showed partial progress: %v", seen)
	require.Equal(t, 100, seen[len(seen)-1], "the bar of a completed update must end full: %v", seen)

	op := operator{t, stack}
	var st struct {
		Progress workflows.Progress `json:"progress"`
	}
	op.json(&st, "status", "fleetsaga/sp-firmware/sp/sled/1")
	require.Equal(t, workflows.StateCompleted, st.Progress.State)
	require.Positive(t, st.Progress.Total, "a completed update reports the bytes it delivered")
	require.Equal(t, st.Progress.Total, st.Progress.Done)
}
