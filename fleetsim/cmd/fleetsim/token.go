package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// nexusTokenBytes is the randomness of a token fleetsim makes (Nexus's
// API tokens carry 256 bits too).
const nexusTokenBytes = 32

// nexusToken is the API token fleetsim's Nexus external API accepts: the
// one in path, or, when path does not exist yet, a new random one written
// there (mode 0600) for the workers to read. "" without a path: the API
// refuses every request.
func nexusToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		b := make([]byte, nexusTokenBytes)
		if _, err := rand.Read(b); err != nil {
			return "", err
		}
		tok := "oxide-token-" + base64.RawURLEncoding.EncodeToString(b)
		if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("--nexus-token-file: %w", err)
		}
		return tok, nil
	}
	if err != nil {
		return "", fmt.Errorf("--nexus-token-file: %w", err)
	}
	tok := strings.TrimSpace(string(raw))
	if tok == "" {
		return "", fmt.Errorf("--nexus-token-file %s is empty", path)
	}
	return tok, nil
}
