package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/internal/config"
	"github.com/fleetsaga/fleetsaga/internal/logging"
)

// app is the state shared by every subcommand.
type app struct {
	temporal config.Temporal
	logging  config.Logging
	json     bool
	out      io.Writer
	log      zerolog.Logger
	client   client.Client
	// liveDB is the ledger that watch reads live progress from ("" = none).
	liveDB string
}

func newRoot() *cobra.Command {
	a := &app{out: os.Stdout, liveDB: os.Getenv("DATABASE_URL")}
	root := &cobra.Command{
		Use:   "starter",
		Short: "Start, watch and steer fleetsaga updates",
		Long: `starter starts fleet updates as Temporal workflows and steers them.

Exit codes: 0 success, 1 failed, 2 usage/invalid input, 3 cancelled,
4 Temporal unreachable, 5 refused (target busy), 8 not authorised by
Temporal; with --dry-run 0 nothing would change, 6 changes planned, 7 some
target would be refused.`,
		Example: `  starter sp-firmware --sled 12 --serial BRM42000012 --artifact sp-1.0.5.img --version 1.0.5 --wait
  starter rollout plans/q3.yaml --dry-run
  starter rollout plans/q3.yaml --wait
  starter status fleetsaga/sp-firmware/sp/sled/12
  starter list --kind sp-firmware --running`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.temporal.Validate(); err != nil {
				return usageErr("%v", err)
			}
			log, err := logging.New(os.Stderr, a.logging.Level, logging.Format(a.logging.Format))
			if err != nil {
				return usageErr("%v", err)
			}
			a.log = log
			return nil
		},
		PersistentPostRun: func(*cobra.Command, []string) {
			if a.client != nil {
				a.client.Close()
			}
		},
	}
	pf := root.PersistentFlags()
	a.temporal.Bind(pf)
	a.logging.Level = "warn"
	pf.StringVar(&a.logging.Level, "log-level", envOr("FLEETSAGA_LOG_LEVEL", "warn"), "log level (env FLEETSAGA_LOG_LEVEL)")
	pf.StringVar(&a.logging.Format, "log-format", "auto", "log format: auto, json, console")
	pf.BoolVar(&a.json, "json", false, "print machine-readable JSON")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v", err) })

	for _, add := range commands {
		root.AddCommand(add(a))
	}
	return root
}

// commands are the subcommands; each file adds its own in init.
var commands []func(*app) *cobra.Command

// dial connects to Temporal once; failure is exit code 4, or 8 when the
// server answers but refuses our credentials.
func (a *app) dial(ctx context.Context) (client.Client, error) {
	if a.client != nil {
		return a.client, nil
	}
	opts, err := a.temporal.ClientOptions(logging.Temporal(a.log))
	if err != nil {
		return nil, usageErr("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		if temporalExit(err) == exitUnauthorised {
			return nil, a.temporalErr("connect", err)
		}
		return nil, &exitError{exitUnreachable, fmt.Errorf("cannot reach Temporal at %s: %v", a.temporal.Address, err)}
	}
	a.client = c
	return c, nil
}

// print writes v as JSON with --json, else the text from human().
func (a *app) print(v any, human func(io.Writer)) {
	if a.json {
		enc := json.NewEncoder(a.out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
		return
	}
	human(a.out)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
