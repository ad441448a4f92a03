package devstack

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/internal/logging"
)

// The cluster stack: the real Temporal server (the same version the dev
// server embeds, pinned in tools/go.mod) on PostgreSQL, as operators run it
// in production, with its Web UI server in front.

// TemporalServerVersion is the server the CLI's dev server embeds and the
// cluster stack runs; docker-compose.yml pins the same (e2e/compose_test.go).
const TemporalServerVersion = "v1.29.1"

// TemporalUIVersion is the Web UI server the CLI embeds and the cluster
// stack runs.
const TemporalUIVersion = "v2.42.1"

// Temporal stacks: the CLI's dev server (SQLite) or the real server on
// PostgreSQL.
const (
	TemporalDev     = "dev"
	TemporalCluster = "cluster"
)

// TemporalServer is a running Temporal, dev server or cluster.
type TemporalServer interface {
	FrontendHostPort() string
	Stop() error
}

var (
	serverTool = Tool{Env: "FLEETSAGA_TEMPORAL_SERVER_BIN", File: "temporal-server-" + TemporalServerVersion,
		Package: "go.temporal.io/server/cmd/server"}
	sqlTool = Tool{Env: "FLEETSAGA_TEMPORAL_SQL_TOOL_BIN", File: "temporal-sql-tool-" + TemporalServerVersion,
		Package: "go.temporal.io/server/cmd/tools/sql"}
	uiTool = Tool{Env: "FLEETSAGA_TEMPORAL_UI_BIN", File: "temporal-ui-server-" + TemporalUIVersion,
		Package: "github.com/temporalio/ui-server/v2/cmd/server"}
)

// ClusterOptions say where the cluster's state goes.
type ClusterOptions struct {
	Dir      string // config and logs
	AdminURL string // the PostgreSQL server (an admin connection)
	// DatabasePrefix names its two databases: <prefix>_temporal and
	// <prefix>_temporal_visibility, dropped and set up afresh at Start.
	DatabasePrefix string
	UIPort         int // 0 = no Web UI
	// Auth turns the server's authorization on (nil: off, anyone may act).
	Auth *TemporalAuth
}

// ClusterServer is the real Temporal server (all four services in one
// process) with history and visibility in PostgreSQL.
type ClusterServer struct {
	opts     ClusterOptions
	log      zerolog.Logger
	bin      string
	ui       string
	frontend int
	server   *Proc
	uiServer *Proc
}

// StartCluster sets up the databases and schema, writes the config, starts
// the server and registers the default namespace and fleetsaga's search
// attributes.
func StartCluster(ctx context.Context, o ClusterOptions, log zerolog.Logger) (_ *ClusterServer, err error) {
	c := &ClusterServer{opts: o, log: log}
	if o.Auth != nil {
		if err := o.Auth.validate(); err != nil {
			return nil, err
		}
		if o.UIPort != 0 {
			return nil, errors.New("the cluster's Web UI has no token to present: run it without authorization")
		}
	}
	if c.bin, err = toolBinary(log, o.Auth.serverTool()); err != nil {
		return nil, err
	}
	if o.UIPort != 0 {
		if c.ui, err = toolBinary(log, uiTool); err != nil {
			return nil, err
		}
	}
	db, err := SQLServerFromURL(o.AdminURL)
	if err != nil {
		return nil, err
	}
	cfg := ServerConfig{DB: db, Database: o.DatabasePrefix + "_temporal", Visibility: o.DatabasePrefix + "_temporal_visibility",
		LogFile: filepath.Join(o.Dir, "temporal.log"), Auth: o.Auth}
	if err := c.setUpSchema(ctx, db, cfg); err != nil {
		return nil, err
	}
	if err := cfg.choosePorts(); err != nil {
		return nil, err
	}
	c.frontend = cfg.Frontend
	if err := WriteServerConfig(o.Dir, cfg); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	if err := c.register(ctx); err != nil {
		return nil, err
	}
	if o.UIPort != 0 {
		if err := WriteUIConfig(o.Dir, cfg.Frontend, o.UIPort); err != nil {
			return nil, err
		}
		if c.uiServer, err = StartProc(filepath.Join(o.Dir, "temporal-ui.log"), nil, c.ui,
			"--root", o.Dir, "--config", "ui", "--env", serverConfigEnv, "start"); err != nil {
			return nil, err
		}
		if err := WaitHTTP(ctx, "http://127.0.0.1:"+strconv.Itoa(o.UIPort)+"/", time.Minute); err != nil {
			return nil, fmt.Errorf("the Temporal Web UI did not come up (see %s): %w", filepath.Join(o.Dir, "temporal-ui.log"), err)
		}
	}
	return c, nil
}

// setUpSchema creates the two databases afresh (history of an earlier run
// would name updates the fresh fleet and ledger never saw) and lets the
// schema tool set up and upgrade each to the server's version.
func (c *ClusterServer) setUpSchema(ctx context.Context, db SQLServer, cfg ServerConfig) error {
	tool, err := toolBinary(c.log, sqlTool)
	if err != nil {
		return err
	}
	for name, schema := range map[string]string{cfg.Database: "postgresql/v12/temporal", cfg.Visibility: "postgresql/v12/visibility"} {
		if err := DropDatabase(ctx, c.opts.AdminURL, name); err != nil {
			return fmt.Errorf("drop %s: %w", name, err)
		}
		if _, err := CreateDatabase(ctx, c.opts.AdminURL, name); err != nil {
			return err
		}
		conn := []string{"--plugin", "postgres12", "--endpoint", db.Host, "--port", db.Port, "--user", db.User,
			"--password", db.Password, "--database", name}
		if db.TLS {
			conn = append(conn, "--tls")
			if !db.VerifyCA {
				conn = append(conn, "--tls-disable-host-verification")
			}
		}
		for _, step := range [][]string{{"setup-schema", "-v", "0.0"}, {"update-schema", "--schema-name", schema}} {
			cmd := exec.CommandContext(ctx, tool, append(append([]string{}, conn...), step...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("temporal-sql-tool %s on %s: %v: %s", step[0], name, err, lastLines(out, 5))
			}
		}
	}
	return nil
}

// start runs the server process and waits until its frontend serves.
func (c *ClusterServer) start(ctx context.Context) error {
	var err error
	args := []string{"--root", c.opts.Dir, "--config", "config", "--env", serverConfigEnv, "--allow-no-auth", "start"}
	if c.opts.Auth != nil {
		// The internal frontend too: the server's system workers reach it
		// without a token (server config, publicClient).
		args = append(args, "--service", "frontend", "--service", "internal-frontend", "--service", "history",
			"--service", "matching", "--service", "worker")
	}
	c.server, err = StartProc(filepath.Join(c.opts.Dir, "temporal.out"), nil, c.bin, args...)
	if err != nil {
		return err
	}
	return c.waitServing(ctx)
}

// clusterStartTimeout bounds a start: the services join their ring
// (membership maxJoinDuration is 30 s) and open their shards.
const clusterStartTimeout = 2 * time.Minute

func (c *ClusterServer) waitServing(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	var last error
	for {
		if c.server.Exited() {
			return fmt.Errorf("the Temporal server exited at start (see %s and temporal.log)", filepath.Join(c.opts.Dir, "temporal.out"))
		}
		cl, err := c.dial("temporal-system")
		if err == nil {
			_, err = cl.WorkflowService().GetSystemInfo(ctx, &workflowservice.GetSystemInfoRequest{})
			cl.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Temporal server did not serve within %s (see %s): %w", clusterStartTimeout, c.opts.Dir, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (c *ClusterServer) dial(namespace string) (client.Client, error) {
	return client.Dial(client.Options{HostPort: c.FrontendHostPort(), Namespace: namespace,
		Logger: logging.Temporal(c.log.Level(zerolog.ErrorLevel)), Credentials: c.opts.Auth.credentials(),
		ConnectionOptions: client.ConnectionOptions{TLSDisabled: true}}) // plain gRPC on loopback, token or not
}

// register creates the default namespace and adds fleetsaga's search
// attributes to it (SQL visibility keeps them per namespace).
func (c *ClusterServer) register(ctx context.Context) error {
	cl, err := c.dial("default")
	if err != nil {
		return err
	}
	defer cl.Close()
	return RegisterNamespace(ctx, cl, "default")
}

// FrontendHostPort is the frontend's gRPC address.
func (c *ClusterServer) FrontendHostPort() string { return "127.0.0.1:" + strconv.Itoa(c.frontend) }

// Stop stops the Web UI and the server (SIGTERM, then SIGKILL after a grace).
func (c *ClusterServer) Stop() error {
	if c.uiServer != nil {
		_ = c.uiServer.Terminate(5 * time.Second)
	}
	if c.server != nil {
		_ = c.server.Terminate(30 * time.Second)
	}
	return nil
}

// Restart stops the server process and starts it again with the same
// config: history and visibility are in PostgreSQL, so nothing is lost.
func (c *ClusterServer) Restart(ctx context.Context) error {
	if err := c.server.Terminate(30 * time.Second); err != nil {
		c.log.Debug().Err(err).Msg("Temporal server exit status at restart")
	}
	return c.start(ctx)
}

var _ TemporalServer = (*ClusterServer)(nil)
