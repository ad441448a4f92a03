package devstack

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// The real Temporal server's configuration, written by devstack for the
// cluster stack: the four services in one process, persistence and SQL
// visibility (PostgreSQL 12+, which supports custom search attributes) in
// databases of their own, every port chosen free, logs to a file.

// ServerConfig is what the template needs.
type ServerConfig struct {
	DB         SQLServer
	Database   string // history, shards, task queues
	Visibility string // SQL visibility
	// Ports: frontend gRPC and HTTP, then gRPC and membership for each service.
	Frontend, FrontendHTTP, FrontendMembership int
	History, HistoryMembership                 int
	Matching, MatchingMembership               int
	Worker, WorkerMembership                   int
	// The internal frontend, with Auth only.
	InternalFrontend, InternalFrontendHTTP, InternalFrontendMembership int
	Metrics                                                            int
	LogFile                                                            string
	DynamicConfigFile                                                  string
	// Auth is the server's authorization (nil: none).
	Auth *TemporalAuth
}

// SQLServer is a PostgreSQL server as the Temporal server and its schema
// tool address it.
type SQLServer struct {
	Host     string
	Port     string
	User     string
	Password string
	TLS      bool // sslmode require or stricter
	VerifyCA bool // sslmode verify-ca / verify-full
}

// Addr is host:port.
func (s SQLServer) Addr() string { return net.JoinHostPort(s.Host, s.Port) }

// SQLServerFromURL reads a postgres:// URL (DATABASE_URL's form). The
// Temporal server speaks TCP only: a socket directory is refused.
func SQLServerFromURL(raw string) (SQLServer, error) {
	if err := ledger.CheckURL(raw); err != nil { // net/url's error would quote the password
		return SQLServer{}, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return SQLServer{}, fmt.Errorf("parse database URL: %w", err)
	}
	if u.Hostname() == "" || strings.HasPrefix(u.Query().Get("host"), "/") {
		return SQLServer{}, fmt.Errorf("the Temporal server reaches PostgreSQL over TCP only; %s names a socket: set PGHOST/DATABASE_URL to a host", redactedHost(u))
	}
	s := SQLServer{Host: u.Hostname(), Port: u.Port(), User: u.User.Username()}
	if s.Port == "" {
		s.Port = "5432"
	}
	if s.User == "" {
		s.User = os.Getenv("USER")
	}
	s.Password, _ = u.User.Password()
	switch u.Query().Get("sslmode") {
	case "require":
		s.TLS = true
	case "verify-ca", "verify-full":
		s.TLS, s.VerifyCA = true, true
	}
	return s, nil
}

func redactedHost(u *url.URL) string {
	if h := u.Query().Get("host"); h != "" {
		return h
	}
	return "the URL"
}

// dynamicConfig is what the Temporal CLI's dev server sets beyond the
// server's defaults and fleetsaga relies on: search attributes visible as
// soon as they are registered (devstack registers them right before the
// workers start), the persistence rate limits that go with it, eager
// activities, and room for a worker deployment per test (maxDeployments).
var dynamicConfig = `system.forceSearchAttributesCacheRefreshOnRead:
  - value: true
frontend.persistenceMaxQPS:
  - value: 10000
history.persistenceMaxQPS:
  - value: 45000
frontend.namespaceRPS.visibility:
  - value: 100
system.enableActivityEagerExecution:
  - value: true
matching.maxDeployments:
  - value: ` + strconv.Itoa(maxDeployments) + `
`

var serverConfigTemplate = template.Must(template.New("temporal").Parse(`# Written by devstack (internal/devstack/serverconfig.go); rewritten at every start.
log:
  stdout: false
  level: warn
  outputFile: {{.LogFile}}

persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
{{- range $name, $db := .Stores}}
    {{$name}}:
      sql:
        pluginName: postgres12
        databaseName: {{$db}}
        connectAddr: "{{$.DB.Addr}}"
        connectProtocol: tcp
        user: "{{$.DB.User}}"
        password: "{{$.DB.Password}}"
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: 1h
{{- if $.DB.TLS}}
        tls:
          enabled: true
          enableHostVerification: {{$.DB.VerifyCA}}
{{- end}}
{{- end}}

global:
{{- with .Auth}}
  authorization:
    jwtKeyProvider:
      keySourceURIs: ["{{.JWKSURL}}"]
      refreshInterval: 1m
    permissionsClaimName: permissions
    authorizer: {{.Authorizer}}
    claimMapper: default
{{- end}}
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
  metrics:
    prometheus:
      framework: tally
      timerType: histogram
      listenAddress: 127.0.0.1:{{.Metrics}}

services:
  frontend:
    rpc: {grpcPort: {{.Frontend}}, httpPort: {{.FrontendHTTP}}, membershipPort: {{.FrontendMembership}}, bindOnLocalHost: true}
  history:
    rpc: {grpcPort: {{.History}}, membershipPort: {{.HistoryMembership}}, bindOnLocalHost: true}
  matching:
    rpc: {grpcPort: {{.Matching}}, membershipPort: {{.MatchingMembership}}, bindOnLocalHost: true}
  worker:
    rpc: {grpcPort: {{.Worker}}, membershipPort: {{.WorkerMembership}}, bindOnLocalHost: true}
{{- if .Auth}}
  internal-frontend:
    rpc: {grpcPort: {{.InternalFrontend}}, httpPort: {{.InternalFrontendHTTP}}, membershipPort: {{.InternalFrontendMembership}}, bindOnLocalHost: true}
{{- end}}

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:{{.Frontend}}
      httpAddress: 127.0.0.1:{{.FrontendHTTP}}

dcRedirectionPolicy:
  policy: noop

dynamicConfigClient:
  filepath: {{.DynamicConfigFile}}
  pollInterval: 10s
`))

// Stores names the two datastores the template writes.
func (c ServerConfig) Stores() map[string]string {
	return map[string]string{"default": c.Database, "visibility": c.Visibility}
}

// WriteServerConfig writes dir/config/fleetsaga.yaml (the server's config
// for --env fleetsaga) and the dynamic config beside it.
func WriteServerConfig(dir string, c ServerConfig) error {
	confDir := filepath.Join(dir, "config")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return err
	}
	c.DynamicConfigFile = filepath.Join(confDir, "dynamicconfig.yaml")
	if err := os.WriteFile(c.DynamicConfigFile, []byte(dynamicConfig), 0o644); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := serverConfigTemplate.Execute(&b, c); err != nil {
		return err
	}
	// The password is in it: readable by us only.
	return os.WriteFile(filepath.Join(confDir, serverConfigEnv+".yaml"), b.Bytes(), 0o600)
}

// serverConfigEnv is the server's --env: it reads config/<env>.yaml.
const serverConfigEnv = "fleetsaga"

var uiConfigTemplate = template.Must(template.New("ui").Parse(`# Written by devstack (internal/devstack/serverconfig.go); rewritten at every start.
temporalGrpcAddress: 127.0.0.1:{{.Frontend}}
host: 127.0.0.1
port: {{.Port}}
enableUi: true
defaultNamespace: default
refreshInterval: 1m
notifyOnNewVersion: false
cors:
  cookieInsecure: true
  unsafeAllowAllOrigins: true
`))

// WriteUIConfig writes the Web UI server's config (dir/ui/fleetsaga.yaml):
// the UI in front of the server's frontend.
func WriteUIConfig(dir string, frontend, port int) error {
	confDir := filepath.Join(dir, "ui")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := uiConfigTemplate.Execute(&b, struct{ Frontend, Port int }{frontend, port}); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(confDir, serverConfigEnv+".yaml"), b.Bytes(), 0o644)
}

// choosePorts picks a free port for every listener.
func (c *ServerConfig) choosePorts() (err error) {
	for _, p := range []*int{&c.Frontend, &c.FrontendHTTP, &c.History, &c.Matching, &c.Worker, &c.Metrics,
		&c.InternalFrontend, &c.InternalFrontendHTTP} {
		if *p, err = FreePort(); err != nil {
			return err
		}
	}
	for _, p := range []*int{&c.FrontendMembership, &c.HistoryMembership, &c.MatchingMembership, &c.WorkerMembership,
		&c.InternalFrontendMembership} {
		if *p, err = freeMembershipPort(); err != nil {
			return err
		}
	}
	return nil
}

// freeMembershipPort returns a free loopback port below 32768: the
// server's SQL cluster_membership table keeps the membership port in a
// smallint, and the kernel's ephemeral ports (FreePort) are above it.
func freeMembershipPort() (int, error) {
	const lo, hi = 20000, 32767
	for range 200 {
		port := lo + rand.IntN(hi-lo+1)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port between %d and %d", lo, hi)
}
