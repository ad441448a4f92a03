// Command fleetsim serves a simulated fleet (MGS + SPs, sled-agents, Nexus,
// CNAPI/SAPI/IMGAPI, a Kubernetes-style machine API) on loopback.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/logging"
	"github.com/fleetsaga/fleetsaga/internal/urlfile"
)

type usageError struct{ error }

func main() {
	root := newRoot()
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "fleetsim:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	var (
		specPath string
		listen   string
		urlFile  string
		dbURL    string
		speedUp  float64
		seed     int64
		logLevel string
		tokFile  string
	)
	root := &cobra.Command{
		Use:   "fleetsim --spec FILE",
		Short: "Serve a simulated fleet with the real APIs' shapes",
		Example: `  fleetsim --spec fleetsim/specs/demo.yaml --listen 127.0.0.1:8470 --database-url postgres://postgres@127.0.0.1/fleetsaga
  fleetsim gen --sleds 1000 --servers 1000 > big.yaml`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if specPath == "" {
				return usageError{errors.New("--spec is required")}
			}
			s, err := spec.Load(specPath)
			if err != nil {
				return usageError{err}
			}
			if cmd.Flags().Changed("speed-up") {
				if speedUp <= 0 {
					return usageError{errors.New("--speed-up must be > 0")}
				}
				s.SpeedUp = speedUp
			}
			if cmd.Flags().Changed("seed") {
				s.Seed = seed
			}
			log, err := logging.New(os.Stderr, logLevel, logging.FormatAuto)
			if err != nil {
				return usageError{err}
			}
			tok, err := nexusToken(tokFile)
			if err != nil {
				return usageError{err}
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			srv, err := fleetsim.Start(ctx, fleetsim.Env{Spec: s, Faults: faults.NewRegistry(s.Seed), DatabaseURL: dbURL, Log: log, NexusToken: tok}, listen)
			if err != nil {
				return err
			}
			if urlFile != "" {
				if err := urlfile.Write(urlFile, srv.URL); err != nil {
					srv.Close()
					return err
				}
			}
			log.Info().Str("url", srv.URL).Int64("seed", s.Seed).Float64("speed_up", s.SpeedUp).Msg("fleetsim serving")
			<-ctx.Done()
			return srv.Close()
		},
	}
	f := root.Flags()
	f.StringVar(&specPath, "spec", os.Getenv("FLEETSIM_SPEC"), "fleet spec YAML (env FLEETSIM_SPEC)")
	f.StringVar(&listen, "listen", "127.0.0.1:8470", "listen address (port 0: one the system picks; see --url-file)")
	f.StringVar(&urlFile, "url-file", "", "write the URL fleetsim serves on to this file once it listens")
	f.StringVar(&dbURL, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL for simulated Nexus sagas (env DATABASE_URL; empty disables Nexus simulation)")
	f.StringVar(&tokFile, "nexus-token-file", os.Getenv("FLEETSIM_NEXUS_TOKEN_FILE"), "the API token Nexus's external API accepts (a bearer token); a file that does not exist gets a new random one, for the workers' --nexus-external-token-file; empty: the external API refuses every request (env FLEETSIM_NEXUS_TOKEN_FILE)")
	f.Float64Var(&speedUp, "speed-up", 1, "override the spec's speed-up factor")
	f.Int64Var(&seed, "seed", 0, "override the spec's seed")
	f.StringVar(&logLevel, "log-level", "info", "log level")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newGen(), newArtifact(), newFaults())
	return root
}
