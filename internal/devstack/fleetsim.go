package devstack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fleetsaga/fleetsaga/internal/urlfile"
)

// fleetsimStartTimeout bounds fleetsim's start: it loads its spec and binds
// in well under a second; a loaded machine running many stacks at once
// (make test) has taken tens of seconds.
const fleetsimStartTimeout = 60 * time.Second

// StartFleetsim starts the fleetsim binary in dir with args (spec, database,
// …), listening on a port it binds itself, and returns it with its URL once
// it answers. Its log is dir/fleetsim.log.
func StartFleetsim(ctx context.Context, dir string, env []string, bin string, args ...string) (*Proc, string, error) {
	logPath := filepath.Join(dir, "fleetsim.log")
	urlPath := filepath.Join(dir, "fleetsim.url")
	if err := os.Remove(urlPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, "", err
	}
	p, err := StartProc(logPath, env, bin, append(args, "--listen", "127.0.0.1:0", "--url-file", urlPath)...)
	if err != nil {
		return nil, "", err
	}
	exited := func() error {
		if p.Exited() {
			return fmt.Errorf("fleetsim exited as it started (see %s)", logPath)
		}
		return nil
	}
	url, err := urlfile.Wait(ctx, urlPath, fleetsimStartTimeout, exited)
	if err == nil {
		err = WaitHTTP(ctx, url+"/healthz", fleetsimStartTimeout)
	}
	if err != nil {
		_ = p.Kill()
		return nil, "", fmt.Errorf("fleetsim did not come up (see %s): %w", logPath, err)
	}
	return p, url, nil
}
