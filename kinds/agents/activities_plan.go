package agents

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// AgentRequest names one agent to install, at ImageUUID or (nil) at the
// newest image IMGAPI has for it.
type AgentRequest struct {
	Name      string    `json:"name"`
	ImageUUID uuid.UUID `json:"imageUuid,omitzero"`
}

// PlanAgentInstallRequest is a rollout's request, validated and planned by
// PlanAgentInstall.
type PlanAgentInstallRequest struct {
	RolloutID uuid.UUID      `json:"rolloutId"`
	Agents    []AgentRequest `json:"agents,omitempty"`
	// AllAgents adds every SAPI agent service at its newest image, updating
	// only servers that run it; marlin only when named in Agents.
	AllAgents      bool            `json:"allAgents,omitempty"`
	Selection      ServerSelection `json:"selection"`
	ExcludeServers []string        `json:"excludeServers,omitempty"`
	ExcludeAgents  []string        `json:"excludeAgents,omitempty"`
}

// SkippedServer is a server the plan will not touch.
type SkippedServer struct {
	UUID     uuid.UUID `json:"uuid"`
	Hostname string    `json:"hostname"`
	Reason   string    `json:"reason"`
}

// maxSample bounds the server lists a plan or summary carries (the ledger
// has them all).
const maxSample = 50

// AgentInstallPlan is a validated, stored plan.
type AgentInstallPlan struct {
	Agents   []PlannedAgent `json:"agents"`
	Selected int            `json:"selected"`
	Pending  int            `json:"pending"`
	Skipped  int            `json:"skipped"`
	Excluded int            `json:"excluded"`
	// LastSeq is the plan's highest sequence number.
	LastSeq       int             `json:"lastSeq"`
	SkippedSample []SkippedServer `json:"skippedSample,omitempty"`
}

// PlanAgentInstall validates a rollout before anything changes (the images
// exist, are the named agents and match their size and digest; every listed
// server exists) and stores its server plan in the ledger. Idempotent.
func (a *AgentActivities) PlanAgentInstall(ctx context.Context, r PlanAgentInstallRequest) (AgentInstallPlan, error) {
	agents, err := a.resolveAgents(ctx, r)
	if err != nil {
		return AgentInstallPlan{}, err
	}
	all, err := a.CNAPI.ListServers(ctx, triton.ListServersOptions{})
	if err != nil {
		return AgentInstallPlan{}, tritonErr(err, "list servers")
	}
	chosen, excluded, err := SelectServers(all, r.Selection, r.ExcludeServers)
	if err != nil {
		return AgentInstallPlan{}, nonRetryable(failure.InvalidAgentRequest, "%v", err)
	}
	plan := AgentInstallPlan{Agents: agents, Selected: len(chosen), Excluded: excluded, LastSeq: len(chosen)}
	rows := make([]ledger.AgentServer, len(chosen))
	for i, s := range chosen {
		rows[i] = ledger.AgentServer{Seq: i + 1, ServerUUID: s.UUID, Hostname: s.Hostname, State: ledger.AgentServerPending}
		if why := SkipReason(s); why != "" {
			rows[i].State, rows[i].Reason = ledger.AgentServerSkipped, why
		}
	}
	if err := a.Store.InsertAgentPlan(ctx, r.RolloutID, rows); err != nil {
		return AgentInstallPlan{}, err
	}
	// Report what the ledger holds (a retried plan keeps its first rows).
	counts, err := a.Store.AgentRolloutCounts(ctx, r.RolloutID)
	if err != nil {
		return AgentInstallPlan{}, err
	}
	plan.Pending, plan.Skipped = counts[ledger.AgentServerPending], counts[ledger.AgentServerSkipped]
	skipped, err := a.Store.AgentServers(ctx, r.RolloutID, ledger.AgentServerSkipped, maxSample)
	if err != nil {
		return AgentInstallPlan{}, err
	}
	for _, s := range skipped {
		plan.SkippedSample = append(plan.SkippedSample, SkippedServer{UUID: s.ServerUUID, Hostname: s.Hostname, Reason: s.Reason})
	}
	return plan, nil
}

// resolveAgents turns the request's agents into checked images, core
// agents first.
func (a *AgentActivities) resolveAgents(ctx context.Context, r PlanAgentInstallRequest) ([]PlannedAgent, error) {
	invalid := func(format string, args ...any) error {
		return nonRetryable(failure.InvalidAgentRequest, format, args...)
	}
	services, err := a.SAPI.ListServices(ctx, triton.ListServicesOptions{Type: triton.ServiceTypeAgent})
	if err != nil {
		return nil, tritonErr(err, "list SAPI agent services")
	}
	svc := map[string]triton.Service{}
	for _, s := range services {
		svc[s.Name] = s
	}
	excluded := map[string]bool{}
	for _, n := range r.ExcludeAgents {
		excluded[n] = true
	}
	wanted := map[string]AgentRequest{}
	var order []string
	for _, ag := range r.Agents {
		if ag.Name == "" {
			return nil, invalid("an agent needs a name")
		}
		if _, dup := wanted[ag.Name]; dup {
			return nil, invalid("agent %s is named twice", ag.Name)
		}
		if excluded[ag.Name] {
			return nil, invalid("agent %s is both named and excluded", ag.Name)
		}
		wanted[ag.Name] = ag
		order = append(order, ag.Name)
	}
	implicit := map[string]bool{}
	if r.AllAgents {
		for _, s := range services {
			if _, named := wanted[s.Name]; named || excluded[s.Name] || s.Name == MarlinAgent {
				continue
			}
			wanted[s.Name] = AgentRequest{Name: s.Name}
			implicit[s.Name] = true
			order = append(order, s.Name)
		}
	}
	if len(order) == 0 {
		return nil, invalid("no agent to install: name agents or ask for all agents")
	}
	var out []PlannedAgent
	for _, name := range order {
		s, ok := svc[name]
		if !ok {
			return nil, invalid("no SAPI agent service named %q", name)
		}
		im, err := a.agentImage(ctx, wanted[name])
		if err != nil {
			return nil, err
		}
		activity.RecordHeartbeat(ctx, name)
		if err := a.IMGAPI.VerifyFile(ctx, im); err != nil {
			var mm *triton.FileMismatchError
			if errors.As(err, &mm) {
				return nil, nonRetryable(failure.ImageInvalid, "%v", err)
			}
			return nil, tritonErr(err, "download image "+im.UUID.String())
		}
		out = append(out, PlannedAgent{Name: name, ImageUUID: im.UUID, Version: im.Version, ServiceUUID: s.UUID, OnlyIfPresent: implicit[name]})
	}
	return OrderAgents(out), nil
}

// agentImage finds the image of one requested agent and checks it names
// that agent.
func (a *AgentActivities) agentImage(ctx context.Context, ag AgentRequest) (triton.Image, error) {
	if ag.ImageUUID != uuid.Nil {
		im, err := a.IMGAPI.GetImage(ctx, ag.ImageUUID)
		if triton.IsNotFound(err) {
			return triton.Image{}, nonRetryable(failure.ImageInvalid, "image %s not found in IMGAPI", ag.ImageUUID)
		}
		if err != nil {
			return triton.Image{}, tritonErr(err, "get image")
		}
		if !im.IsAgent() {
			return triton.Image{}, nonRetryable(failure.ImageInvalid, "image %s (%s %s) is not an agent image", im.UUID, im.Name, im.Type)
		}
		if im.Name != ag.Name {
			return triton.Image{}, nonRetryable(failure.ImageInvalid, "image %s is %s, not %s", im.UUID, im.Name, ag.Name)
		}
		return im, nil
	}
	list, err := a.IMGAPI.ListImages(ctx, ag.Name)
	if err != nil {
		return triton.Image{}, tritonErr(err, "list images")
	}
	var candidates []triton.Image
	for _, im := range list {
		// IMGAPI's name filter is checked again, as sdcadm does (sdcadm
		// lib/sdcadm.js getCandidateImages).
		if im.Name == ag.Name && im.IsAgent() && im.State == "active" {
			candidates = append(candidates, im)
		}
	}
	best, ok := triton.Newest(candidates)
	if !ok {
		return triton.Image{}, nonRetryable(failure.ImageInvalid, "IMGAPI has no active image of agent %s", ag.Name)
	}
	return best, nil
}

// SetAgentServiceImageRequest moves an agent's fleet-wide intent.
type SetAgentServiceImageRequest struct {
	ServiceUUID uuid.UUID `json:"serviceUuid"`
	ImageUUID   uuid.UUID `json:"imageUuid"`
}

// SetAgentServiceImage sets the SAPI service's params.image_uuid (done only
// when every server of the datacenter runs the image).
func (a *AgentActivities) SetAgentServiceImage(ctx context.Context, r SetAgentServiceImageRequest) error {
	s, err := a.SAPI.GetService(ctx, r.ServiceUUID)
	if err != nil {
		return tritonErr(err, "get SAPI service")
	}
	if s.Params.ImageUUID == r.ImageUUID {
		return nil
	}
	_, err = a.SAPI.SetServiceImage(ctx, r.ServiceUUID, r.ImageUUID)
	return tritonErr(err, "update SAPI service")
}
