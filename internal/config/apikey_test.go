package config_test

import (
	"context"
	"net"
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
