// Command worker runs a fleetsaga worker: it migrates the ledger (or, with
// --migrate=false, checks that its owner did), connects to Temporal and
// executes update workflows and their activities. Run several on
// different control-plane nodes; any may die at any moment.
package main

import (
	// Maintenance windows name IANA time zones: the binary carries the
	// zone database, so a container without one reads them the same.
	_ "time/tzdata"

	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/internal/config"
	"github.com/fleetsaga/fleetsaga/internal/logging"
	"github.com/fleetsaga/fleetsaga/internal/urlfile"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
)

// usageError marks bad configuration (exit code 2).
type usageError struct{ error }

func main() {
	if err := newCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	var (
		tc             config.Temporal
		dc             config.Deployment
		lc             config.Logging
		fc             config.Fleet
		ac             config.Approvals
		dbURL          string
		metricsAddr    string
		metricsFile    string
		identity       string
		maxActs        int
		stopTimeout    time.Duration
		webhookSpecs   []string
		webhookSecrets []string
		artifactRoot   string
		healthHosts    []string
		auditKeyFile   string
		auditFlags     auditSigningFlags
		migrate        bool
	)
	migrateDefault, migrateEnvErr := envBool("FLEETSAGA_MIGRATE", true)
	hostname, _ := os.Hostname()
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a fleetsaga worker",
		Example: `  worker --database-url postgres://fleetsaga@db/fleetsaga --fleetsim http://127.0.0.1:8470
  TEMPORAL_ADDRESS=temporal:7233 DATABASE_URL=postgres://... worker --mgs http://mgs0:12225,http://mgs1:12225`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if migrateEnvErr != nil {
				return usageError{migrateEnvErr}
			}
			if err := tc.Validate(); err != nil {
				return usageError{err}
			}
			if err := dc.Validate(); err != nil {
				return usageError{err}
			}
			if err := ac.Validate(); err != nil {
				return usageError{err}
			}
			keyring, err := approval.LoadKeyring(ac.Config())
			if err != nil {
				return usageError{err}
			}
			if err := workerapp.CheckApprovalMinimum(ac.Minimum()); err != nil {
				return usageError{err}
			}
			webhooks, err := workerapp.ParseWebhooks(webhookSpecs, webhookSecrets)
			if err != nil {
				return usageError{err}
			}
			if err := config.ValidateDatabaseURL(dbURL); err != nil {
				return usageError{err}
			}
			endpoints, err := fc.Endpoints()
			if err != nil {
				return usageError{err}
			}
			log, err := logging.New(os.Stderr, lc.Level, logging.Format(lc.Format))
			if err != nil {
				return usageError{err}
			}
			if err := checkHealthHosts(healthHosts); err != nil {
				return usageError{err}
			}
			if err := checkArtifactRoot(artifactRoot); err != nil {
				return usageError{err}
			}
			var auditKey ed25519.PrivateKey
			if auditKeyFile != "" {
				if auditKey, err = ledger.LoadHeadSigningKey(auditKeyFile); err != nil {
					return usageError{err}
				}
			}
			if maxActs < 0 {
				return usageError{errors.New("--max-concurrent-activities must be >= 0")}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()

			store, err := ledger.Open(ctx, dbURL)
			if err != nil {
				return err
			}
			defer store.Close()
			if migrate {
				applied, err := store.Migrate(ctx)
				if err != nil {
					return err
				}
				if len(applied) > 0 {
					log.Info().Ints("versions", applied).Msg("ledger migrated")
				}
			} else if err := ledger.CheckSchema(ctx, store.DB()); err != nil {
				return err
			}
			metrics, err := workerapp.NewMetrics()
			if err != nil {
				return err
			}
			if store, err = signAuditHeads(ctx, store, auditKey, auditFlags, log, metrics.AuditUnsigned); err != nil {
				return err
			}
			if metricsAddr != "" {
				addr, closeMetrics, err := metrics.Serve(metricsAddr)
				if err != nil {
					return err
				}
				defer closeMetrics() //nolint:errcheck
				log.Info().Str("addr", "http://"+addr+"/metrics").Msg("serving Prometheus metrics")
				if metricsFile != "" {
					if err := urlfile.Write(metricsFile, "http://"+addr+"/metrics"); err != nil {
						return err
					}
				}
			}

			opts, err := tc.ClientOptions(logging.Temporal(log))
			if err != nil {
				return usageError{err}
			}
			opts.Identity = identity
			opts.MetricsHandler = metrics.SDK
			dialCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			c, err := client.DialContext(dialCtx, opts)
			if err != nil {
				return fmt.Errorf("cannot reach Temporal at %s: %w", tc.Address, err)
			}
			defer c.Close()

			return workerapp.Run(ctx, c, workerapp.Options{
				TaskQueue:               tc.TaskQueue,
				Identity:                identity,
				StopTimeout:             stopTimeout,
				MaxConcurrentActivities: maxActs,
				Metrics:                 metrics,
				DeploymentName:          dc.Name,
				BuildID:                 dc.ResolvedBuildID(),
			}, workerapp.Deps{
				Ledger:           store,
				Fleet:            endpoints,
				HTTP:             &http.Client{Timeout: fleet.RequestTimeout},
				Log:              log,
				Identity:         identity,
				Keyring:          keyring,
				ApprovalMinimum:  ac.Minimum(),
				Webhooks:         webhooks,
				ArtifactRoot:     artifactRoot,
				HealthCheckHosts: healthHosts,
			})
		},
	}
	fs := cmd.Flags()
	tc.Bind(fs)
	dc.Bind(fs)
	lc.Bind(fs)
	fc.Bind(fs)
	ac.Bind(fs)
	fs.StringVar(&dbURL, "database-url", os.Getenv("DATABASE_URL"), "ledger PostgreSQL URL (env DATABASE_URL)")
	fs.BoolVar(&migrate, "migrate", migrateDefault, "apply the ledger's migrations at start, as its owner; false: the database role is the workers' (fleetsaga_worker), starter migrate ran as the owner, and a ledger older than this build is refused (env FLEETSAGA_MIGRATE)")
	fs.StringVar(&metricsAddr, "metrics-listen", envOr("FLEETSAGA_METRICS_LISTEN", "127.0.0.1:9464"), "Prometheus /metrics address; empty disables (env FLEETSAGA_METRICS_LISTEN)")
	fs.StringVar(&metricsFile, "metrics-url-file", "", "write the /metrics URL to this file once it listens (with --metrics-listen 127.0.0.1:0)")
	fs.StringArrayVar(&webhookSpecs, "webhook", nil, "a notification webhook plans may name: NAME=URL (repeatable)")
	fs.StringArrayVar(&webhookSecrets, "webhook-secret-file", nil, "NAME=FILE: the file holds that webhook's whsec_<base64> secret, signing its events as Standard Webhooks do (repeatable)")
	fs.StringVar(&artifactRoot, "artifact-root", os.Getenv("FLEETSAGA_ARTIFACT_ROOT"), "the only directory a plan's path: artifacts are read from; empty: none are (env FLEETSAGA_ARTIFACT_ROOT)")
	fs.StringSliceVar(&healthHosts, "health-check-host", envList("FLEETSAGA_HEALTH_CHECK_HOSTS"), "a host (name or name:port) a rollout's HTTP health checks may ask, redirects included; repeatable; none: no HTTP check runs (env FLEETSAGA_HEALTH_CHECK_HOSTS, comma-separated)")
	fs.StringVar(&auditKeyFile, "audit-signing-key", os.Getenv("FLEETSAGA_AUDIT_SIGNING_KEY"), "unencrypted OpenSSH ed25519 private key that signs each audit chain's newest row; the database never holds it (starter audit verify --audit-public-key checks its .pub) (env FLEETSAGA_AUDIT_SIGNING_KEY)")
	fs.BoolVar(&auditFlags.signUnheaded, "audit-sign-unheaded-chains", false, "at start, sign the newest row of every chain no head of this key names, though the ledger holds heads (after a key rotation, or after workers ran without the key): vouches for those chains as they are now")
	fs.BoolVar(&auditFlags.allowUnsigned, "audit-allow-unsigned", false, "start without --audit-signing-key though the ledger's chains are signed: the rows this worker appends fail audit verify --audit-public-key")
	fs.StringVar(&identity, "identity", fmt.Sprintf("%s:%d", hostname, os.Getpid()), "worker identity in Temporal and the ledger")
	fs.IntVar(&maxActs, "max-concurrent-activities", 0, "bound on concurrent activity executions (0 = SDK default)")
	fs.DurationVar(&stopTimeout, "stop-timeout", workerapp.DefaultStopTimeout, "on SIGTERM, how long running activities may finish before they are handed back")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	return cmd
}

// checkArtifactRoot refuses an --artifact-root that is not a directory.
func checkArtifactRoot(dir string) error {
	if dir == "" {
		return nil
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("--artifact-root %s: %w", dir, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("--artifact-root %s: not a directory", dir)
	}
	return nil
}

// checkHealthHosts refuses a --health-check-host that is not a host name
// or host:port.
func checkHealthHosts(hosts []string) error {
	for _, h := range hosts {
		u, err := url.Parse("http://" + h)
		if h == "" || err != nil || u.Host != h || u.User != nil {
			return fmt.Errorf("--health-check-host %q: want a host name or host:port", h)
		}
	}
	return nil
}

// envList is the comma-separated list in the environment variable name.
func envList(name string) []string {
	if v := os.Getenv(name); v != "" {
		return strings.Split(v, ",")
	}
	return nil
}

// envBool is the boolean in the environment variable name (def when unset).
func envBool(name string, def bool) (bool, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return def, fmt.Errorf("%s=%q: want true or false", name, v)
	}
	return b, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
