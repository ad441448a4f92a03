package config_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fleetsaga/fleetsaga/internal/config"
	"github.com/fleetsaga/fleetsaga/internal/logging"
)

// headerFront is a gRPC stand-in for a hosted Temporal frontend: it answers
// every call Unavailable and records the authorization header it was sent.
type headerFront struct {
	mu   sync.Mutex
	auth []string
}

func startHeaderFront(t *testing.T) (*headerFront, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &headerFront{}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(stream.Context())
		f.mu.Lock()
		f.auth = append(f.auth, md.Get("authorization")...)
		f.mu.Unlock()
		return status.Error(codes.Unavailable, "stand-in")
	}))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return f, ln.Addr().String()
}

// An API key from TEMPORAL_API_KEY reaches the server as a bearer token
// (TLS disabled here: the stand-in speaks plain gRPC), and never through a
// flag.
func TestTemporalAPIKeyIsSentAsBearerToken(t *testing.T) {
	front, addr := startHeaderFront(t)
	t.Setenv("TEMPORAL_CONFIG_FILE", t.TempDir()+"/none.toml")
	t.Setenv("TEMPORAL_ADDRESS", addr)
	t.Setenv("TEMPORAL_API_KEY", "secret-key-1")
	t.Setenv("TEMPORAL_TLS", "false")

	var tc config.Temporal
	tc.Bind(pflag.NewFlagSet("t", pflag.ContinueOnError))
	require.NoError(t, tc.Validate())
	require.False(t, tc.TLS, "TEMPORAL_TLS=false keeps TLS off")
	opts, err := tc.ClientOptions(logging.Temporal(zerolog.Nop()))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = client.DialContext(ctx, opts)
	require.Error(t, err, "the stand-in answers Unavailable")

	front.mu.Lock()
	defer front.mu.Unlock()
	require.Contains(t, front.auth, "Bearer secret-key-1")
}

// An API key turns TLS on by default, as Temporal Cloud needs.
func TestTemporalAPIKeyTurnsTLSOn(t *testing.T) {
	t.Setenv("TEMPORAL_CONFIG_FILE", t.TempDir()+"/none.toml")
	t.Setenv("TEMPORAL_API_KEY", "secret-key-2")
	var tc config.Temporal
	tc.Bind(pflag.NewFlagSet("t", pflag.ContinueOnError))
	require.True(t, tc.TLS)
	opts, err := tc.ClientOptions(logging.Temporal(zerolog.Nop()))
	require.NoError(t, err)
	require.NotNil(t, opts.ConnectionOptions.TLS, "TLS with the system's CAs")
	require.NotNil(t, opts.Credentials)
}

// --temporal-api-key-file's token reaches the server as a bearer token and
// is read again for the next call: a token refreshed in the file (a JWT
// before it expires) is what the next call sends.
func TestTemporalAPIKeyFileIsReadForEveryCall(t *testing.T) {
	front, addr := startHeaderFront(t)
	t.Setenv("TEMPORAL_CONFIG_FILE", t.TempDir()+"/none.toml")
	t.Setenv("TEMPORAL_ADDRESS", addr)
	t.Setenv("TEMPORAL_TLS", "false")
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("jwt-one\n"), 0o600))

	var tc config.Temporal
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	tc.Bind(fs)
	require.NoError(t, fs.Parse([]string{"--temporal-api-key-file", file}))
	require.NoError(t, tc.Validate())
	opts, err := tc.ClientOptions(logging.Temporal(zerolog.Nop()))
	require.NoError(t, err)
	require.True(t, opts.ConnectionOptions.TLSDisabled, "TEMPORAL_TLS=false keeps TLS off")
	dial := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := client.DialContext(ctx, opts)
		require.Error(t, err, "the stand-in answers Unavailable")
	}
	dial()
	require.NoError(t, os.WriteFile(file, []byte("jwt-two"), 0o600))
	dial()
	front.mu.Lock()
	defer front.mu.Unlock()
	require.Contains(t, front.auth, "Bearer jwt-one")
	require.Contains(t, front.auth, "Bearer jwt-two")
}

// A key file turns TLS on as an API key does; an empty or unreadable one,
// or one beside TEMPORAL_API_KEY, is one clear line that quotes no key.
func TestTemporalAPIKeyFileIsChecked(t *testing.T) {
	t.Setenv("TEMPORAL_CONFIG_FILE", t.TempDir()+"/none.toml")
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(good, []byte("secret-jwt"), 0o600))
	parse := func(file string) (config.Temporal, error) {
		var tc config.Temporal
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		tc.Bind(fs)
		require.NoError(t, fs.Parse([]string{"--temporal-api-key-file", file}))
		return tc, tc.Validate()
	}
	tc, err := parse(good)
	require.NoError(t, err)
	opts, err := tc.ClientOptions(logging.Temporal(zerolog.Nop()))
	require.NoError(t, err)
	require.NotNil(t, opts.ConnectionOptions.TLS, "TLS with the system's CAs")

	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	_, err = parse(empty)
	require.ErrorContains(t, err, "want one API key or token")
	_, err = parse(filepath.Join(dir, "missing"))
	require.ErrorContains(t, err, "--temporal-api-key-file")

	t.Setenv("TEMPORAL_API_KEY", "secret-key-3")
	_, err = parse(good)
	require.ErrorContains(t, err, "give one")
	require.NotContains(t, err.Error(), "secret")
}
