// Command temporal-server is the Temporal server (go.temporal.io/server,
// the version tools/go.mod pins) with one authorizer more than the stock
// build: global.authorization.authorizer "fleetsaga" is the stock default
// authorizer plus the approve role (package temporalauthz), which lets an
// approver approve a rollout and do nothing else. Any other configuration
// runs exactly as the stock server's `start`: the same flags, config
// files and services.
package main

import (
	"fmt"
	stdlog "log"
	"os"
	"path"
	"strings"

	"github.com/urfave/cli/v2"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/temporal"

	"github.com/fleetsaga/fleetsaga/tools/temporalauthz"
)

// authorizerFleetsaga is the config value that selects fleetsaga's authorizer.
const authorizerFleetsaga = "fleetsaga"

func main() {
	app := &cli.App{
		Name:  "temporal-server",
		Usage: "the Temporal server with fleetsaga's approve role (authorizer: fleetsaga)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "root", Aliases: []string{"r"}, Value: ".", Usage: "root directory of execution environment"},
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Value: "config", Usage: "config dir path relative to root"},
			&cli.StringFlag{Name: "env", Aliases: []string{"e"}, Value: "development", Usage: "runtime environment"},
			&cli.StringFlag{Name: "zone", Aliases: []string{"az"}, Usage: "availability zone"},
			&cli.BoolFlag{Name: "allow-no-auth", Usage: "allow no authorizer"},
		},
		Commands: []*cli.Command{{
			Name:  "start",
			Usage: "Start Temporal server",
			Flags: []cli.Flag{&cli.StringSliceFlag{Name: "service", Aliases: []string{"svc"},
				Value: cli.NewStringSlice(temporal.DefaultServices...), Usage: "service(s) to start"}},
			Action: start,
		}},
	}
	if err := app.Run(os.Args); err != nil {
		stdlog.Fatal(err)
	}
}

func start(c *cli.Context) error {
	cfg, err := config.LoadConfig(c.String("env"), path.Join(c.String("root"), c.String("config")), c.String("zone"))
	if err != nil {
		return cli.Exit(fmt.Sprintf("Unable to load configuration: %v.", err), 1)
	}
	logger := log.NewZapLogger(log.BuildZapLogger(cfg.Log))
	dc := dynamicconfig.Client(dynamicconfig.NewNoopClient())
	if cfg.DynamicConfigClient != nil {
		if dc, err = dynamicconfig.NewFileBasedClient(cfg.DynamicConfigClient, logger, temporal.InterruptCh()); err != nil {
			return cli.Exit(fmt.Sprintf("Unable to create dynamic config client. Error: %v", err), 1)
		}
	}
	authz := &cfg.Global.Authorization
	authorizer, claimMapper, err := authorizers(authz, logger)
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	if authorization.IsNoopAuthorizer(authorizer) && !c.Bool("allow-no-auth") {
		logger.Warn("Not using any authorizer and flag `--allow-no-auth` not detected.")
	}
	audience, err := authorization.GetAudienceMapperFromConfig(authz)
	if err != nil {
		return cli.Exit(fmt.Sprintf("Unable to instantiate audience mapper: %v.", err), 1)
	}
	s, err := temporal.NewServer(
		temporal.ForServices(c.StringSlice("service")),
		temporal.WithConfig(cfg),
		temporal.WithDynamicConfigClient(dc),
		temporal.WithLogger(logger),
		temporal.InterruptOn(temporal.InterruptCh()),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithAudienceGetter(func(*config.Config) authorization.JWTAudienceMapper { return audience }),
	)
	if err != nil {
		return cli.Exit(fmt.Sprintf("Unable to create server. Error: %v.", err), 1)
	}
	if err := s.Start(); err != nil {
		return cli.Exit(fmt.Sprintf("Unable to start server. Error: %v", err), 1)
	}
	return cli.Exit("All services are stopped.", 0)
}

// authorizers: the stock authorizer and claim mapper the config names, or
// for authorizer "fleetsaga" the stock default ones with the approve role.
func authorizers(authz *config.Authorization, logger log.Logger) (authorization.Authorizer, authorization.ClaimMapper, error) {
	if !strings.EqualFold(authz.Authorizer, authorizerFleetsaga) {
		a, err := authorization.GetAuthorizerFromConfig(authz)
		if err != nil {
			return nil, nil, fmt.Errorf("Unable to instantiate authorizer. Error: %v", err)
		}
		m, err := authorization.GetClaimMapperFromConfig(authz, logger)
		if err != nil {
			return nil, nil, fmt.Errorf("Unable to instantiate claim mapper: %v.", err)
		}
		return a, m, nil
	}
	if !strings.EqualFold(authz.ClaimMapper, "default") {
		return nil, nil, fmt.Errorf("authorizer %q reads the approve role from JWTs: it needs claimMapper \"default\", not %q", authorizerFleetsaga, authz.ClaimMapper)
	}
	if authz.PermissionsRegex != "" {
		return nil, nil, fmt.Errorf("authorizer %q reads permissions as NAMESPACE:ROLE: permissionsRegex is not supported with it", authorizerFleetsaga)
	}
	stock, err := authorization.GetClaimMapperFromConfig(authz, logger)
	if err != nil {
		return nil, nil, fmt.Errorf("Unable to instantiate claim mapper: %v.", err)
	}
	return temporalauthz.NewAuthorizer(), temporalauthz.NewClaimMapper(stock, authz.PermissionsClaimName), nil
}
