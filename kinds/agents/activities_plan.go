package agents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// ServerSelection says which servers an agent workflow covers: all of them,
// an explicit list (UUIDs or hostnames), or those whose traits match every
// given key=value (a label selector). Exactly one is set.
type ServerSelection struct {
	All     bool              `json:"all,omitempty"`
	Servers []string          `json:"servers,omitempty"`
	Traits  map[string]string `json:"traits,omitempty"`
}

// Validate checks the selection without I/O.
func (s ServerSelection) Validate() error {
	n := 0
	if s.All {
		n++
	}
	if len(s.Servers) > 0 {
		n++
	}
	if len(s.Traits) > 0 {
		n++
	}
	if n != 1 {
		return errors.New("select servers with exactly one of: all, a list of servers, or traits")
	}
	return nil
}

// String describes the selection for logs and summaries.
func (s ServerSelection) String() string {
	switch {
	case s.All:
		return "all servers"
	case len(s.Servers) > 0:
		return fmt.Sprintf("%d listed servers", len(s.Servers))
	default:
		keys := make([]string, 0, len(s.Traits))
		for k, v := range s.Traits {
			keys = append(keys, k+"="+v)
		}
		sort.Strings(keys)
		return "servers with " + strings.Join(keys, ",")
	}
}

// SelectServers applies a selection and exclusions to CNAPI's servers.
// Unknown names in the list or the exclusions fail the whole request: a
// typo must not silently shrink or widen a rollout. The order is the list's
// for an explicit list, else CNAPI's.
func SelectServers(all []triton.Server, sel ServerSelection, exclude []string) (chosen []triton.Server, excluded int, err error) {
	if err := sel.Validate(); err != nil {
		return nil, 0, err
	}
	byUUID := make(map[uuid.UUID]int, len(all))
	byHost := make(map[string]int, len(all))
	for i, s := range all {
		byUUID[s.UUID] = i
		byHost[s.Hostname] = i
	}
	lookup := func(name string) (int, bool) {
		if u, err := uuid.Parse(name); err == nil {
			i, ok := byUUID[u]
			return i, ok
		}
		i, ok := byHost[name]
		return i, ok
	}
	var unknown []string
	skip := map[int]bool{}
	for _, name := range exclude {
		i, ok := lookup(strings.TrimSpace(name))
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		skip[i] = true
	}
	taken := map[int]bool{}
	take := func(i int) {
		if taken[i] {
			return
		}
		taken[i] = true
		if skip[i] {
			excluded++
			return
		}
		chosen = append(chosen, all[i])
	}
	switch {
	case sel.All:
		for i := range all {
			take(i)
		}
	case len(sel.Servers) > 0:
		for _, name := range sel.Servers {
			i, ok := lookup(strings.TrimSpace(name))
			if !ok {
				unknown = append(unknown, name)
				continue
			}
			take(i)
		}
	default:
		for i, s := range all {
			match := true
			for k, v := range sel.Traits {
				if s.Trait(k) != v {
					match = false
					break
				}
			}
			if match {
				take(i)
			}
		}
	}
	if len(unknown) > 0 {
		return nil, 0, fmt.Errorf("unknown servers (not in CNAPI): %s", strings.Join(unknown, ", "))
	}
	return chosen, excluded, nil
}

// SkipReason says why a server cannot be touched ("" when it can).
func SkipReason(s triton.Server) string {
	switch {
	case s.Status != triton.StatusRunning:
		return "offline: status " + s.Status
	case !s.Setup:
		return "not set up"
	}
	return ""
}

// OrderAgents puts the core agents first, in CoreAgents order (each is
// installed alone), then the others by name.
func OrderAgents(in []PlannedAgent) []PlannedAgent {
	out := slices.Clone(in)
	rank := func(name string) int {
		for i, c := range CoreAgents {
			if c == name {
				return i
			}
		}
		return len(CoreAgents)
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank(out[i].Name), rank(out[j].Name)
		if ri != rj {
			return ri < rj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// CompareVersions compares dotted numeric versions (1.10.0 > 1.9.2); parts
// that are not numbers compare as text.
func CompareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y string
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		nx, ex := strconv.Atoi(x)
		ny, ey := strconv.Atoi(y)
		switch {
		case ex == nil && ey == nil && nx != ny:
			if nx < ny {
				return -1
			}
			return 1
		case (ex != nil || ey != nil) && x != y:
			return strings.Compare(x, y)
		}
	}
	return 0
}

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
	// only servers that run it; marlin-agent only when named in Agents.
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
	var best *triton.Image
	for i := range list {
		im := &list[i]
		if im.Name != ag.Name || !im.IsAgent() || im.State != "active" {
			continue
		}
		if best == nil || CompareVersions(im.Version, best.Version) > 0 {
			best = im
		}
	}
	if best == nil {
		return triton.Image{}, nonRetryable(failure.ImageInvalid, "IMGAPI has no active image of agent %s", ag.Name)
	}
	return *best, nil
}

// NextAgentServersRequest pages through a plan.
type NextAgentServersRequest struct {
	RolloutID uuid.UUID `json:"rolloutId"`
	After     int       `json:"after"`
	Limit     int       `json:"limit"`
}

// NextAgentServers returns the next pending servers of a plan.
func (a *AgentActivities) NextAgentServers(ctx context.Context, r NextAgentServersRequest) ([]ledger.AgentServer, error) {
	return a.Store.PendingAgentServers(ctx, r.RolloutID, r.After, max(r.Limit, 1))
}

// StopAgentRolloutRequest ends a rollout early.
type StopAgentRolloutRequest struct {
	RolloutID uuid.UUID `json:"rolloutId"`
	Reason    string    `json:"reason"`
}

// StopAgentRollout marks the plan's remaining servers not started.
func (a *AgentActivities) StopAgentRollout(ctx context.Context, r StopAgentRolloutRequest) (int, error) {
	return a.Store.StopAgentRollout(ctx, r.RolloutID, r.Reason)
}

// AgentRolloutSummary is the ledger's view of a finished rollout.
type AgentRolloutSummary struct {
	Counts       map[string]int       `json:"counts"`
	FailedSample []ledger.AgentServer `json:"failedSample,omitempty"`
}

// SummarizeAgentRollout counts the plan's servers by state and lists some
// failed ones.
func (a *AgentActivities) SummarizeAgentRollout(ctx context.Context, rollout uuid.UUID) (AgentRolloutSummary, error) {
	counts, err := a.Store.AgentRolloutCounts(ctx, rollout)
	if err != nil {
		return AgentRolloutSummary{}, err
	}
	failed, err := a.Store.AgentServers(ctx, rollout, ledger.AgentServerFailed, maxSample)
	if err != nil {
		return AgentRolloutSummary{}, err
	}
	return AgentRolloutSummary{Counts: counts, FailedSample: failed}, nil
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
