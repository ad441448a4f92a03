package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
)

// `fleetsim artifact` writes phase 2 in the real format, and a phase 1
// made with --phase2-image names that image's ID at MGS (its header's
// SHA-256), which is what the simulated host asks its SP for.
func TestArtifactWritesARealPhase2AndAPhase1NamingIt(t *testing.T) {
	dir := t.TempDir()
	p2, p1 := filepath.Join(dir, "p2.img"), filepath.Join(dir, "p1.img")
	run := func(args ...string) error {
		cmd := newArtifact()
		cmd.SetArgs(args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		return cmd.Execute()
	}
	require.NoError(t, run("--component", "host-phase2", "--version", "2.0.0", "--size", "131072", "--out", p2))
	img, err := os.ReadFile(p2)
	require.NoError(t, err)
	require.Len(t, img, 131072)
	h, err := fmgs.ParsePhase2Header(img)
	require.NoError(t, err)
	require.NoError(t, h.CheckPhase2Size(uint64(len(img))))
	assert.Equal(t, mgs.SHA256Hex(img[fmgs.Phase2HeaderSize:]), h.SHA256)

	require.NoError(t, run("--component", "host-boot-flash", "--version", "2.0.0", "--phase2-image", p2, "--out", p1))
	head, err := os.ReadFile(p1)
	require.NoError(t, err)
	line, _, _ := strings.Cut(string(head), "\n")
	assert.Contains(t, line, `"phase2":"`+h.SHA256+`"`)

	// A file that is not a phase 2 image is no --phase2-image.
	err = run("--component", "host-boot-flash", "--version", "2.0.0", "--phase2-image", p1, "--out", filepath.Join(dir, "x.img"))
	assert.ErrorContains(t, err, "not a host phase 2 image")
}
