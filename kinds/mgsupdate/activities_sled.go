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
	db       *nexusdb.DB
	http     *http.Client
}

func newSledLookup(ep fleet.Endpoints, hc *http.Client) sledLookup {
	l := sledLookup{template: ep.SledAgent, lockstep: ep.NexusLockstep, http: hc}
	if ep.NexusDB != "" {
		l.db, _ = nexusdb.Open(ep.NexusDB) // lazy: no connection until used
	}
	return l
}

// hostSled is a host's sled: its ID, rack and sled-agent.
type hostSled struct {
	id     uuid.UUID
	rack   uuid.UUID
	client *sledagent.Client
	// upload is the same sled-agent without the fleet request timeout,
	// for the phase 2 upload: its stalls bound it instead
	// (MGSActivities.phase2UploadStall).
	upload *sledagent.Client
}

// sled is the hostSled whose sled-agent is at url.
func (l sledLookup) sled(id, rack uuid.UUID, url string) hostSled {
	hc := l.http
	if hc == nil {
		hc = http.DefaultClient
	}
	untimed := *hc
	untimed.Timeout = 0
	return hostSled{id: id, rack: rack, client: sledagent.New(url, hc), upload: sledagent.New(url, &untimed)}
}

// find locates the sled whose SP has this serial. A sled ID given by the
// caller is used with the sledAgent URL template when there is no sled
// table.
func (l sledLookup) find(ctx context.Context, serial string, id uuid.UUID) (hostSled, error) {
	if l.db != nil {
		s, err := l.db.SledBySerial(ctx, serial)
		if errors.Is(err, nexusdb.ErrNoSuchSled) {
			return hostSled{}, mgsFatal(failure.SledNotFound, "no sled with serial %s in Nexus's sled table: its sled-agent cannot be found", serial)
		}
		if err != nil {
			return hostSled{}, err // database: retried
		}
		return l.sled(s.ID, s.RackID, s.SledAgentURL()), nil
	}
	if l.template != "" && id != uuid.Nil {
		return l.sled(id, uuid.Nil, strings.ReplaceAll(l.template, "{sled}", id.String())), nil
	}
	return hostSled{}, mgsFatal(failure.NexusDBNotConfigured,
		"the host's phase 2 is written by its sled-agent, found in Nexus's sled table (fleet endpoint nexusDB); without one, give the update's sledId and a sledAgent endpoint")
}

// configOwner is the target blueprint that owns the sled's config, or nil
// when fleetsaga writes it itself (no lockstep API, the target disabled,
// or the sled not active in it): the same rule as zone expunge's.
type configOwner struct {
	client *nexuslockstep.Client
	target nexuslockstep.Target
	bp     *nexuslockstep.Blueprint
}

func (l sledLookup) owner(ctx context.Context, s hostSled) (*configOwner, error) {
	if l.lockstep == "" || (strings.Contains(l.lockstep, "{rack}") && s.rack == uuid.Nil) {
		return nil, nil
	}
	c := nexuslockstep.New(strings.ReplaceAll(l.lockstep, "{rack}", s.rack.String()), l.http)
	t, err := c.Target(ctx)
	if nexuslockstep.IsNoLockstepAPI(err) {
		return nil, nil
	}
	if err != nil {
		return nil, lockstepErr(err)
	}
	bp, err := c.Blueprint(ctx, t.TargetID)
	if err != nil {
		return nil, lockstepErr(err)
	}
	if sc, ok := bp.Sleds[s.id]; !t.Enabled || !ok || sc.State != "active" {
		return nil, nil
	}
	return &configOwner{client: c, target: t, bp: bp}, nil
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
	inv, err := s.client.InventoryOf(ctx, s.id)
	if err != nil {
		return nil, sledagent.BootPartitions{}, sledAgentErr(s.id, err, "read inventory")
	}
	if inv.LastReconciliation == nil || inv.LastReconciliation.BootPartitions == nil {
		return inv, sledagent.BootPartitions{}, fmt.Errorf("sled %s: inventory has no boot_partitions yet (no reconciliation)", s.id)
	}
	return inv, *inv.LastReconciliation.BootPartitions, nil
}
