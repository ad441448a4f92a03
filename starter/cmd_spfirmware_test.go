package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Invalid MGS update requests exit 2 before contacting anything (no
// Temporal address is reachable here: a contact would exit 4).
func TestMGSCommandsRejectBadInputWithExit2(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	img := filepath.Join(t.TempDir(), "img.bin")
	require.NoError(t, os.WriteFile(img, []byte("image"), 0o644))
	for _, args := range [][]string{
		{"sp-firmware", "--serial", "S", "--artifact", img, "--version", "1"},                                   // no SP
		{"sp-firmware", "--sled", "1", "--switch", "2", "--serial", "S", "--artifact", img, "--version", "1"},   // two SPs
		{"sp-firmware", "--sled", "1", "--artifact", img, "--version", "1"},                                     // no serial
		{"sp-firmware", "--sled", "70000", "--serial", "S", "--artifact", img, "--version", "1"},                // slot range
		{"sp-firmware", "--sled", "1", "--serial", "S", "--artifact", "/does/not/exist", "--version", "1"},      // unreadable
		{"sp-firmware", "--sled", "1", "--serial", "S", "--artifact", img},                                      // no version
		{"sp-firmware", "--sled", "1", "--serial", "S", "--artifact", "https://depot/x.bin", "--version", "1"},  // URL without digest
		{"sp-firmware", "--sled", "1", "--serial", "S", "--artifact", img, "--version", "1", "--sha256", "abc"}, // bad digest
		{"sp-firmware", "--sled", "1", "--serial", "S", "--artifact", img, "--version", "1", "--max-attempts", "-1"},
		{"host-flash", "--sled", "1", "--serial", "S", "--phase1", img, "--phase1-version", "1"}, // no phase 2
		{"host-flash", "--switch", "1", "--serial", "S"},                                         // hosts are on sleds
		{"host-flash", "--sled", "1", "--serial", "S", "--phase1", img, "--phase1-version", "1", "--phase2", img, "--phase2-version", "1", "--sled-id", "nope"},
	} {
		assert.Equal(t, exitUsage, run(args), "%v", args)
	}
	assert.Equal(t, exitOK, run([]string{"sp-firmware", "--help"}))
	assert.Equal(t, exitOK, run([]string{"host-flash", "--help"}))
	// Valid input gets as far as dialing Temporal.
	assert.Equal(t, exitUnreachable, run([]string{"sp-firmware", "--sled", "1", "--serial", "S", "--artifact", img, "--version", "1"}))
}

// A --sha256 that is not the local artifact's digest is refused before
// anything is contacted; the right digest gets as far as dialing Temporal.
func TestSPFirmwareRefusesADigestThatIsNotTheArtifacts(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	img := filepath.Join(t.TempDir(), "img.bin")
	require.NoError(t, os.WriteFile(img, []byte("image"), 0o644))
	sum := sha256.Sum256([]byte("image"))
	args := []string{"sp-firmware", "--sled", "1", "--serial", "S", "--artifact", img, "--version", "1", "--sha256"}
	assert.Equal(t, exitUsage, run(append(args, strings.Repeat("a", 64))), "wrong digest")
	assert.Equal(t, exitUsage, run([]string{"host-flash", "--sled", "1", "--serial", "S", "--phase1", img, "--phase1-version", "1",
		"--phase1-sha256", strings.Repeat("b", 64), "--phase2", img, "--phase2-version", "1"}), "wrong phase 1 digest")
	assert.Equal(t, exitUnreachable, run(append(args, hex.EncodeToString(sum[:]))), "the right digest")
	assert.Equal(t, exitUnreachable, run(append(args, strings.ToUpper(hex.EncodeToString(sum[:])))), "digests are case-insensitive")
}
