package zoneexpunge

import (
	"context"
	"errors"
	"slices"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/nexusdb"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
)

// sled returns the client of a sled's sled-agent, reached where the control
// plane records it: the ip:port in Nexus's sled table. A SledAgent URL
// template, when configured (fleetsim without a database), takes its place.
func (a *ZoneActivities) sled(ctx context.Context, id uuid.UUID) (*sledagent.Client, error) {
	if a.Fleet.SledAgent != "" {
		return sledagent.New(a.Fleet.SledAgentURL(id.String()), a.HTTP), nil
	}
	if a.Nexus == nil {
		return nil, zoneFail(failure.NexusDBNotConfigured,
			"sled %s: no Nexus database configured (fleet endpoint nexusDB) to find its sled-agent's address", id)
	}
	s, err := a.Nexus.Sled(ctx, id)
	if errors.Is(err, nexusdb.ErrNoSuchSled) {
		return nil, zoneFail(failure.SledNotFound, "sled %s is not in Nexus's sled table", id)
	}
	if err != nil {
		return nil, err // database: retried
	}
	return sledagent.New(s.SledAgentURL(), a.HTTP), nil
}

// inventory reads a sled's inventory (checked to be that sled's), errors
// classified by sledAgentErr.
func (a *ZoneActivities) inventory(ctx context.Context, id uuid.UUID) (*sledagent.Inventory, error) {
	c, err := a.sled(ctx, id)
	if err != nil {
		return nil, err
	}
	inv, err := c.InventoryOf(ctx, id)
	if err != nil {
		return nil, sledAgentErr(id, err)
	}
	return inv, nil
}

// rackSleds are the sleds whose Nexus zones count: sled first, then the
// in-service sleds of its rack in Nexus's sled table, then any given by
// the operator (the only source without a Nexus database).
func (a *ZoneActivities) rackSleds(ctx context.Context, sled uuid.UUID, given []uuid.UUID) ([]uuid.UUID, error) {
	out := []uuid.UUID{sled}
	add := func(id uuid.UUID) {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if a.Nexus != nil {
		rack, err := a.Nexus.RackSleds(ctx, sled)
		switch {
		case errors.Is(err, nexusdb.ErrNoSuchSled):
			return nil, zoneFail(failure.SledNotFound, "sled %s is not in Nexus's sled table", sled)
		case err != nil:
			return nil, err
		}
		for _, s := range rack {
			if s.InService() {
				add(s.ID)
			}
		}
	}
	for _, id := range given {
		add(id)
	}
	return out, nil
}
