package mgsupdate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleet/nexusdb"
	"github.com/fleetsaga/fleetsaga/fleet/nexusexternal"
	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
)

// NexusUpdate is a pending MGS update the target blueprint has for a device:
// Nexus's MGS update driver owns that device (docs/CONFORMANCE.md §I).
type NexusUpdate struct {
	Blueprint       uuid.UUID `json:"blueprint"`
	Component       string    `json:"component"`
	ArtifactVersion string    `json:"artifactVersion"`
}

// ownerLookup finds a device's pending Nexus update.
type ownerLookup struct {
	url    string
	direct bool // fleet endpoint directMode: the racks have no Nexus
	http   *http.Client
	db     *nexusdb.DB // the sled table, for "{rack}" in url or external
	// external is Nexus's external API (a rack's target release,
	// targetRelease), tokenFile its API token's file ("{rack}" as in
	// external); externalHTTP trusts its CA (externalCAErr: the CA file
	// could not be read).
	external, tokenFile string
	externalHTTP        *http.Client
	externalCAErr       error
}

func newOwnerLookup(ep fleet.Endpoints, hc *http.Client) ownerLookup {
	o := ownerLookup{url: ep.NexusLockstep, direct: ep.DirectMode, http: hc, external: ep.NexusExternal, tokenFile: ep.NexusExternalTokenFile}
	o.externalHTTP, o.externalCAErr = nexusexternal.HTTPClient(hc, ep.NexusExternalCA)
	if (strings.Contains(o.url, "{rack}") || strings.Contains(o.external, "{rack}")) && ep.NexusDB != "" {
		o.db, _ = nexusdb.Open(ep.NexusDB) // lazy: no connection until used
	}
	return o
}

// switchRackUnknown: only sleds have a rack in Nexus's database a worker
// can read. A switch's or power shelf's baseboard is in inventory
// (hw_baseboard_id, inv_service_processor) with no rack, and omicron's
// switch table is filled only by its test helpers (nexus/test-utils
// resource_helpers.rs calls PUT /switch/{id}); the planner still plans
// their updates (nexus/reconfigurator/planning/src/mgs_updates/mod.rs).
const switchRackUnknown = "SP %s (serial %s) is not a sled's: the Nexus lockstep endpoint names {rack}, and Nexus's database records the rack of sleds only, " +
	"so this SP's rack, and so its owner, is unknown; switch and power shelf SPs need a single-rack lockstep endpoint (no {rack}): " +
	"run their updates from a worker whose --nexus-lockstep is that rack's Nexus"

// pendingUpdate reads the target blueprint of the device's rack (found by
// its baseboard serial in the sled table when the endpoint names {rack};
// a switch or power shelf SP is OwnerUnknown then, switchRackUnknown).
// Only direct mode asks no owner. No endpoint, an endpoint that is not the
// lockstep API, or a device the sled table does not know is OwnerUnknown;
// other errors are retried (no update starts while the owner is unknown).
// A disabled target is TargetDisabled: Nexus skips executing it, so its
// pending_mgs_updates never reach the MGS update driver, which may still
// be carrying out those of the last enabled target (omicron
// nexus/src/app/background/tasks/blueprint_execution.rs, "blueprint
// disabled"; nexus/reconfigurator/execution/src/lib.rs
// register_mgs_update_step): what the driver does is unknown.
func (o ownerLookup) pendingUpdate(ctx context.Context, sp mgs.SpIdentifier, serial, part string) (*NexusUpdate, error) {
	if o.direct {
		return nil, nil
	}
	if o.url == "" {
		return nil, mgsFatal(failure.OwnerUnknown, "SP %s: %s", serial, fleet.NoOwnerConfigured)
	}
	rack := ""
	if strings.Contains(o.url, "{rack}") && sp.Type != mgs.SpTypeSled {
		return nil, mgsFatal(failure.OwnerUnknown, switchRackUnknown, sp, serial)
	}
	if strings.Contains(o.url, "{rack}") {
		if o.db == nil {
			return nil, mgsFatal(failure.NexusDBNotConfigured, "the Nexus lockstep endpoint names {rack}: the sled table (fleet endpoint nexusDB) is needed to find the rack of SP %s", serial)
		}
		s, err := o.db.SledBySerial(ctx, serial)
		if errors.Is(err, nexusdb.ErrNoSuchSled) {
			return nil, mgsFatal(failure.OwnerUnknown, "no sled with serial %s in Nexus's sled table: its rack, and so its owner, is unknown", serial)
		}
		if errors.Is(err, nexusdb.ErrAmbiguousSerial) {
			return nil, mgsFatal(failure.OwnerUnknown, "%v: its rack, and so its owner, is unknown", err)
		}
		if err != nil {
			return nil, err
		}
		rack = s.RackID.String()
	}
	url := strings.ReplaceAll(o.url, "{rack}", rack)
	t, bp, err := nexuslockstep.New(url, o.http).Current(ctx)
	if nexuslockstep.IsNotLockstepAPI(err) {
		return nil, mgsFatal(failure.OwnerUnknown, "SP %s: %s", serial, nexuslockstep.NotLockstepAPI(url))
	}
	if err != nil {
		return nil, lockstepErr(err)
	}
	if !t.Enabled {
		return nil, mgsFatal(failure.TargetDisabled, "SP %s: %s (Nexus's MGS update driver may still be updating the SPs of the last enabled target)",
			serial, nexuslockstep.Disabled(t))
	}
	u := bp.PendingUpdateFor(serial, part)
	if u == nil {
		return nil, nil
	}
	return &NexusUpdate{Blueprint: t.TargetID, Component: u.Component(), ArtifactVersion: u.ArtifactVersion}, nil
}

// lockstepErr: retryable lockstep errors stay plain, others are typed.
func lockstepErr(err error) error {
	if err == nil || nexuslockstep.IsRetryable(err) {
		return err
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), failure.NexusLockstepRejected, err)
}

// checkOwner refuses a device Nexus's MGS update driver owns, and one whose
// rack's update system owns it (a target release).
func checkOwner(want SPTarget, pre PrecheckResult) error {
	if r := pre.TargetRelease; r != nil {
		return releaseOwns(fmt.Sprintf("SP %s (serial %s)", want.id(), pre.Serial), *r, "")
	}
	u := pre.NexusUpdate
	if u == nil {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"SP %s (serial %s) belongs to Nexus: target blueprint %s has a pending MGS update of its %s to %s, which Nexus's MGS update driver carries out; "+
			"refusing to update it (let Nexus finish, or take the update out of the target blueprint)",
		want.id(), pre.Serial, u.Blueprint, u.Component, u.ArtifactVersion), failure.OwnedByNexus, nil)
}
