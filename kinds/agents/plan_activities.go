package agents

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/triton"
)

// AgentOnServer is what an agent install does with one agent on one server.
type AgentOnServer string

const (
	// AgentAbsent: an agent picked by "all agents" that the server does
	// not run: left alone.
	AgentAbsent AgentOnServer = "absent"
	// AgentAtImage: the server already runs the image.
	AgentAtImage AgentOnServer = "at-image"
	// AgentNeedsInstall: the image is installed.
	AgentNeedsInstall AgentOnServer = "install"
)

// DecideAgentOnServer decides ag on a server from its server.agents (the
// per-server install and the dry run both use it). cur is the server's
// entry for the agent, nil when it does not run it.
func DecideAgentOnServer(ag PlannedAgent, have []triton.Agent) (decision AgentOnServer, cur *triton.Agent) {
	for i := range have {
		if have[i].Name == ag.Name {
			cur = &have[i]
		}
	}
	switch {
	case ag.OnlyIfPresent && cur == nil:
		return AgentAbsent, nil
	case cur != nil && cur.ImageUUID == ag.ImageUUID:
		return AgentAtImage, cur
	}
	return AgentNeedsInstall, cur
}

// PlanAgentInstallDry is an agent install's dry run: the install's own
// validation (images exist, are the named agents, match their size and
// digest; every named server exists), its server selection, and per
// server and agent the install's decision. Unlike PlanAgentInstall it
// stores nothing.
func (a *AgentActivities) PlanAgentInstallDry(ctx context.Context, r PlanAgentInstallRequest) ([]activities.PlanRow, error) {
	agents, err := a.resolveAgents(ctx, r)
	if err != nil {
		row, err := activities.RefuseRow(activities.PlanRow{Device: "(request)"}, err)
		return []activities.PlanRow{row}, err
	}
	all, err := a.CNAPI.ListServers(ctx, triton.ListServersOptions{Agents: true})
	if err != nil {
		return nil, tritonErr(err, "list servers")
	}
	chosen, _, err := SelectServers(all, r.Selection, r.ExcludeServers)
	if err != nil {
		return []activities.PlanRow{{Device: "(request)", Action: activities.PlanRefuse, Reason: failure.InvalidAgentRequest + ": " + err.Error()}}, nil
	}
	rows := a.excludedAgentRows(ctx, r, agents)
	rows = append(rows, excludedServerRows(all, r, chosen)...)
	images := a.newImageCache()
	for _, s := range chosen {
		if why := SkipReason(s); why != "" {
			rows = append(rows, activities.PlanRow{Device: s.Hostname, Action: activities.PlanSkip, Reason: why})
			continue
		}
		for _, ag := range agents {
			row, err := agentRow(ctx, images, s, ag)
			if err != nil {
				return nil, err
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// agentRow is one agent on one running server; an install of an image
// published before the one the server runs is flagged as a downgrade.
func agentRow(ctx context.Context, images *imageCache, s triton.Server, ag PlannedAgent) (activities.PlanRow, error) {
	row := activities.PlanRow{Device: s.Hostname + " " + ag.Name, Current: "absent", Desired: ag.Version + " (" + ag.ImageUUID.String()[:8] + ")"}
	decision, cur := DecideAgentOnServer(ag, s.Agents)
	if cur != nil {
		row.Current = cur.Version + " (" + cur.ImageUUID.String()[:8] + ")"
	}
	switch decision {
	case AgentAbsent:
		row.Action, row.Reason = activities.PlanSkip, "does not run "+ag.Name+" (all agents: only servers that run it)"
	case AgentAtImage:
		row.Action = activities.PlanAtTarget
	default:
		row.Action = activities.PlanUpdate
		if cur == nil {
			break
		}
		have, err := images.get(ctx, cur.ImageUUID)
		if err != nil {
			return row, err
		}
		want, err := images.get(ctx, ag.ImageUUID)
		if err != nil {
			return row, err
		}
		if c, ok := triton.ComparePublished(have, want); ok && c > 0 {
			row.Reason = "installs an older version (published earlier): " + cur.Version + " → " + ag.Version
		}
	}
	return row, nil
}

// excludedAgentRows lists the agents an all-agents request leaves out:
// excluded ones, and marlin (Manta's agent) unless named.
func (a *AgentActivities) excludedAgentRows(ctx context.Context, r PlanAgentInstallRequest, planned []PlannedAgent) []activities.PlanRow {
	var rows []activities.PlanRow
	for _, n := range r.ExcludeAgents {
		rows = append(rows, activities.PlanRow{Device: n, Action: activities.PlanSkip, Reason: "excluded agent (--exclude-agent)"})
	}
	named := slices.ContainsFunc(planned, func(p PlannedAgent) bool { return p.Name == MarlinAgent })
	if !r.AllAgents || named || slices.Contains(r.ExcludeAgents, MarlinAgent) {
		return rows
	}
	services, err := a.SAPI.ListServices(ctx, triton.ListServicesOptions{Type: triton.ServiceTypeAgent})
	if err == nil && slices.ContainsFunc(services, func(s triton.Service) bool { return s.Name == MarlinAgent }) {
		rows = append(rows, activities.PlanRow{Device: MarlinAgent, Action: activities.PlanSkip, Reason: "excluded agent: marlin (Manta's agent) is only installed when named"})
	}
	return rows
}

// excludedServerRows lists the selected servers --exclude-server leaves out.
func excludedServerRows(all []triton.Server, r PlanAgentInstallRequest, chosen []triton.Server) []activities.PlanRow {
	if len(r.ExcludeServers) == 0 {
		return nil
	}
	selected, _, err := SelectServers(all, r.Selection, nil)
	if err != nil {
		return nil
	}
	kept := map[uuid.UUID]bool{}
	for _, s := range chosen {
		kept[s.UUID] = true
	}
	var rows []activities.PlanRow
	for _, s := range selected {
		if !kept[s.UUID] {
			rows = append(rows, activities.PlanRow{Device: s.Hostname, Action: activities.PlanSkip, Reason: "excluded server (--exclude-server)"})
		}
	}
	return rows
}

// PlanAgentDrift is a drift check's dry run: the check itself (read-only),
// one row per disagreement; with repair, the ones it would fix are
// updates.
func (a *AgentActivities) PlanAgentDrift(ctx context.Context, r FindAgentDriftRequest, repair bool) ([]activities.PlanRow, error) {
	rep, err := a.FindAgentDrift(ctx, r)
	if err != nil {
		row, err := activities.RefuseRow(activities.PlanRow{Device: "(request)"}, err)
		return []activities.PlanRow{row}, err
	}
	if len(rep.Drift) == 0 {
		return []activities.PlanRow{{Device: fmt.Sprintf("%d servers", rep.Checked), Current: "intent = actual", Desired: "intent = actual",
			Action: activities.PlanAtTarget, Reason: fmt.Sprintf("no drift (%d servers unreachable)", rep.Unreachable)}}, nil
	}
	rows := make([]activities.PlanRow, 0, len(rep.Drift))
	for _, d := range rep.Drift {
		row := activities.PlanRow{Device: d.Hostname + " " + d.Agent, Current: "actual " + shortUUID(d.ActualImage), Desired: "intent " + shortUUID(d.IntentImage)}
		switch {
		case d.Repair == RepairManual:
			row.Action, row.Reason = activities.PlanSkip, d.Kind+": an operator must decide"
		case !repair:
			row.Action, row.Reason = activities.PlanSkip, d.Kind+": reported only (repair: "+d.Repair+")"
		default:
			row.Action, row.Reason = activities.PlanUpdate, d.Kind+": repair "+d.Repair
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func shortUUID(u uuid.UUID) string {
	if u == uuid.Nil {
		return "none"
	}
	return u.String()[:8]
}
