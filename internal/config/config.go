// Package config is fleetsaga's configuration: flags with environment
// fallbacks (the Temporal SDK's standard TEMPORAL_* names where they exist),
// validated at start so bad configuration is one clear line, not a stack
// trace.
package config

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	tlog "go.temporal.io/sdk/log"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/nexusexternal"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// Temporal says how to reach the Temporal server.
type Temporal struct {
	Address    string
	Namespace  string
	TaskQueue  string
	TLSCert    string
	TLSKey     string
	TLSCA      string
	ServerName string
	// APIKey (TEMPORAL_API_KEY or the profile's api_key; never a flag, so
	// it stays out of process listings) is sent as a bearer token, and
	// turns TLS on unless TLS is explicitly disabled.
	APIKey string
	// APIKeyFile holds the API key or a JWT the server's claim mapper
	// reads (DEPLOYING.md, "Who may act"), read again for every call, so
	// a token a sidecar refreshes before it expires keeps a long-running
	// worker in. Like an API key it turns TLS on unless TLS is disabled.
	APIKeyFile string
	// TLS: TLS with the system's CAs when no --tls-* file is given
	// (TEMPORAL_TLS=true, a profile's tls table, or an API key).
	TLS bool
	// tlsDisabled: TLS explicitly off (TEMPORAL_TLS=false, the profile).
	tlsDisabled bool
	// profileErr is a broken Temporal config profile, reported by Validate.
	profileErr error
}

// Bind registers the Temporal flags on fs. Their defaults come from the
// Temporal SDK's environment configuration: the profile TEMPORAL_PROFILE of
// the config file TEMPORAL_CONFIG_FILE (default
// ~/.config/temporalio/temporal.toml), overridden by the standard TEMPORAL_*
// variables — the same settings the temporal CLI uses.
func (t *Temporal) Bind(fs *pflag.FlagSet) {
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{})
	if err != nil {
		t.profileErr = fmt.Errorf("Temporal config profile: %w", err)
	}
	tlsCfg := prof.TLS
	if tlsCfg == nil {
		tlsCfg = &envconfig.ClientConfigTLS{}
	}
	fs.StringVar(&t.Address, "address", or(prof.Address, "127.0.0.1:7233"), "Temporal frontend host:port (env TEMPORAL_ADDRESS, or the config profile)")
	fs.StringVar(&t.Namespace, "namespace", or(prof.Namespace, "default"), "Temporal namespace (env TEMPORAL_NAMESPACE)")
	fs.StringVar(&t.TaskQueue, "task-queue", env("FLEETSAGA_TASK_QUEUE", workflows.TaskQueue), "task queue (env FLEETSAGA_TASK_QUEUE)")
	fs.StringVar(&t.TLSCert, "tls-cert", tlsCfg.ClientCertPath, "client certificate for mTLS (env TEMPORAL_TLS_CLIENT_CERT_PATH)")
	fs.StringVar(&t.TLSKey, "tls-key", tlsCfg.ClientKeyPath, "client key for mTLS (env TEMPORAL_TLS_CLIENT_KEY_PATH)")
	fs.StringVar(&t.TLSCA, "tls-ca", tlsCfg.ServerCACertPath, "CA that signed the server certificate (env TEMPORAL_TLS_SERVER_CA_CERT_PATH)")
	fs.StringVar(&t.ServerName, "tls-server-name", tlsCfg.ServerName, "expected server name in its certificate (env TEMPORAL_TLS_SERVER_NAME)")
	fs.StringVar(&t.APIKeyFile, "temporal-api-key-file", env("FLEETSAGA_TEMPORAL_API_KEY_FILE", ""), "file holding the API key or JWT sent to Temporal as a bearer token, re-read for every call (env FLEETSAGA_TEMPORAL_API_KEY_FILE)")
	t.APIKey = prof.APIKey
	t.tlsDisabled = tlsCfg.Disabled
	// As the SDK's envconfig decides: a tls table (or TEMPORAL_TLS=true)
	// turns TLS on, and so does an API key, unless TLS is disabled.
	t.TLS = (prof.TLS != nil || prof.APIKey != "") && !tlsCfg.Disabled
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// Validate checks the Temporal settings without contacting the server.
func (t *Temporal) Validate() error {
	if t.profileErr != nil {
		return t.profileErr
	}
	if err := ValidateHostPort(t.Address); err != nil {
		return fmt.Errorf("--address: %w", err)
	}
	if t.Namespace == "" {
		return errors.New("--namespace must not be empty")
	}
	if t.TaskQueue == "" {
		return errors.New("--task-queue must not be empty")
	}
	if t.APIKeyFile != "" {
		if t.APIKey != "" {
			return errors.New("an API key from TEMPORAL_API_KEY (or the profile) and --temporal-api-key-file: give one")
		}
		if _, err := readAPIKey(t.APIKeyFile); err != nil {
			return err
		}
	}
	if (t.TLSCert == "") != (t.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key must be given together")
	}
	for flag, path := range map[string]string{"--tls-cert": t.TLSCert, "--tls-key": t.TLSKey, "--tls-ca": t.TLSCA} {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("%s: %v", flag, err)
		}
	}
	return nil
}

// ValidateHostPort checks a host:port address.
func ValidateHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %v", addr, err)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q has a bad port %q", addr, port)
	}
	return nil
}

// ClientOptions builds the SDK client options, loading TLS material.
func (t *Temporal) ClientOptions(logger tlog.Logger) (client.Options, error) {
	opts := client.Options{HostPort: t.Address, Namespace: t.Namespace, Logger: logger}
	useTLS := t.TLS
	switch {
	case t.APIKey != "":
		opts.Credentials = client.NewAPIKeyStaticCredentials(t.APIKey)
	case t.APIKeyFile != "":
		path := t.APIKeyFile
		opts.Credentials = client.NewAPIKeyDynamicCredentials(func(context.Context) (string, error) { return readAPIKey(path) })
		useTLS = useTLS || !t.tlsDisabled
	}
	if t.TLSCert == "" && t.TLSCA == "" && !useTLS {
		// Said explicitly: the SDK otherwise turns TLS on for an API key.
		opts.ConnectionOptions.TLSDisabled = true
		return opts, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(t.TLSCert, t.TLSKey)
		if err != nil {
			return opts, fmt.Errorf("load client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if t.TLSCA != "" {
		pem, err := os.ReadFile(t.TLSCA)
		if err != nil {
			return opts, fmt.Errorf("read CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return opts, fmt.Errorf("CA file %s holds no PEM certificate", t.TLSCA)
		}
		tc.RootCAs = pool
	}
	opts.ConnectionOptions.TLS = tc
	return opts, nil
}

// readAPIKey reads an API key file. Its errors name the file, never what
// is in it.
func readAPIKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--temporal-api-key-file: %v", err)
	}
	key := strings.TrimSpace(string(b))
	if key == "" || strings.ContainsAny(key, " \t\r\n") {
		return "", fmt.Errorf("--temporal-api-key-file %s: want one API key or token, alone in the file", path)
	}
	return key, nil
}

// Logging is the log settings.
type Logging struct {
	Level  string
	Format string
}

// Bind registers the logging flags on fs.
func (l *Logging) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&l.Level, "log-level", env("FLEETSAGA_LOG_LEVEL", "info"), "log level: debug, info, warn, error (env FLEETSAGA_LOG_LEVEL)")
	fs.StringVar(&l.Format, "log-format", env("FLEETSAGA_LOG_FORMAT", "auto"), "log format: auto, json, console (env FLEETSAGA_LOG_FORMAT)")
}

// ValidateDatabaseURL checks a PostgreSQL URL without connecting. Its
// errors quote nothing of raw but a scheme: a password the operator did not
// URL-escape must not reach the terminal or a log (ledger.CheckURL).
func ValidateDatabaseURL(raw string) error {
	if raw == "" {
		return errors.New("--database-url is required (env DATABASE_URL)")
	}
	scheme, _, isURL := strings.Cut(raw, "://")
	if !isURL {
		return errors.New("the database URL must be a postgres:// URL, not a key=value string")
	}
	if scheme != "postgres" && scheme != "postgresql" {
		if !urlScheme.MatchString(scheme) {
			return errors.New("the database URL must be a postgres:// URL")
		}
		return fmt.Errorf("the database URL must be a postgres:// URL, got scheme %q", scheme)
	}
	return ledger.CheckURL(raw)
}

// urlScheme is what a URL's scheme may be (RFC 3986), so that quoting it
// quotes no password.
var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)

// Fleet says where the fleet's APIs are: a fleetsim base URL, or each API.
type Fleet struct {
	Fleetsim  string
	MGS       string
	SledAgent string
	NexusDB   string
	// NexusLockstep and DirectMode: see fleet.Endpoints.
	NexusLockstep string
	DirectMode    bool
	// NexusExternal and its token file: see fleet.Endpoints.
	NexusExternal          string
	NexusExternalTokenFile string
	NexusExternalCA        string
	CNAPI                  string
	SAPI                   string
	IMGAPI                 string
	Kube                   string
	// Kubeconfig and KubeInCluster: see fleet.Endpoints.
	Kubeconfig    string
	KubeInCluster string
	EC2           string
	Prometheus    string
}

// Bind registers the fleet endpoint flags on fs.
func (f *Fleet) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.Fleetsim, "fleetsim", env("FLEETSIM_URL", ""), "fleetsim base URL; derives every API below (env FLEETSIM_URL)")
	fs.StringVar(&f.MGS, "mgs", env("FLEETSAGA_MGS_URLS", ""), "comma-separated MGS base URLs (env FLEETSAGA_MGS_URLS)")
	fs.StringVar(&f.SledAgent, "sled-agent", env("FLEETSAGA_SLED_AGENT_URL", ""), "sled-agent URL template with {sled}; only for a fleetsim without a database: otherwise sled-agents are found at the ip:port in Nexus's sled table (env FLEETSAGA_SLED_AGENT_URL)")
	fs.StringVar(&f.NexusDB, "nexus-db-url", env("NEXUS_DATABASE_URL", ""), "Nexus's database (saga and sled tables; a rack's CockroachDB database omicron) (env NEXUS_DATABASE_URL)")
	fs.StringVar(&f.NexusLockstep, "nexus-lockstep", env("FLEETSAGA_NEXUS_LOCKSTEP_URL", ""), "Nexus's lockstep API (the target blueprint, owner of sled configs and SP updates); {rack} is replaced by the sled's rack_id from the sled table. Required on a rack with a Nexus (env FLEETSAGA_NEXUS_LOCKSTEP_URL)")
	fs.StringVar(&f.NexusExternal, "nexus-external", env("FLEETSAGA_NEXUS_EXTERNAL_URL", ""), "Nexus's external API (a rack's target release: its own update system then owns its SPs and hosts); {rack} as in --nexus-lockstep. Required on a rack with a Nexus (env FLEETSAGA_NEXUS_EXTERNAL_URL)")
	fs.StringVar(&f.NexusExternalTokenFile, "nexus-external-token-file", env("FLEETSAGA_NEXUS_EXTERNAL_TOKEN_FILE", ""), "file holding the API token for --nexus-external (a user of the rack's fleet that may read its update status); read at each call. A token is valid on one rack only: with {rack} in --nexus-external, put {rack} in this path, one file per rack (env FLEETSAGA_NEXUS_EXTERNAL_TOKEN_FILE)")
	fs.StringVar(&f.NexusExternalCA, "nexus-external-ca", env("FLEETSAGA_NEXUS_EXTERNAL_CA", ""), "PEM bundle of the CAs that sign --nexus-external's TLS certificates (the operator's certificate); default: the system's roots (env FLEETSAGA_NEXUS_EXTERNAL_CA)")
	fs.BoolVar(&f.DirectMode, "direct-mode", env("FLEETSAGA_DIRECT_MODE", "") == "true", "the racks have no Nexus: fleetsaga writes sled configs itself and asks no owner; excludes --nexus-lockstep (env FLEETSAGA_DIRECT_MODE=true)")
	fs.StringVar(&f.CNAPI, "cnapi", env("FLEETSAGA_CNAPI_URL", ""), "CNAPI base URL (env FLEETSAGA_CNAPI_URL)")
	fs.StringVar(&f.SAPI, "sapi", env("FLEETSAGA_SAPI_URL", ""), "SAPI base URL (env FLEETSAGA_SAPI_URL)")
	fs.StringVar(&f.IMGAPI, "imgapi", env("FLEETSAGA_IMGAPI_URL", ""), "IMGAPI base URL (env FLEETSAGA_IMGAPI_URL)")
	fs.StringVar(&f.Kube, "kube", env("FLEETSAGA_KUBE_URL", ""), "multi-cluster Kubernetes API root, {URL}/clusters/{name} (env FLEETSAGA_KUBE_URL)")
	fs.StringVar(&f.Kubeconfig, "kubeconfig", env("FLEETSAGA_KUBECONFIG", ""), "kubeconfig file; each cluster is the context of its name (env FLEETSAGA_KUBECONFIG)")
	fs.StringVar(&f.Prometheus, "prometheus-url", env("FLEETSAGA_PROMETHEUS_URL", ""), "Prometheus server a rollout's health checks query (env FLEETSAGA_PROMETHEUS_URL)")
	fs.StringVar(&f.EC2, "ec2-endpoint", env("FLEETSAGA_EC2_ENDPOINT", ""), "EC2 API endpoint for every region, instead of AWS's public ones (env FLEETSAGA_EC2_ENDPOINT)")
	fs.StringVar(&f.KubeInCluster, "kube-in-cluster", env("FLEETSAGA_KUBE_IN_CLUSTER", ""), "name of the cluster the worker runs in: reached with the in-cluster config (env FLEETSAGA_KUBE_IN_CLUSTER)")
}

// Endpoints resolves and validates the endpoints; explicit flags override
// what --fleetsim derives.
func (f *Fleet) Endpoints() (fleet.Endpoints, error) {
	var e fleet.Endpoints
	if f.Fleetsim != "" {
		e = fleet.FromFleetsim(f.Fleetsim, f.NexusDB)
	}
	if f.MGS != "" {
		e.MGS = strings.Split(f.MGS, ",")
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&e.SledAgent, f.SledAgent)
	if f.Fleetsim == "" { // with --fleetsim, FromFleetsim pointed it at fleetsim's schema
		set(&e.NexusDB, f.NexusDB)
	}
	set(&e.NexusLockstep, f.NexusLockstep)
	set(&e.NexusExternal, f.NexusExternal)
	set(&e.NexusExternalTokenFile, f.NexusExternalTokenFile)
	set(&e.NexusExternalCA, f.NexusExternalCA)
	if f.DirectMode {
		e.DirectMode = true
		if f.NexusLockstep == "" {
			e.NexusLockstep = "" // derived from --fleetsim: the flag says there is no Nexus
		}
		if f.NexusExternal == "" {
			e.NexusExternal = ""
		}
	}
	set(&e.CNAPI, f.CNAPI)
	set(&e.SAPI, f.SAPI)
	set(&e.IMGAPI, f.IMGAPI)
	set(&e.Kube, f.Kube)
	set(&e.Kubeconfig, f.Kubeconfig)
	set(&e.KubeInCluster, f.KubeInCluster)
	set(&e.EC2, f.EC2)
	set(&e.Prometheus, f.Prometheus)
	if err := e.Validate(); err != nil {
		return e, err
	}
	if e.NexusExternalCA != "" {
		if _, err := nexusexternal.LoadCA(e.NexusExternalCA); err != nil {
			return e, fmt.Errorf("--nexus-external-ca: %w", err)
		}
	}
	if e.Kubeconfig != "" {
		if err := e.KubeAccess().Validate(); err != nil {
			return e, fmt.Errorf("--kubeconfig: %w", err)
		}
	}
	if e.NexusDB != "" {
		if err := ValidateDatabaseURL(e.NexusDB); err != nil {
			return e, fmt.Errorf("--nexus-db-url: %w", err)
		}
	}
	return e, nil
}
