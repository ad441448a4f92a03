package agents

import (
	"context"
	"sort"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/triton"
)

// Drift kinds: how a server's SAPI intent and CNAPI actual disagree.
const (
	DriftMismatch          = "mismatch"           // intent and actual name different images
	DriftMissingInstance   = "missing_instance"   // the agent runs, SAPI has no instance for it
	DriftNotInstalled      = "not_installed"      // SAPI has an instance, the agent does not run
	DriftDuplicateInstance = "duplicate_instance" // several instances of one agent on one server
)

// Drift repairs.
const (
	RepairInstall = "install" // install the intended image (actual catches up)
	RepairIntent  = "intent"  // point the instance at the actual image (intent catches up)
	RepairManual  = "manual"  // an operator must decide
)

// AgentDrift is one disagreement on one server.
type AgentDrift struct {
	Server        uuid.UUID   `json:"server"`
	Hostname      string      `json:"hostname"`
	Agent         string      `json:"agent"`
	Kind          string      `json:"kind"`
	IntentImage   uuid.UUID   `json:"intentImage,omitzero"`
	ActualImage   uuid.UUID   `json:"actualImage,omitzero"`
	ActualUUID    uuid.UUID   `json:"actualUuid,omitzero"`
	ServiceUUID   uuid.UUID   `json:"serviceUuid"`
	Instances     []uuid.UUID `json:"instances,omitempty"`
	Repair        string      `json:"repair"`
	ActualVersion string      `json:"actualVersion,omitempty"`
}

// FindAgentDriftRequest says what to check.
type FindAgentDriftRequest struct {
	// Agents to check (empty: every SAPI agent service).
	Agents         []string        `json:"agents,omitempty"`
	Selection      ServerSelection `json:"selection"`
	ExcludeServers []string        `json:"excludeServers,omitempty"`
	// MaxEntries bounds the listed drift (counts stay exact); default 2000.
	MaxEntries int `json:"maxEntries,omitempty"`
}

// AgentDriftReport is what FindAgentDrift found.
type AgentDriftReport struct {
	Checked int `json:"checked"`
	// Unreachable servers (offline, not set up) cannot be checked.
	Unreachable int            `json:"unreachable"`
	Counts      map[string]int `json:"counts"`
	Drift       []AgentDrift   `json:"drift"`
	Truncated   bool           `json:"truncated,omitempty"`
}

// FindAgentDrift compares every selected server's SAPI agent instances (the
// intent) with CNAPI's server.agents (the actual state). When they name
// different images, the side whose image IMGAPI says was published earlier
// is behind and gets the repair: an earlier actual gets the intended image
// installed, an earlier intent is pointed at the actual image (an install
// whose intent update was lost). An agent is never downgraded; images
// published at once or without a known published_at need an operator.
func (a *AgentActivities) FindAgentDrift(ctx context.Context, r FindAgentDriftRequest) (AgentDriftReport, error) {
	maxEntries := r.MaxEntries
	if maxEntries <= 0 {
		maxEntries = 2000
	}
	services, err := a.SAPI.ListServices(ctx, triton.ListServicesOptions{Type: triton.ServiceTypeAgent})
	if err != nil {
		return AgentDriftReport{}, tritonErr(err, "list SAPI agent services")
	}
	if len(r.Agents) > 0 {
		byName := map[string]triton.Service{}
		for _, s := range services {
			byName[s.Name] = s
		}
		services = services[:0]
		for _, n := range r.Agents {
			s, ok := byName[n]
			if !ok {
				return AgentDriftReport{}, nonRetryable(failure.InvalidAgentRequest, "no SAPI agent service named %q", n)
			}
			services = append(services, s)
		}
	}
	all, err := a.CNAPI.ListServers(ctx, triton.ListServersOptions{Agents: true})
	if err != nil {
		return AgentDriftReport{}, tritonErr(err, "list servers")
	}
	chosen, _, err := SelectServers(all, r.Selection, r.ExcludeServers)
	if err != nil {
		return AgentDriftReport{}, nonRetryable(failure.InvalidAgentRequest, "%v", err)
	}
	rep := AgentDriftReport{Counts: map[string]int{}, Drift: []AgentDrift{}}
	add := func(d AgentDrift) {
		rep.Counts[d.Kind]++
		if len(rep.Drift) < maxEntries {
			rep.Drift = append(rep.Drift, d)
		} else {
			rep.Truncated = true
		}
	}
	byService := make([]map[uuid.UUID][]triton.Instance, len(services))
	for i, s := range services {
		list, err := a.SAPI.ListInstances(ctx, s.UUID)
		if err != nil {
			return AgentDriftReport{}, tritonErr(err, "list SAPI instances of "+s.Name)
		}
		m := map[uuid.UUID][]triton.Instance{}
		for _, in := range list {
			m[in.Params.ServerUUID] = append(m[in.Params.ServerUUID], in)
		}
		byService[i] = m
		activity.RecordHeartbeat(ctx, s.Name)
	}
	images := a.newImageCache()
	if r.Selection.All {
		if err := a.addOrphans(ctx, all, services, byService, add); err != nil {
			return AgentDriftReport{}, err
		}
	}
	for _, srv := range chosen {
		if SkipReason(srv) != "" {
			rep.Unreachable++
			continue
		}
		rep.Checked++
		for i, s := range services {
			act, has := srv.Agent(s.Name)
			insts := instancesOn(byService[i], srv.UUID, act.UUID)
			d := AgentDrift{Server: srv.UUID, Hostname: srv.Hostname, Agent: s.Name, ServiceUUID: s.UUID,
				ActualImage: act.ImageUUID, ActualUUID: act.UUID, ActualVersion: act.Version}
			for _, in := range insts {
				d.Instances = append(d.Instances, in.UUID)
			}
			switch {
			case len(insts) > 1:
				d.Kind, d.Repair = DriftDuplicateInstance, RepairManual
			case len(insts) == 0 && has:
				d.Kind, d.Repair = DriftMissingInstance, RepairIntent
			case len(insts) == 1 && !has:
				d.Kind, d.Repair, d.IntentImage = DriftNotInstalled, RepairInstall, insts[0].Params.ImageUUID
			case len(insts) == 1 && insts[0].Params.ImageUUID != act.ImageUUID:
				d.Kind, d.IntentImage = DriftMismatch, insts[0].Params.ImageUUID
				actual, err := images.get(ctx, act.ImageUUID)
				if err != nil {
					return AgentDriftReport{}, err
				}
				intent, err := images.get(ctx, d.IntentImage)
				if err != nil {
					return AgentDriftReport{}, err
				}
				d.Repair = mismatchRepair(actual, intent)
			default:
				continue
			}
			add(d)
		}
	}
	sort.SliceStable(rep.Drift, func(i, j int) bool { return rep.Drift[i].Agent < rep.Drift[j].Agent })
	return rep, nil
}

// RepairAgentIntents points the instances of intent-kind drift at the
// actual images (creating missing instances with the agent's UUID). It
// returns how many it fixed.
func (a *AgentActivities) RepairAgentIntents(ctx context.Context, drift []AgentDrift) (int, error) {
	fixed := 0
	for i, d := range drift {
		if d.Repair != RepairIntent {
			continue
		}
		_, err := a.SetAgentIntent(ctx, SetAgentIntentRequest{
			Server:       d.Server,
			Agent:        PlannedAgent{Name: d.Agent, ImageUUID: d.ActualImage, Version: d.ActualVersion, ServiceUUID: d.ServiceUUID},
			InstanceUUID: d.ActualUUID,
		})
		if err != nil {
			return fixed, err
		}
		fixed++
		activity.RecordHeartbeat(ctx, i)
	}
	return fixed, nil
}

// mismatchRepair picks the side to fix when intent and actual differ: the
// one whose image was published earlier is behind (triton.ComparePublished).
func mismatchRepair(actual, intent triton.Image) string {
	c, ok := triton.ComparePublished(actual, intent)
	switch {
	case !ok || c == 0:
		return RepairManual
	case c < 0:
		return RepairInstall
	}
	return RepairIntent
}

// addOrphans reports the instances whose server CNAPI no longer has (only
// for a check of every server: a narrower selection names servers that
// exist).
func (a *AgentActivities) addOrphans(ctx context.Context, all []triton.Server, services []triton.Service,
	byService []map[uuid.UUID][]triton.Instance, add func(AgentDrift)) error {
	named := map[uuid.UUID]bool{}
	for _, m := range byService {
		for id := range m {
			named[id] = true
		}
	}
	gone, err := a.orphanServers(ctx, all, named)
	if err != nil {
		return err
	}
	for i, s := range services {
		for id, insts := range byService[i] {
			if !gone[id] {
				continue
			}
			for _, in := range insts {
				add(AgentDrift{Server: id, Agent: s.Name, ServiceUUID: s.UUID, Kind: DriftOrphanInstance,
					Repair: RepairDelete, IntentImage: in.Params.ImageUUID, Instances: []uuid.UUID{in.UUID}})
			}
		}
	}
	return nil
}
