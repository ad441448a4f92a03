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
	"github.com/fleetsaga/fleetsaga/fleet/apiversion"
	"github.com/fleetsaga/fleetsaga/fleet/nexusdb"
	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
)

// sledLookup finds a host's sled-agent and the owner of its sled config:
// on a real rack the sled table in Nexus's database (by the SP's serial:
// the sled's baseboard), and the target blueprint of its rack.
type sledLookup struct {
	template string // fleet endpoint sledAgent ("{sled}"): fleetsim without a database
	lockstep string // fleet endpoint nexusLockstep
	direct   bool   // fleet endpoint directMode: the racks have no Nexus
	db       *nexusdb.DB
	http     *http.Client
}

func newSledLookup(ep fleet.Endpoints, hc *http.Client) sledLookup {
	l := sledLookup{template: ep.SledAgent, lockstep: ep.NexusLockstep, direct: ep.DirectMode, http: hc}
	if ep.NexusDB != "" {
		l.db, _ = nexusdb.Open(ep.NexusDB) // lazy: no connection until used
	}
	return l
}

// hostSled is a host's sled: its ID, rack and sled-agent.
type hostSled struct {
	id   uuid.UUID
	rack uuid.UUID
	// serial is the SP's serial the update verified: the sled-agent's
	// inventory must report it as its baseboard's (inventoryOf).
	serial string
	// idFromInput: the ID is the caller's, not found by serial in Nexus's
	// sled table, so only the sled-agent's inventory ties it to the SP.
	idFromInput bool
	client      *sledagent.Client
	// upload is the same sled-agent without the fleet request timeout,
	// for the phase 2 upload: its stalls bound it instead
	// (MGSActivities.phase2UploadStall).
	upload *sledagent.Client
}

// sled is the hostSled whose sled-agent is at url.
func (l sledLookup) sled(id, rack uuid.UUID, serial, url string) hostSled {
	hc := l.http
	if hc == nil {
		hc = http.DefaultClient
	}
	return hostSled{id: id, rack: rack, serial: serial, client: sledagent.New(url, hc), upload: sledagent.New(url, untimed(hc))}
}

// find locates the sled whose SP has this serial. A sled ID given by the
// caller is used with the sledAgent URL template when there is no sled
// table; nothing ties that ID to the SP, so every read of the sled-agent's
// inventory checks its baseboard serial (inventoryOf).
func (l sledLookup) find(ctx context.Context, serial string, id uuid.UUID) (hostSled, error) {
	if l.db != nil {
		s, err := l.db.SledBySerial(ctx, serial)
		if errors.Is(err, nexusdb.ErrNoSuchSled) {
			return hostSled{}, mgsFatal(failure.SledNotFound, "no sled with serial %s in Nexus's sled table: its sled-agent cannot be found", serial)
		}
		if errors.Is(err, nexusdb.ErrAmbiguousSerial) {
			return hostSled{}, mgsFatal(failure.SledNotFound, "%v", err)
		}
		if err != nil {
			return hostSled{}, err // database: retried
		}
		return l.sled(s.ID, s.RackID, serial, s.SledAgentURL()), nil
	}
	if l.template != "" && id != uuid.Nil {
		s := l.sled(id, uuid.Nil, serial, strings.ReplaceAll(l.template, "{sled}", id.String()))
		s.idFromInput = true
		return s, nil
	}
	return hostSled{}, mgsFatal(failure.NexusDBNotConfigured,
		"the host's phase 2 is written by its sled-agent, found in Nexus's sled table (fleet endpoint nexusDB); without one, give the update's sledId and a sledAgent endpoint")
}

// configOwner is the target blueprint that owns the sled's config; nil
// only in direct mode, where fleetsaga writes it itself. The rule is zone
// expunge's: no endpoint, an endpoint that is not the lockstep API or a
// sled the target does not have active is OwnerUnknown, a disabled target
// TargetDisabled; a transport error is retried.
type configOwner struct {
	client *nexuslockstep.Client
	target nexuslockstep.Target
	bp     *nexuslockstep.Blueprint
}

func (l sledLookup) owner(ctx context.Context, s hostSled) (*configOwner, error) {
	if l.direct {
		return nil, nil
	}
	if l.lockstep == "" {
		return nil, mgsFatal(failure.OwnerUnknown, "sled %s: %s", s.id, fleet.NoOwnerConfigured)
	}
	if strings.Contains(l.lockstep, "{rack}") && s.rack == uuid.Nil {
		return nil, mgsFatal(failure.NexusDBNotConfigured, "the Nexus lockstep endpoint names {rack}: the sled table (fleet endpoint nexusDB) is needed to find sled %s's rack", s.id)
	}
	url := strings.ReplaceAll(l.lockstep, "{rack}", s.rack.String())
	c := nexuslockstep.New(url, l.http)
	t, bp, err := c.Current(ctx)
	if nexuslockstep.IsNotLockstepAPI(err) {
		return nil, mgsFatal(failure.OwnerUnknown, "sled %s: %s", s.id, nexuslockstep.NotLockstepAPI(url))
	}
	if err != nil {
		return nil, lockstepErr(err)
	}
	if !t.Enabled {
		return nil, mgsFatal(failure.TargetDisabled, "sled %s: %s", s.id, nexuslockstep.Disabled(t))
	}
	if sc, ok := bp.Sleds[s.id]; !ok || sc.State != "active" {
		return nil, mgsFatal(failure.OwnerUnknown, "target blueprint %s does not have sled %s active: Nexus does not manage its config, and fleetsaga does not write it behind Nexus",
			t.TargetID, s.id)
	}
	return &configOwner{client: c, target: t, bp: bp}, nil
}

// precheckOwner is a host flash's precheck of its sled config's owner,
// through which its phase 2 is named: it fails closed as owner does, so an
// unknown owner or a disabled target stops the update before phase 1 is
// written. Without the sled table the sled is found only at the phase 2
// step, which checks the owner then.
func (l sledLookup) precheckOwner(ctx context.Context, serial string) error {
	if l.direct || l.db == nil {
		return nil
	}
	s, err := l.find(ctx, serial, uuid.Nil)
	if err != nil {
		return err
	}
	_, err = l.owner(ctx, s)
	return err
}

// sledAgentErr: transport errors and 5xx stay retryable; a refused API
// version and other 4xx answers end the step.
func sledAgentErr(sled uuid.UUID, err error, what string) error {
	if err == nil || sledagent.IsRetryable(err) {
		if err != nil {
			return fmt.Errorf("sled %s: %s: %w", sled, what, err)
		}
		return nil
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return err
	}
	if apiversion.IsRefused(err) {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("sled %s: %s: %v", sled, what, err), failure.APIVersionRefused, nil)
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("sled %s: %s: %v", sled, what, err), failure.SledAgentRejected, err)
}

// bootPartitions reads the sled's inventory's boot partitions (the sled's
// own inventory, checked by sled ID).
func bootPartitions(ctx context.Context, s hostSled) (*sledagent.Inventory, sledagent.BootPartitions, error) {
	inv, err := inventoryOf(ctx, s)
	if err != nil {
		return nil, sledagent.BootPartitions{}, err
	}
	if inv.LastReconciliation == nil || inv.LastReconciliation.BootPartitions == nil {
		return inv, sledagent.BootPartitions{}, fmt.Errorf("sled %s: inventory has no boot_partitions yet (no reconciliation)", s.id)
	}
	return inv, *inv.LastReconciliation.BootPartitions, nil
}

// inventoryOf reads the sled's own inventory (checked by sled ID) and
// refuses it (WrongDevice) unless its baseboard is the SP's: a sled ID that
// names another sled would otherwise aim phase 2, the zone safety check and
// the boot check at that sled. The real sled-agent's Inventory always has
// baseboard_id (sled-agent's OpenAPI document, schema BaseboardId).
func inventoryOf(ctx context.Context, s hostSled) (*sledagent.Inventory, error) {
	inv, err := s.client.InventoryOf(ctx, s.id)
	if err != nil {
		return nil, sledAgentErr(s.id, err, "read inventory")
	}
	got := ""
	if inv.BaseboardID != nil {
		got = inv.BaseboardID.SerialNumber
	}
	if got == "" || got != s.serial {
		return nil, mgsFatal(failure.WrongDevice, "sled %s's sled-agent reports baseboard serial %q, not the SP's %q: it is another sled's (check the update's sledId)",
			s.id, got, s.serial)
	}
	return inv, nil
}
