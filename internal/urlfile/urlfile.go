// Package urlfile hands a listener's address from the process that bound it
// to the one that started it. A parent that picks a free port and passes it
// on loses it to any process that binds it first (make bench lost a whole
// row that way); a child that binds port 0 itself and writes the address it
// got cannot.
package urlfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Write records url at path atomically: a reader sees all of it or nothing.
func Write(path, url string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".url-*")
	if err != nil {
		return fmt.Errorf("url file: %w", err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	if _, err := tmp.WriteString(url + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("url file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("url file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("url file: %w", err)
	}
	return nil
}

// pollInterval is how often Wait looks for the file: a process comes up in
// tens of milliseconds to seconds.
const pollInterval = 50 * time.Millisecond

// Wait returns the URL written at path, once it is there. exited reports a
// process that ended before writing it (nil: do not ask), so a crash is not
// waited out.
func Wait(ctx context.Context, path string, timeout time.Duration, exited func() error) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			if url := strings.TrimSpace(string(b)); url != "" {
				return url, nil
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("url file: %w", err)
		}
		if exited != nil {
			if err := exited(); err != nil {
				return "", err
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no address in %s after %s", path, timeout)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}
