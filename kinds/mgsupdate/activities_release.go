package mgsupdate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/apiversion"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleet/nexusdb"
	"github.com/fleetsaga/fleetsaga/fleet/nexusexternal"
	"github.com/fleetsaga/fleetsaga/internal/redact"
)

// RackRelease is the target release of a device's rack, read from Nexus's
// external API. Once a rack has one (a TUF repository's system version),
// Nexus's planner plans the MGS-driven updates of its SPs, RoTs and hosts
// toward it, and so undoes any made behind its back; with the initial
// (install dataset) release it plans none (omicron
// nexus/reconfigurator/planning/src/mgs_updates/mod.rs, "system in initial
// release state"; nexus/src/app/update.rs update_status_external: the
// target release is null until a repository is the target).
type RackRelease struct {
	// Rack is the rack's ID, or the endpoint's URL when it names no {rack}.
	Rack    string `json:"rack"`
	Version string `json:"version"`
	// Suspended: Nexus's automatic update is suspended: the target
	// release's generation is below the target blueprint's
	// target_release_minimum_generation (omicron nexus/src/app/update.rs),
	// which a manual update (a mupdate) raises. It resumes once the
	// recovery is finished (PUT /v1/system/update/recovery-finish) or a
	// newer target release is set.
	Suspended bool `json:"suspended,omitempty"`
}

// releaseOwns says, for an operator, why a device whose rack has a target
// release is refused (what names the device; stage, when set, what was
// stopped).
func releaseOwns(what string, r RackRelease, stage string) error {
	suspended := ""
	if r.Suspended {
		suspended = " (its automatic update is suspended after a manual update, and resumes when Oxide support finishes the recovery, PUT /v1/system/update/recovery-finish, or a newer target release is set)"
	}
	if stage != "" {
		stage += ": "
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"%s%s belongs to rack %s's own update system: the rack has target release %s%s, toward which Nexus's planner updates its SPs, RoTs and hosts, "+
			"so an update made here would be undone; refusing to update it: update it through the rack's update system (Nexus's target release)",
		stage, what, r.Rack, r.Version, suspended), failure.OwnedByTargetRelease, nil)
}

// targetRelease reads the target release of the rack of the SP with this
// serial (nil: none, the rack runs its initial release). Only direct mode
// asks nothing. No endpoint is OwnerUnknown, as a missing lockstep
// endpoint is (fleet.NoReleaseOwnerConfigured); a switch's SP or a sled
// the sled table does not know, with an endpoint that names {rack}, too.
// A refused token, a refused API version or another 4xx is non-retryable;
// a transport error or a 5xx is retried.
func (o ownerLookup) targetRelease(ctx context.Context, sp mgs.SpIdentifier, serial string) (*RackRelease, error) {
	if o.direct {
		return nil, nil
	}
	if o.external == "" {
		return nil, mgsFatal(failure.OwnerUnknown, "SP %s: %s", serial, fleet.NoReleaseOwnerConfigured)
	}
	rack := redact.URL(o.external) // a single rack's endpoint names it
	if strings.Contains(o.external, "{rack}") {
		id, err := o.rackOf(ctx, sp, serial, "Nexus external")
		if err != nil {
			return nil, err
		}
		rack = id.String()
	}
	if o.externalCAErr != nil {
		return nil, mgsFatal(failure.NexusExternalRejected, "SP %s: --nexus-external-ca: %v", serial, o.externalCAErr)
	}
	ep := fleet.Endpoints{NexusExternal: o.external, NexusExternalTokenFile: o.tokenFile}
	hc := o.externalHTTP
	if hc == nil { // a lookup built without newOwnerLookup (tests)
		hc = o.http
	}
	st, err := nexusexternal.New(ep.NexusExternalURL(rack), ep.NexusExternalTokenFileOf(rack), hc).UpdateStatus(ctx)
	if err != nil {
		return nil, externalErr(serial, err)
	}
	if st.TargetRelease == nil {
		return nil, nil
	}
	return &RackRelease{Rack: rack, Version: st.TargetRelease.Version, Suspended: st.Suspended}, nil
}

// rackOf finds the rack of a sled's SP in Nexus's sled table (endpoint
// names the API whose URL names {rack}).
func (o ownerLookup) rackOf(ctx context.Context, sp mgs.SpIdentifier, serial, endpoint string) (uuid.UUID, error) {
	if sp.Type != mgs.SpTypeSled {
		return uuid.Nil, mgsFatal(failure.OwnerUnknown, "SP %s (serial %s) is not a sled's: the %s endpoint names {rack}, and Nexus's database records the rack of sleds only, "+
			"so this SP's rack, and so its owner, is unknown; run its updates from a worker whose endpoints name that rack's Nexus (no {rack})", sp, serial, endpoint)
	}
	if o.db == nil {
		return uuid.Nil, mgsFatal(failure.NexusDBNotConfigured, "the %s endpoint names {rack}: the sled table (fleet endpoint nexusDB) is needed to find the rack of SP %s", endpoint, serial)
	}
	s, err := o.db.SledBySerial(ctx, serial)
	if errors.Is(err, nexusdb.ErrNoSuchSled) {
		return uuid.Nil, mgsFatal(failure.OwnerUnknown, "no sled with serial %s in Nexus's sled table: its rack, and so its owner, is unknown", serial)
	}
	return s.RackID, err // a database error is retried
}

// externalErr: retryable errors stay plain; a refused API version is
// APIVersionRefused; the rest (the token, other 4xx, a malformed answer)
// is NexusExternalRejected. The messages name the token file, never the
// token.
func externalErr(serial string, err error) error {
	what := "SP " + serial + ": read the rack's target release"
	switch {
	case nexusexternal.IsRetryable(err):
		return fmt.Errorf("%s: %w", what, err)
	case apiversion.IsRefused(err):
		return temporal.NewNonRetryableApplicationError(what+": "+err.Error(), failure.APIVersionRefused, nil)
	}
	return temporal.NewNonRetryableApplicationError(what+": "+err.Error(), failure.NexusExternalRejected, nil)
}

// refuseIfReleased is the check right before a host's new boot slot, or a
// takeover's reset of someone else's complete update: a target release
// set since the precheck stops it before the device runs what it would
// activate (a host's slot is persistent, and the compensation puts the
// old one back).
func (a *MGSActivities) refuseIfReleased(ctx context.Context, sp mgs.SpIdentifier, serial, what string) error {
	r, err := a.owner.targetRelease(ctx, sp, serial)
	if err != nil || r == nil {
		return err
	}
	return releaseOwns(what, *r, "stopped before activating the new image (the active slot is unchanged)")
}

// refuseBeforeSend is an SP update's last target-release check, right
// before its image is sent (host flash checks again before its boot).
// Once delivered, an SP image is armed in the inactive bank: the next SP
// reset by anyone activates it (Nexus's host phase 1 update resets the SP,
// omicron nexus/mgs-updates/src/host_phase1_updater.rs), so a delivered
// image is always activated, and the check that may refuse comes first.
func (a *MGSActivities) refuseBeforeSend(ctx context.Context, set *mgs.Set, in StartUpdateInput) error {
	if !in.RackRelease {
		return nil
	}
	st, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.SpState, error) { return c.SpState(ctx, in.SP) })
	if err != nil {
		return mgsErr(err, "read SP state")
	}
	r, err := a.owner.targetRelease(ctx, in.SP, st.SerialNumber)
	if err != nil || r == nil {
		return err
	}
	return releaseOwns(fmt.Sprintf("SP %s (serial %s)", in.SP, st.SerialNumber), *r, "stopped before sending the image (nothing was written)")
}

// releaseNoteTimeout bounds the read of a target release that is only
// noted (a delivered SP image is activated whatever it says): an
// unreachable Nexus must not hold up the reset for the HTTP client's
// whole timeout.
const releaseNoteTimeout = 10 * time.Second

// releaseAppeared reads, for the ledger, a target release set while our
// SP image was delivered (nil: none, or it could not be read). It never
// stops the reset: Nexus's planner converges the SP to its release anyway.
func (a *MGSActivities) releaseAppeared(ctx context.Context, in PostUpdateInput) *RackRelease {
	rctx, cancel := context.WithTimeout(ctx, releaseNoteTimeout)
	defer cancel()
	r, err := a.owner.targetRelease(rctx, in.SP, in.Serial)
	if err != nil || r == nil {
		return nil
	}
	a.event(ctx, in.AttemptID, "target-release-appeared", "", releaseAppearedNote(in.UpdateID, *r))
	return r
}

// releaseAppearedNote says why an SP was reset although its rack now has
// a target release.
func releaseAppearedNote(id uuid.UUID, r RackRelease) string {
	return fmt.Sprintf("rack %s got target release %s while update %s was delivered: the SP was reset to activate it anyway "+
		"(a delivered image is armed, and the next reset by anyone would activate it); Nexus's planner now updates the SP toward %s",
		r.Rack, r.Version, id, r.Version)
}
