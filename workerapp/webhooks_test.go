package workerapp

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The worker's webhooks: NAME=URL with a secret file each; every bad
// value is one error that names neither the URL nor the secret.
func TestParseWebhooks(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "ops.secret")
	require.NoError(t, os.WriteFile(secret, []byte("whsec_aHVudGVyMg==\n"), 0o600)) // "hunter2"
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("hunter2\n"), 0o600))
	notBase64 := filepath.Join(dir, "not-base64")
	require.NoError(t, os.WriteFile(notBase64, []byte("whsec_hunter2!\n"), 0o600))

	got, err := ParseWebhooks([]string{"ops=https://user:pw@hooks.example/x", "pager=http://127.0.0.1:9/p"}, []string{"ops=" + secret})
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "ops", got[0].Name)
	require.Equal(t, []byte("hunter2"), got[0].Secret)
	require.Empty(t, got[1].Secret)

	for name, tc := range map[string]struct {
		specs, secrets []string
		want           string
	}{
		"no name":        {[]string{"https://user:pw@hooks.example/x"}, nil, "want NAME=URL"},
		"bad name":       {[]string{"Ops=https://user:pw@hooks.example/x"}, nil, "want NAME=URL"},
		"not http":       {[]string{"ops=ftp://user:pw@hooks.example/x"}, nil, "--webhook ops: the URL must be an http(s) URL"},
		"twice":          {[]string{"ops=http://a/", "ops=http://b/"}, nil, "--webhook ops: given twice"},
		"unknown secret": {[]string{"ops=http://a/"}, []string{"pager=" + secret}, "for a NAME given with --webhook"},
		"empty secret":   {[]string{"ops=http://a/"}, []string{"ops=" + empty}, "must be whsec_ followed by the key in base64"},
		"no whsec_":      {[]string{"ops=http://a/"}, []string{"ops=" + plain}, "must be whsec_ followed by the key in base64"},
		"not base64":     {[]string{"ops=http://a/"}, []string{"ops=" + notBase64}, "must be whsec_ followed by the key in base64"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseWebhooks(tc.specs, tc.secrets)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "pw@")
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
}
