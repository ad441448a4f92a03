package agents

import (
	"context"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
)

// DriftOrphanInstance: a SAPI agent instance names a server CNAPI no longer
// has. CNAPI does not remove a deleted (or factory-reset) server's SAPI
// instances, so the orchestrator has to (docs/CONFORMANCE.md §H).
const DriftOrphanInstance = "orphan_instance"

// RepairDelete deletes the orphaned SAPI instances.
const RepairDelete = "delete"

// orphanServers returns the server UUIDs that SAPI's instances name but
// that CNAPI says do not exist. The listing only nominates candidates; each
// is confirmed by GET /servers/:uuid answering 404. A server that answers
// (whatever its status: an unreachable server is "unknown", not gone) is
// not an orphan's, and any other error fails the check (retryable), so a
// transient CNAPI failure never turns into a deletion.
func (a *AgentActivities) orphanServers(ctx context.Context, listed []triton.Server, named map[uuid.UUID]bool) (map[uuid.UUID]bool, error) {
	known := make(map[uuid.UUID]bool, len(listed))
	for _, s := range listed {
		known[s.UUID] = true
	}
	out := map[uuid.UUID]bool{}
	for id := range named {
		if known[id] || id == uuid.Nil {
			continue
		}
		gone, err := a.serverGone(ctx, id)
		if err != nil {
			return nil, err
		}
		if gone {
			out[id] = true
		}
	}
	return out, nil
}

// serverGone is true only when CNAPI answers 404 for the server.
func (a *AgentActivities) serverGone(ctx context.Context, id uuid.UUID) (bool, error) {
	_, err := a.CNAPI.GetServer(ctx, id)
	switch {
	case err == nil:
		return false, nil
	case triton.IsNotFound(err):
		return true, nil
	}
	return false, tritonErr(err, "get server "+id.String())
}

// RemoveOrphanInstances deletes the SAPI instances of orphan-kind drift,
// after confirming again that CNAPI answers 404 for their server (the
// report may be stale). An instance already gone counts as removed. It
// returns how many instances it removed.
func (a *AgentActivities) RemoveOrphanInstances(ctx context.Context, drift []AgentDrift) (int, error) {
	removed := 0
	for i, d := range drift {
		if d.Kind != DriftOrphanInstance || d.Repair != RepairDelete {
			continue
		}
		gone, err := a.serverGone(ctx, d.Server)
		if err != nil {
			return removed, err
		}
		if !gone {
			continue
		}
		for _, id := range d.Instances {
			in, err := a.SAPI.GetInstance(ctx, id)
			if triton.IsNotFound(err) {
				removed++
				continue
			}
			if err != nil {
				return removed, tritonErr(err, "get SAPI instance "+id.String())
			}
			if in.Params.ServerUUID != d.Server {
				continue // not the instance the report saw
			}
			if err := a.SAPI.DeleteInstance(ctx, id); err != nil && !triton.IsNotFound(err) {
				return removed, tritonErr(err, "delete SAPI instance "+id.String())
			}
			removed++
		}
		activity.RecordHeartbeat(ctx, i)
	}
	return removed, nil
}
