package buildid

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Two builds of other code get other IDs, a copy of one build the same ID,
// and a binary that cannot be read the fixed dev ID.
func TestOfNamesTheCode(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o755))
		return p
	}
	a, copyOfA, b := write("a", "build one"), write("a-copy", "build one"), write("b", "build two")
	require.Equal(t, Of(a), Of(copyOfA))
	require.NotEqual(t, Of(a), Of(b))
	require.True(t, strings.HasPrefix(Of(a), "bin-"), Of(a))
	require.Equal(t, Dev, Of(filepath.Join(dir, "missing")))
}

// A test binary carries no VCS stamp: it is named by its digest, the same
// each time it is asked.
func TestSelfIsStable(t *testing.T) {
	require.True(t, strings.HasPrefix(Self(), "bin-"), Self())
	require.Equal(t, Self(), Self())
}
