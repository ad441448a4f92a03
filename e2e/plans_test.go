package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// spPlanUpdate is one entry of an SP firmware stage's updates (YAML): slot
// to the image at img (version 1.1.0), the SP named by serial.
func spPlanUpdate(t *testing.T, img string, slot int, serial string) string {
	t.Helper()
	b, err := os.ReadFile(img)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	return fmt.Sprintf("  - sp: {type: sled, slot: %d, serial: %s}\n    artifact: {version: 1.1.0, sha256: %s, path: %s}\n"+
		"    timing: {pollInterval: 250ms, attemptDelay: 1s, resetRetryInterval: 1s}\n", slot, serial, hex.EncodeToString(sum[:]), img)
}

// writePlan writes a plan named name with the given stages (YAML) and
// returns its path.
func writePlan(t *testing.T, name, stages string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte("name: "+name+"\nstages:\n"+stages), 0o644))
	return path
}
