package devstack

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestSQLServerFromURL(t *testing.T) {
	s, err := SQLServerFromURL("postgres://fs:s3cret@db.example:6543/ledger?sslmode=verify-full")
	require.NoError(t, err)
	require.Equal(t, SQLServer{Host: "db.example", Port: "6543", User: "fs", Password: "s3cret", TLS: true, VerifyCA: true}, s)

	s, err = SQLServerFromURL("postgres://postgres@127.0.0.1/postgres?sslmode=disable")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:5432", s.Addr(), "libpq's default port")
	require.False(t, s.TLS)

	_, err = SQLServerFromURL("postgres://postgres@/postgres?host=/run/postgresql")
	require.ErrorContains(t, err, "TCP only")
}

// The written config is YAML whose stores point at the two databases on
// the named server; the password stays readable by us only. (The real
// server loading it is e2e/cluster_test.go.)
func TestWriteServerConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := ServerConfig{
		DB:       SQLServer{Host: "127.0.0.1", Port: "5432", User: "postgres", Password: "pw", TLS: true},
		Database: "x_temporal", Visibility: "x_temporal_visibility",
		Frontend: 17233, FrontendHTTP: 17243, FrontendMembership: 26933, LogFile: filepath.Join(dir, "temporal.log"),
	}
	require.NoError(t, WriteServerConfig(dir, cfg))
	path := filepath.Join(dir, "config", serverConfigEnv+".yaml")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var got struct {
		Persistence struct {
			Datastores map[string]struct {
				SQL struct {
					PluginName, DatabaseName, ConnectAddr, Password string
					TLS                                             *struct{ Enabled bool }
				}
			}
		}
		Services map[string]struct {
			RPC struct{ GrpcPort, MembershipPort int }
		}
	}
	require.NoError(t, yaml.Unmarshal(b, &got), string(b))
	require.Equal(t, "x_temporal", got.Persistence.Datastores["default"].SQL.DatabaseName)
	require.Equal(t, "x_temporal_visibility", got.Persistence.Datastores["visibility"].SQL.DatabaseName)
	for _, store := range got.Persistence.Datastores {
		require.Equal(t, "postgres12", store.SQL.PluginName)
		require.Equal(t, "127.0.0.1:5432", store.SQL.ConnectAddr)
		require.True(t, store.SQL.TLS.Enabled)
	}
	require.Equal(t, 17233, got.Services["frontend"].RPC.GrpcPort)
	require.Equal(t, 26933, got.Services["frontend"].RPC.MembershipPort)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

func TestMembershipPortFitsTheServersSmallint(t *testing.T) {
	for range 20 {
		p, err := freeMembershipPort()
		require.NoError(t, err)
		require.Less(t, p, 32768)
	}
}

// With authorization the config turns on the server's JWT claim mapper
// and the named authorizer over the identity provider's JWKS, and adds
// the internal frontend the server's own system workers use without a
// token; without it, neither is there.
func TestWriteServerConfigWithAuthorization(t *testing.T) {
	type written struct {
		Global struct {
			Authorization struct {
				JWTKeyProvider                                struct{ KeySourceURIs []string }
				PermissionsClaimName, Authorizer, ClaimMapper string
			}
		}
		Services map[string]struct {
			RPC struct{ GrpcPort, MembershipPort int }
		}
	}
	read := func(cfg ServerConfig) written {
		dir := t.TempDir()
		require.NoError(t, WriteServerConfig(dir, cfg))
		b, err := os.ReadFile(filepath.Join(dir, "config", serverConfigEnv+".yaml"))
		require.NoError(t, err)
		var got written
		require.NoError(t, yaml.Unmarshal(b, &got), string(b))
		return got
	}
	cfg := ServerConfig{DB: SQLServer{Host: "127.0.0.1", Port: "5432"}, Database: "x", Visibility: "y"}
	require.NoError(t, cfg.choosePorts())
	plain := read(cfg)
	require.Empty(t, plain.Global.Authorization.Authorizer)
	require.NotContains(t, plain.Services, "internal-frontend")

	cfg.Auth = &TemporalAuth{JWKSURL: "http://127.0.0.1:9/jwks", Authorizer: AuthorizerFleetsaga, AdminToken: "t"}
	got := read(cfg)
	require.Equal(t, []string{"http://127.0.0.1:9/jwks"}, got.Global.Authorization.JWTKeyProvider.KeySourceURIs)
	require.Equal(t, "fleetsaga", got.Global.Authorization.Authorizer)
	require.Equal(t, "default", got.Global.Authorization.ClaimMapper)
	require.Equal(t, "permissions", got.Global.Authorization.PermissionsClaimName)
	require.Equal(t, cfg.InternalFrontend, got.Services["internal-frontend"].RPC.GrpcPort)
	require.Less(t, got.Services["internal-frontend"].RPC.MembershipPort, 32768)
}
