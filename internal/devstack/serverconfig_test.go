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
