package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A script under `set -o pipefail` that pipes into `head` fails when head
// exits before the writer is done: the writer dies of SIGPIPE and the
// pipeline's status is 141 (CI: `make demo` ended "Error 141" after a
// rollout that had done everything right). `sed -n '1,Np'` reads to the end.
func TestPipefailScriptsNeverPipeIntoHead(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join(repoRoot(t), "demo", "*.sh"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts under demo/: %v", err)
	}
	intoHead := regexp.MustCompile(`\|\s*head\b`)
	for _, path := range scripts {
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(body), "pipefail") {
			continue
		}
		for i, line := range strings.Split(string(body), "\n") {
			if intoHead.MatchString(line) {
				t.Errorf("%s:%d pipes into head under pipefail (SIGPIPE, exit 141): %s", filepath.Base(path), i+1, line)
			}
		}
	}
}
