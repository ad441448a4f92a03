package main

import (
	"os"
	"path/filepath"
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
	} {
		assert.Equal(t, exitUsage, run(args), "%v", args)
	}
	assert.Equal(t, exitOK, run([]string{"sp-firmware", "--help"}))
	assert.Equal(t, exitOK, run([]string{"host-flash", "--help"}))
	// Valid input gets as far as dialing Temporal.
	assert.Equal(t, exitUnreachable, run([]string{"sp-firmware", "--sled", "1", "--serial", "S", "--artifact", img, "--version", "1"}))
}
