package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Invalid recovery requests exit 2 before contacting anything (no Temporal
// address is reachable here: a contact would exit 4); a valid one gets as
// far as dialing Temporal.
func TestHostRecoveryRejectsBadInputWithExit2(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	img := filepath.Join(t.TempDir(), "img.bin")
	require.NoError(t, os.WriteFile(img, []byte("image"), 0o644))
	ok := []string{"host-recovery", "--sled", "1", "--serial", "S", "--phase1", img, "--phase1-version", "1", "--phase2", img, "--phase2-version", "1"}
	for _, args := range [][]string{
		{"host-recovery", "--sled", "1", "--serial", "S", "--phase1", img, "--phase1-version", "1"},                                             // no phase 2
		{"host-recovery", "--switch", "1", "--serial", "S", "--phase1", img, "--phase1-version", "1", "--phase2", img, "--phase2-version", "1"}, // hosts are on sleds
		{"host-recovery", "--sled", "1", "--phase1", img, "--phase1-version", "1", "--phase2", img, "--phase2-version", "1"},                    // no serial
		{"host-recovery", "--sled", "1", "--serial", "S", "--phase1", img, "--phase1-version", "1", "--phase2", img, "--phase2-version", "2"},   // not a pair
		{"host-recovery", "--sled", "1", "--serial", "S", "--phase1", "/does/not/exist", "--phase1-version", "1", "--phase2", img, "--phase2-version", "1"},
		append(append([]string(nil), ok...), "extra"),
	} {
		assert.Equal(t, exitUsage, run(args), "%v", args)
	}
	assert.Equal(t, exitOK, run([]string{"host-recovery", "--help"}))
	assert.Equal(t, exitUnreachable, run(ok))
}
