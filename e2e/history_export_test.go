package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// exportHistory is what anyone who may read a workflow's history takes
// away: `temporal workflow show --output json`, and every string in it
// that is base64 decoded (a payload's data), as an attacker would read it.
func exportHistory(t *testing.T, stack *devstack.Stack, id string) string {
	t.Helper()
	bin, err := devstack.TemporalBinary(zerolog.Nop())
	require.NoError(t, err)
	cmd := exec.Command(bin, "workflow", "show", "--workflow-id", id, "--output", "json", "--address", stack.Temporal.FrontendHostPort())
	cmd.Env = os.Environ()
	out, err := cmd.Output()
	require.NoError(t, err, "temporal workflow show")
	var doc any
	require.NoError(t, json.Unmarshal(out, &doc))
	texts := []string{string(out)}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			if b, err := base64.StdEncoding.DecodeString(v); err == nil {
				texts = append(texts, string(b))
			}
		}
	}
	walk(doc)
	return strings.Join(texts, "\n")
}

// requireNoToken: no part of any of tokens (a JWT's header, claims or
// signature) is anywhere in the export.
func requireNoToken(t *testing.T, export string, tokens []string) {
	t.Helper()
	require.NotEmpty(t, tokens, "the issuer issued no token: nothing was tested")
	for i, tok := range tokens {
		for j, part := range strings.Split(tok, ".") {
			// Not require.NotContains: its message would print the token.
			if strings.Contains(export, part) {
				t.Fatalf("part %d of the issuer's token %d is in the history export: anyone who reads it holds the bearer token", j, i)
			}
		}
	}
}

// sealedTokens are the distinct sealed ID tokens the export carries.
func sealedTokens(export string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`"sealedIdToken":\s*"([^"]+)"`).FindAllStringSubmatch(export, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}
