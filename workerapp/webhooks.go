package workerapp

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/fleetsaga/fleetsaga/kinds/rollout"
)

var webhookName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ParseWebhooks reads the worker's webhooks: each spec is NAME=URL (the
// name plans use in notify.webhooks), each secret NAME=FILE (the file
// holds the whsec_ secret that signs that webhook's events). No error names
// a URL or a secret: either may carry credentials.
func ParseWebhooks(specs, secretFiles []string) ([]rollout.Webhook, error) {
	var out []rollout.Webhook
	index := map[string]int{}
	for _, s := range specs {
		name, raw, ok := strings.Cut(s, "=")
		if !ok || !webhookName.MatchString(name) {
			return nil, fmt.Errorf("--webhook: want NAME=URL with NAME lower-case letters, digits, '-' or '_' (got a value without one)")
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--webhook %s: the URL must be an http(s) URL", name)
		}
		if _, dup := index[name]; dup {
			return nil, fmt.Errorf("--webhook %s: given twice", name)
		}
		index[name] = len(out)
		out = append(out, rollout.Webhook{Name: name, URL: raw})
	}
	for _, s := range secretFiles {
		name, path, ok := strings.Cut(s, "=")
		i, known := index[name]
		if !ok || !known {
			return nil, fmt.Errorf("--webhook-secret-file: want NAME=FILE for a NAME given with --webhook (got %q)", name)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--webhook-secret-file %s: %w", name, err)
		}
		key, err := rollout.ParseSecret(string(bytes.TrimSpace(b)))
		if err != nil {
			return nil, fmt.Errorf("--webhook-secret-file %s: %s: %w", name, path, err)
		}
		out[i].Secret = key
	}
	return out, nil
}
