package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func init() {
	commands = append(commands, agentInstallCmd, agentDriftCmd)
}

// serverFlags select servers the same way for both agent commands.
type serverFlags struct {
	all     bool
	servers []string
	traits  []string
	exclude []string
}

func (s *serverFlags) bind(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&s.all, "all", false, "every server of the datacenter")
	f.StringSliceVar(&s.servers, "servers", nil, "servers by UUID or hostname (comma-separated or repeated); an unknown one fails the request")
	f.StringSliceVar(&s.traits, "trait", nil, "servers whose CNAPI trait KEY equals VALUE (KEY=VALUE, repeatable: all must match)")
	f.StringSliceVar(&s.exclude, "exclude-server", nil, "servers never to touch, by UUID or hostname")
}

func (s *serverFlags) selection() (agents.ServerSelection, error) {
	sel := agents.ServerSelection{All: s.all, Servers: s.servers}
	for _, kv := range s.traits {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return sel, fmt.Errorf("--trait %q: want KEY=VALUE", kv)
		}
		if sel.Traits == nil {
			sel.Traits = map[string]string{}
		}
		sel.Traits[k] = v
	}
	if err := sel.Validate(); err != nil {
		return sel, fmt.Errorf("%v (--all, --servers or --trait)", err)
	}
	return sel, nil
}

// parseAgents turns NAME or NAME=IMAGE_UUID into requests.
func parseAgents(specs []string) ([]agents.AgentRequest, error) {
	var out []agents.AgentRequest
	for _, s := range specs {
		name, img, pinned := strings.Cut(s, "=")
		req := agents.AgentRequest{Name: strings.TrimSpace(name)}
		if req.Name == "" {
			return nil, fmt.Errorf("--agent %q: want NAME or NAME=IMAGE_UUID", s)
		}
		if pinned {
			u, err := uuid.Parse(img)
			if err != nil {
				return nil, fmt.Errorf("--agent %q: image %q is not a UUID", s, img)
			}
			req.ImageUUID = u
		}
		out = append(out, req)
	}
	return out, nil
}

func agentInstallCmd(a *app) *cobra.Command {
	var (
		sf        startFlags
		srv       serverFlags
		agentArgs []string
		in        agents.AgentInstallInput
		straggle  float64
	)
	cmd := &cobra.Command{
		Use:   "agent-install --agent NAME[=IMAGE_UUID]... (--all | --servers LIST | --trait K=V)",
		Short: "Install or update agents on a datacenter's servers",
		Long: `Validates first (each image exists, is the named agent and matches its size and
SHA-1; every listed server exists), then installs on the selected servers in a
sliding window (default 20 at once). Per server: it must be running and set up
(else it is reported as skipped, never touched); the agent is installed with a
cn-agent task, done once the server's own agent list in CNAPI shows the image
(cn-agent: only that list, never its task), and only then the server's
SAPI instance is moved to the image (created with a stable UUID if missing).
A server already at the image is verified, not reinstalled. cn-agent,
config-agent and agents_core are installed alone, first. marlin (Manta's agent) is only
touched when named, and only where SAPI has an agent service named marlin:
sdcadm creates none, and without one the request is refused. When failures exceed the budget no new servers start;
servers far slower than the median are reported as stragglers. The service's
fleet-wide image moves only when every server of the datacenter runs it.`,
		Example: `  starter agent-install --agent vm-agent --all --wait
  starter agent-install --agent cn-agent=5f1c...e2 --trait rack=r01 --max-failures 2
  starter agent-install --all-agents --all --exclude-server cn00012 --concurrency 40`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if in.Agents, err = parseAgents(agentArgs); err != nil {
				return usageErr("%v", err)
			}
			if in.Selection, err = srv.selection(); err != nil {
				return usageErr("%v", err)
			}
			in.ExcludeServers = srv.exclude
			in.StragglerFactor = straggle
			if err := in.Validate(); err != nil {
				return usageErr("%v", err)
			}
			return a.startUpdate(cmd, update{Kind: workflows.KindAgentInstall, Target: in.Target(),
				Artifact: in.ArtifactVersion(), Workflow: agents.AgentInstall, Input: in}, sf)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&agentArgs, "agent", nil, "agent to install: NAME (newest image) or NAME=IMAGE_UUID (repeatable)")
	f.BoolVar(&in.AllAgents, "all-agents", false, "every agent SAPI knows, at its newest image, where it runs (not marlin unless named)")
	f.StringSliceVar(&in.ExcludeAgents, "exclude-agent", nil, "agents never to touch (with --all-agents)")
	f.IntVar(&in.Concurrency, "concurrency", agents.DefaultAgentConcurrency, "servers installing at once")
	f.IntVar(&in.MaxFailures, "max-failures", 0, "failed servers tolerated before no new ones start (0: stop at the first)")
	f.Float64Var(&in.MaxFailurePercent, "max-failure-percent", 0, "failure budget as a percent of the servers to install (instead of --max-failures)")
	f.Float64Var(&straggle, "straggler-factor", agents.DefaultStragglerFactor, "warn about servers slower than this × the median")
	f.DurationVar(&in.PollInterval, "poll", 5*time.Second, "cn-agent task wait between heartbeats")
	srv.bind(cmd)
	sf.bind(cmd)
	return cmd
}

func agentDriftCmd(a *app) *cobra.Command {
	var (
		sf  startFlags
		srv serverFlags
		in  agents.AgentDriftInput
	)
	cmd := &cobra.Command{
		Use:   "agent-drift (--all | --servers LIST | --trait K=V) [--agent NAME]... [--repair]",
		Short: "Find (and with --repair fix) servers whose agent intent and actual state disagree",
		Long: `Compares each server's SAPI agent instances (the intent) with CNAPI's
server.agents (the actual state) and reports: mismatch (different images),
missing_instance (the agent runs, SAPI has no instance), not_installed (an
instance, no agent) and duplicate_instance; with --all also orphan_instance
(an instance of a server CNAPI answers 404 for: CNAPI leaves a deleted
server's instances behind). Offline or not set up servers are counted as
unreachable, never as orphans. With --repair: orphaned instances are deleted
(after CNAPI confirms the 404 again); an intent older than the actual image
is pointed at it (missing instances are created with the agent's UUID); an
actual older than the intent gets the intended image installed through
agent-install (with --concurrency and the failure budget); agents are never
downgraded; duplicates and equal versions are left for an operator. The check
runs again after the repair and reports what is left.`,
		Example: `  starter agent-drift --all --wait
  starter agent-drift --all --agent vm-agent --repair --wait --json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if in.Selection, err = srv.selection(); err != nil {
				return usageErr("%v", err)
			}
			in.ExcludeServers = srv.exclude
			if err := in.Validate(); err != nil {
				return usageErr("%v", err)
			}
			return a.startUpdate(cmd, update{Kind: workflows.KindAgentDrift, Target: in.Target(),
				Artifact: in.ArtifactVersion(), Workflow: agents.AgentDriftCheck, Input: in}, sf)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&in.Agents, "agent", nil, "agents to check (default: every agent SAPI knows)")
	f.BoolVar(&in.Repair, "repair", false, "fix what can be fixed")
	f.IntVar(&in.Concurrency, "concurrency", agents.DefaultAgentConcurrency, "servers installing at once during a repair")
	f.IntVar(&in.MaxFailures, "max-failures", 0, "failure budget of a repair's installs")
	f.Float64Var(&in.MaxFailurePercent, "max-failure-percent", 0, "failure budget as a percent (instead of --max-failures)")
	f.DurationVar(&in.PollInterval, "poll", 5*time.Second, "cn-agent task wait between heartbeats")
	srv.bind(cmd)
	sf.bind(cmd)
	return cmd
}
