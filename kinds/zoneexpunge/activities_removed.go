package zoneexpunge

import (
	"context"

	"github.com/google/uuid"
)

// ZoneRemovedInput asks whether a sled ledgered a zone's removal.
type ZoneRemovedInput struct {
	AttemptID    uuid.UUID `json:"attemptId"`
	Sled         uuid.UUID `json:"sled"`
	Zone         uuid.UUID `json:"zone"`
	ExpungedAsOf uint64    `json:"expungedAsOf"`
}

// ZoneRemovalLedgered reports whether the sled ledgered a config at
// ExpungedAsOf or later without the zone: the point past which an expunge
// is never undone. The workflow asks after a cancel stopped the config PUT,
// which may have landed before it stopped.
func (a *ZoneActivities) ZoneRemovalLedgered(ctx context.Context, in ZoneRemovedInput) (bool, error) {
	inv, err := a.inventory(ctx, in.Sled)
	if err != nil {
		return false, err
	}
	_, inConfig := zoneKind(inv, in.Zone)
	removed := inv.LedgeredGeneration() >= in.ExpungedAsOf && !inConfig
	if !removed {
		return false, nil
	}
	return true, a.event(ctx, in.AttemptID, "zone.removed-before-cancel", "",
		"the sled ledgered the config without the zone before the cancel stopped the PUT")
}
