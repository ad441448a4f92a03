package zoneexpunge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/apiversion"
	"github.com/fleetsaga/fleetsaga/fleet/nexusdb"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// ZoneActivities drive sled-agents, the Nexus saga table and the ledger for
// a zone expunge.
type ZoneActivities struct {
	Store *ledger.Store
	Fleet fleet.Endpoints
	HTTP  *http.Client
	// Nexus is the saga table; nil when no Nexus database is configured
	// (expunging a Nexus zone then fails at the reassignment step).
	Nexus *nexusdb.DB
	// Identity names this worker in the event log.
	Identity string
}

// NewZoneActivities builds the activities; the Nexus database is opened
// lazily by database/sql (no connection until first use).
func NewZoneActivities(store *ledger.Store, ep fleet.Endpoints, hc *http.Client, identity string) *ZoneActivities {
	if hc == nil {
		hc = http.DefaultClient
	}
	z := &ZoneActivities{Store: store, Fleet: ep, HTTP: hc, Identity: identity}
	if ep.NexusDB != "" {
		if db, err := nexusdb.Open(ep.NexusDB); err == nil {
			z.Nexus = db
		}
	}
	return z
}

// sledAgentErr is the one place that turns a sled-agent client error into an
// activity error: retryable ones stay plain (Temporal retries), others
// become typed non-retryable errors.
func sledAgentErr(sled uuid.UUID, err error) error {
	if err == nil || sledagent.IsRetryable(err) {
		return err
	}
	if apiversion.IsRefused(err) {
		// No cause: its text is the message already (one clear message).
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("sled %s: %v", sled, err), failure.APIVersionRefused, nil)
	}
	var he *sledagent.Error
	if errors.As(err, &he) && he.StatusCode == http.StatusNotFound {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("sled %s: %v", sled, err), failure.SledNotFound, err)
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("sled %s: %v", sled, err), failure.SledAgentRejected, err)
}

func zoneFail(typ, format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), typ, nil)
}

func (a *ZoneActivities) event(ctx context.Context, attempt uuid.UUID, step, state, msg string) error {
	if attempt == uuid.Nil {
		return nil
	}
	worker := activities.WorkerIdentity(ctx, a.Identity)
	return a.Store.AppendEvent(ctx, ledger.Event{AttemptID: attempt, Step: step, State: state, Message: msg, Worker: worker})
}

// zoneKind finds a zone's type in a sled's inventory ("" when unknown).
func zoneKind(inv *sledagent.Inventory, zone uuid.UUID) (kind string, inConfig bool) {
	if c := inv.LedgeredSledConfig; c != nil {
		if z, ok := c.Zones[zone]; ok {
			return z.ZoneType.Type, true
		}
	}
	if lr := inv.LastReconciliation; lr != nil {
		if z, ok := lr.LastReconciledConfig.Zones[zone]; ok {
			return z.ZoneType.Type, false
		}
	}
	return "", false
}

// ZonePrecheckInput is step 1's input.
type ZonePrecheckInput struct {
	UpdateID  string      `json:"updateId"`
	Sled      uuid.UUID   `json:"sled"`
	Zone      uuid.UUID   `json:"zone"`
	RackSleds []uuid.UUID `json:"rackSleds"`
}

// ZonePrecheck is what step 1 found.
type ZonePrecheck struct {
	Kind               string `json:"kind"`
	LedgeredGeneration uint64 `json:"ledgeredGeneration"`
	InConfig           bool   `json:"inConfig"`
	Present            bool   `json:"present"`
	// Existing is the ledger's record when the zone is already expunged
	// (the workflow resumes from it).
	Existing *ledger.ZoneDisposition `json:"existing,omitempty"`
	// ActiveAttempt is an attempt of this update still active (a previous
	// run ended without finishing it); the workflow continues it.
	ActiveAttempt *ledger.Attempt `json:"activeAttempt,omitempty"`
	NextAttempt   int             `json:"nextAttempt"`
	// OtherNexus are the in-service Nexus zones left after this expunge
	// (Nexus zones only).
	OtherNexus []uuid.UUID `json:"otherNexus,omitempty"`
	// Mode is who writes the sled's config (ModeOwner, ModeDirect) and
	// ModeReason why. In owner mode LedgeredGeneration is the larger of the
	// sled's and the target blueprint's generation for it.
	Mode       string `json:"mode,omitempty"`
	ModeReason string `json:"modeReason,omitempty"`
	// TargetID, BlueprintGeneration, NexusGeneration (owner mode): the
	// target blueprint, its generation for the sled, and the zone's
	// nexus_generation (Nexus zones).
	TargetID            uuid.UUID `json:"targetId,omitzero"`
	BlueprintGeneration uint64    `json:"blueprintGeneration,omitempty"`
	NexusGeneration     uint64    `json:"nexusGeneration,omitempty"`
}

// PrecheckZoneExpunge is step 1: the sled and zone exist, whether the zone
// is already expunged, and (Nexus) that another in-service Nexus remains.
func (a *ZoneActivities) PrecheckZoneExpunge(ctx context.Context, in ZonePrecheckInput) (ZonePrecheck, error) {
	var out ZonePrecheck
	inv, err := a.inventory(ctx, in.Sled)
	if err != nil {
		return out, err
	}
	existing, err := a.Store.ZoneDisposition(ctx, in.Zone)
	switch {
	case errors.Is(err, ledger.ErrZoneNotExpunged):
	case err != nil:
		return out, err
	default:
		if existing.SledID != in.Sled {
			return out, zoneFail(failure.ZoneNotFound, "zone %s was expunged from sled %s, not %s", in.Zone, existing.SledID, in.Sled)
		}
		out.Existing = existing
	}
	out.LedgeredGeneration = inv.LedgeredGeneration()
	out.Kind, out.InConfig = zoneKind(inv, in.Zone)
	out.Present, _ = inv.ZonePresent(in.Zone)
	if out.Existing != nil && out.Existing.Completed() && (out.InConfig || out.Present) {
		return out, zoneFail(failure.ExpungeConflict,
			"the ledger has zone %s expunged and committed (as of generation %d), but sled %s still has it (ledgered generation %d, in its config %v, present %v): "+
				"the sled is the truth; find who put it back before expunging it again",
			in.Zone, out.Existing.ExpungedAsOf, in.Sled, out.LedgeredGeneration, out.InConfig, out.Present)
	}
	if out.Existing != nil {
		out.Kind = out.Existing.Kind
	} else if !out.InConfig && !out.Present {
		return out, zoneFail(failure.ZoneNotFound, "sled %s has no zone %s (ledgered generation %d)", in.Sled, in.Zone, out.LedgeredGeneration)
	}
	if out.Kind == "" {
		return out, zoneFail(failure.ZoneNotFound, "sled %s: zone %s is running but in no config; its kind is unknown", in.Sled, in.Zone)
	}

	if err := a.ownerPrecheck(ctx, in, &out); err != nil {
		return out, err
	}

	attempts, err := a.Store.Attempts(ctx, in.UpdateID)
	if err != nil {
		return out, err
	}
	out.NextAttempt = 1
	for i := range attempts {
		out.NextAttempt = max(out.NextAttempt, attempts[i].Attempt+1)
		if attempts[i].State.Active() {
			out.ActiveAttempt = &attempts[i]
		}
	}

	if out.Kind == sledagent.ZoneTypeNexus && out.Existing == nil {
		others, err := a.inServiceNexus(ctx, in.Sled, in.RackSleds, in.Zone)
		if err != nil {
			return out, err
		}
		if len(others) == 0 {
			return out, zoneFail(failure.LastNexusZone,
				"refusing to expunge Nexus zone %s: no other in-service Nexus zone found on the rack's sleds that answered", in.Zone)
		}
		out.OtherNexus = others
	}
	return out, nil
}

// nexusZone is a Nexus zone seen in a sled's inventory.
type nexusZone struct {
	id      uuid.UUID
	running bool // present with result ok
}

// skippedSleds are the sleds whose inventory a look over the rack could not
// read.
type skippedSleds struct {
	names []string
	// unanswered: at least one of them did not answer (a retryable error:
	// down, 5xx, timeout), so it may well run a live Nexus.
	unanswered bool
}

func (s *skippedSleds) add(sled uuid.UUID, err error) {
	s.names = append(s.names, fmt.Sprintf("%s (%v)", sled, err))
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() {
		s.unanswered = true
	}
}

// nexusZones lists the Nexus zones in the ledgered configs of the rack's
// sleds. The zone's own sled must answer; another sled that does not (down,
// unknown, or out for a while) is skipped and named in skipped: its Nexus
// zones can neither be counted as in service nor chosen as an owner, which
// errs on the safe side for both.
func (a *ZoneActivities) nexusZones(ctx context.Context, sled uuid.UUID, given []uuid.UUID) (zones []nexusZone, skipped skippedSleds, err error) {
	rack, err := a.rackSleds(ctx, sled, given)
	if err != nil {
		return nil, skipped, err
	}
	for _, s := range rack {
		inv, err := a.inventory(ctx, s)
		if err != nil {
			if s == sled || ctx.Err() != nil {
				return nil, skipped, err
			}
			activity.GetLogger(ctx).Warn("sled skipped: its inventory does not answer", "sled", s, "error", err)
			skipped.add(s, err)
			continue
		}
		if inv.LedgeredSledConfig == nil {
			continue
		}
		for _, id := range inv.LedgeredSledConfig.ZoneIDs() {
			if inv.LedgeredSledConfig.Zones[id].ZoneType.Type != sledagent.ZoneTypeNexus {
				continue
			}
			present, res := inv.ZonePresent(id)
			zones = append(zones, nexusZone{id: id, running: present && res.Result == sledagent.ResultOK})
		}
	}
	return zones, skipped, nil
}

// inServiceNexus returns the Nexus zones other than zone that the ledger has
// not expunged.
func (a *ZoneActivities) inServiceNexus(ctx context.Context, sled uuid.UUID, rack []uuid.UUID, zone uuid.UUID) ([]uuid.UUID, error) {
	zs, _, err := a.nexusZones(ctx, sled, rack)
	if err != nil {
		return nil, err
	}
	ids := make([]uuid.UUID, 0, len(zs))
	for _, z := range zs {
		ids = append(ids, z.id)
	}
	expunged, err := a.Store.ExpungedZones(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []uuid.UUID
	for _, id := range ids {
		if id != zone && !expunged[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// ZoneIntentInput is step 2's input (after the attempt is recorded).
type ZoneIntentInput struct {
	AttemptID    uuid.UUID `json:"attemptId"`
	Sled         uuid.UUID `json:"sled"`
	Zone         uuid.UUID `json:"zone"`
	Kind         string    `json:"kind"`
	ExpungedAsOf uint64    `json:"expungedAsOf"`
	// Mode and ModeReason go to the event log with the intent.
	Mode       string `json:"mode,omitempty"`
	ModeReason string `json:"modeReason,omitempty"`
}

// RecordZoneExpungeIntent is step 2: the zone's disposition becomes
// expunged as of the given generation. An existing record stands and is
// returned (resume).
func (a *ZoneActivities) RecordZoneExpungeIntent(ctx context.Context, in ZoneIntentInput) (ledger.ZoneDisposition, error) {
	z, err := a.Store.RecordZoneExpunge(ctx, ledger.ExpungeIntent{
		ZoneID: in.Zone, SledID: in.Sled, Kind: in.Kind, ExpungedAsOf: in.ExpungedAsOf, AttemptID: in.AttemptID,
	})
	if err != nil {
		return ledger.ZoneDisposition{}, err
	}
	msg := fmt.Sprintf("zone %s (%s) on sled %s expunged as of sled config generation %d", in.Zone, z.Kind, in.Sled, z.ExpungedAsOf)
	if in.Mode != "" {
		msg += fmt.Sprintf("; mode %s: %s", in.Mode, in.ModeReason)
	}
	return *z, a.event(ctx, in.AttemptID, "zone.expunged", "", msg)
}

// ZoneRebaseInput moves an expunge to a newer generation.
type ZoneRebaseInput struct {
	AttemptID uuid.UUID `json:"attemptId"`
	Zone      uuid.UUID `json:"zone"`
	From      uint64    `json:"from"`
	To        uint64    `json:"to"`
}

// RebaseZoneExpunge records that the expunge now happens as of To (the
// sled moved on to From-or-later with the zone still in its config).
func (a *ZoneActivities) RebaseZoneExpunge(ctx context.Context, in ZoneRebaseInput) (ledger.ZoneDisposition, error) {
	z, err := a.Store.RebaseZoneExpunge(ctx, in.Zone, in.From, in.To)
	if err != nil {
		return ledger.ZoneDisposition{}, err
	}
	return *z, a.event(ctx, in.AttemptID, fmt.Sprintf("zone.rebase.%d", in.To), "",
		fmt.Sprintf("sled moved on: expunge rebased from generation %d to %d", in.From, in.To))
}

// ZonePutInput is step 3's input.
type ZonePutInput struct {
	AttemptID    uuid.UUID `json:"attemptId"`
	Sled         uuid.UUID `json:"sled"`
	Zone         uuid.UUID `json:"zone"`
	ExpungedAsOf uint64    `json:"expungedAsOf"`
	// Deadline bounds the retrying (set once by the workflow, so worker
	// restarts do not extend it).
	Deadline     time.Time     `json:"deadline"`
	RetryInitial time.Duration `json:"retryInitial"`
	RetryMax     time.Duration `json:"retryMax"`
}

// ZonePutResult is how step 3 ended.
type ZonePutResult struct {
	// LedgeredGeneration is the sled's generation without the zone.
	LedgeredGeneration uint64 `json:"ledgeredGeneration"`
	Attempts           int    `json:"attempts"`
	LastError          string `json:"lastError,omitempty"`
}

// zonePutHeartbeat is step 3's heartbeat (resumed after a worker restart).
type zonePutHeartbeat struct {
	Attempts  int    `json:"attempts"`
	LastError string `json:"lastError,omitempty"`
}

// PutConfigWithoutZone is step 3: PUT the sled's ledgered config at
// ExpungedAsOf without the zone, retrying with backoff while the sled fails
// to remove it, until the sled ledgers it or Deadline passes. A sled already
// past ExpungedAsOf without the zone counts as done; past it with the zone
// still in its config is a StaleGeneration error (rebase, never overwrite).
func (a *ZoneActivities) PutConfigWithoutZone(ctx context.Context, in ZonePutInput) (ZonePutResult, error) {
	if in.ExpungedAsOf < 1 || in.Deadline.IsZero() {
		return ZonePutResult{}, zoneFail(failure.InvalidZoneExpunge, "config PUT needs a generation and a deadline")
	}
	if err := a.requireDirectMode(fmt.Sprintf("write sled %s's config without zone %s", in.Sled, in.Zone)); err != nil {
		return ZonePutResult{}, err
	}
	var hb zonePutHeartbeat
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &hb)
	}
	c, err := a.sled(ctx, in.Sled)
	if err != nil {
		return ZonePutResult{}, err
	}
	delay := max(in.RetryInitial, 10*time.Millisecond)
	// accepted: the last PUT was accepted, so the next inventory read should
	// show the sled moved on. If it does not, the re-reads are paced and
	// bounded by the deadline, not a tight loop.
	accepted := false
	// rejected: the last PUT got a 400. The real sled-agent's 400s carry no
	// error_code, so the re-read decides: a sled that moved on to our
	// generation or past it is handled above (done, or rebase); one still
	// below it refused the config itself, which retrying cannot change.
	var rejected error
	for {
		activity.RecordHeartbeat(ctx, hb)
		inv, err := c.InventoryOf(ctx, in.Sled)
		if err == nil {
			gen := inv.LedgeredGeneration()
			_, inConfig := zoneKind(inv, in.Zone)
			if gen >= in.ExpungedAsOf {
				if inConfig {
					return ZonePutResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
						"sled %s ledgered generation %d, which still has zone %s: rebase past it", in.Sled, gen, in.Zone),
						failure.StaleGeneration, nil, gen)
				}
				res := ZonePutResult{LedgeredGeneration: gen, Attempts: hb.Attempts, LastError: hb.LastError}
				return res, a.event(ctx, in.AttemptID, fmt.Sprintf("zone.config.%d", in.ExpungedAsOf), "", fmt.Sprintf(
					"sled %s ledgered generation %d without zone %s after %d PUT attempts", in.Sled, gen, in.Zone, hb.Attempts))
			}
			if rejected != nil {
				return ZonePutResult{}, sledAgentErr(in.Sled, fmt.Errorf("%w (the sled is still at generation %d)", rejected, gen))
			}
			if inv.LedgeredSledConfig == nil {
				return ZonePutResult{}, zoneFail(failure.SledAgentRejected, "sled %s has no ledgered config to remove zone %s from", in.Sled, in.Zone)
			}
			if !accepted {
				hb.Attempts++
				err = c.PutOmicronConfig(ctx, inv.LedgeredSledConfig.WithoutZone(in.ExpungedAsOf, in.Zone))
				if sledagent.IsBadRequest(err) {
					// Someone else may have ledgered meanwhile: re-read at once.
					rejected, hb.LastError = err, err.Error()
					continue
				}
				accepted = err == nil
				if accepted {
					continue
				}
			} else {
				accepted = false
				hb.LastError = fmt.Sprintf("sled accepted generation %d but its inventory still shows %d", in.ExpungedAsOf, gen)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return ZonePutResult{}, ctx.Err()
			}
			if !sledagent.IsRetryable(err) {
				return ZonePutResult{}, sledAgentErr(in.Sled, err)
			}
			hb.LastError = err.Error()
			activity.GetLogger(ctx).Info("sled config PUT failed; retrying", "sled", in.Sled, "zone", in.Zone,
				"attempt", hb.Attempts, "error", err)
		}
		if time.Now().Add(delay).After(in.Deadline) {
			return ZonePutResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"sled %s did not ledger generation %d without zone %s by %s (%d PUT attempts, last error: %s); the expunge is recorded and can be resumed",
				in.Sled, in.ExpungedAsOf, in.Zone, in.Deadline.Format(time.RFC3339), hb.Attempts, hb.LastError),
				failure.ZoneRemovalTimedOut, err, hb.Attempts)
		}
		if err := activities.SleepCtx(ctx, delay); err != nil {
			return ZonePutResult{}, err
		}
		delay = min(delay*2, max(in.RetryMax, in.RetryInitial))
	}
}

// ZoneGoneInput is step 4's input.
type ZoneGoneInput struct {
	AttemptID    uuid.UUID     `json:"attemptId"`
	Sled         uuid.UUID     `json:"sled"`
	Zone         uuid.UUID     `json:"zone"`
	ExpungedAsOf uint64        `json:"expungedAsOf"`
	Deadline     time.Time     `json:"deadline"`
	PollInterval time.Duration `json:"pollInterval"`
}

// ZoneGoneResult is the inventory proof.
type ZoneGoneResult struct {
	ObservedGeneration uint64 `json:"observedGeneration"`
}

// AwaitZoneGone is step 4: poll inventory until it proves the zone removed
// (sledagent.Inventory.ZoneGone: generation >= ExpungedAsOf ledgered and
// reconciled, the zone absent and not failing). Today's sled-agent removes
// zones after the PUT returned and retries failed removals itself, so this
// is where a failing removal waits. It then marks the zone ready_for_cleanup
// in the ledger.
func (a *ZoneActivities) AwaitZoneGone(ctx context.Context, in ZoneGoneInput) (ZoneGoneResult, error) {
	c, err := a.sled(ctx, in.Sled)
	if err != nil {
		return ZoneGoneResult{}, err
	}
	every := max(in.PollInterval, 10*time.Millisecond)
	var last string
	for {
		activity.RecordHeartbeat(ctx, last)
		inv, err := c.InventoryOf(ctx, in.Sled)
		switch {
		case err == nil:
			gen := inv.LedgeredGeneration()
			_, inConfig := zoneKind(inv, in.Zone)
			if gen >= in.ExpungedAsOf && inConfig {
				return ZoneGoneResult{}, zoneFail(failure.ZoneReinstated,
					"sled %s ledgered generation %d with zone %s back in it", in.Sled, gen, in.Zone)
			}
			gone, why := inv.ZoneGone(in.Zone, in.ExpungedAsOf)
			if gone {
				if _, err := a.Store.MarkZoneReadyForCleanup(ctx, in.Zone, gen); err != nil {
					return ZoneGoneResult{}, err
				}
				return ZoneGoneResult{ObservedGeneration: gen}, a.event(ctx, in.AttemptID, "zone.ready_for_cleanup", "",
					fmt.Sprintf("inventory: sled %s at generation %d, zone %s gone", in.Sled, gen, in.Zone))
			}
			last = why
		case !sledagent.IsRetryable(err):
			return ZoneGoneResult{}, sledAgentErr(in.Sled, err)
		default:
			last = err.Error()
		}
		if !in.Deadline.IsZero() && time.Now().After(in.Deadline) {
			return ZoneGoneResult{}, zoneFail(failure.InventoryProofTimedOut,
				"inventory of sled %s never proved zone %s gone at generation >= %d by %s (last: %s)",
				in.Sled, in.Zone, in.ExpungedAsOf, in.Deadline.Format(time.RFC3339), last)
		}
		if err := activities.SleepCtx(ctx, every); err != nil {
			return ZoneGoneResult{}, err
		}
	}
}

// ZoneOwnerInput chooses the Nexus that adopts an expunged Nexus's sagas.
type ZoneOwnerInput struct {
	// AttemptID, when set, gets an event saying why a preferred owner was passed over.
	AttemptID uuid.UUID   `json:"attemptId,omitzero"`
	Sled      uuid.UUID   `json:"sled"`
	Zone      uuid.UUID   `json:"zone"`
	RackSleds []uuid.UUID `json:"rackSleds"`
	Preferred uuid.UUID   `json:"preferred,omitzero"`
}

// ChooseSagaOwner picks a live Nexus: in its sled's ledgered config, running
// (inventory result ok) and not expunged in the ledger. Preferred wins when
// it is live; otherwise (no preference, or the preferred one left service)
// the lowest zone ID, so a retry picks the same one.
func (a *ZoneActivities) ChooseSagaOwner(ctx context.Context, in ZoneOwnerInput) (uuid.UUID, error) {
	zs, skipped, err := a.nexusZones(ctx, in.Sled, in.RackSleds)
	if err != nil {
		return uuid.Nil, err
	}
	ids := make([]uuid.UUID, 0, len(zs))
	for _, z := range zs {
		ids = append(ids, z.id)
	}
	expunged, err := a.Store.ExpungedZones(ctx, ids)
	if err != nil {
		return uuid.Nil, err
	}
	sameGeneration, err := a.sameGenerationAs(ctx, in.Sled, in.Zone)
	if err != nil {
		return uuid.Nil, err
	}
	var live []uuid.UUID
	for _, z := range zs {
		if z.running && z.id != in.Zone && !expunged[z.id] && sameGeneration(z.id) {
			live = append(live, z.id)
		}
	}
	if in.Preferred != uuid.Nil && slices.Contains(live, in.Preferred) {
		return in.Preferred, nil
	}
	switch {
	case len(live) == 0 && skipped.unanswered:
		// A sled that did not answer may run the live Nexus: retried (the
		// workflow bounds how long), never a final "none".
		return uuid.Nil, fmt.Errorf("no live Nexus zone found yet to adopt the sagas of %s: sleds that did not answer: %v",
			in.Zone, skipped.names)
	case len(live) == 0:
		return uuid.Nil, zoneFail(failure.NoLiveNexus, "no live Nexus zone on the rack's sleds can adopt the sagas of %s (every sled answered; unreadable: %v)",
			in.Zone, skipped.names)
	}
	slices.SortFunc(live, func(x, y uuid.UUID) int { return strings.Compare(x.String(), y.String()) })
	if in.Preferred != uuid.Nil {
		// A preferred owner that left service gives way: the sagas must not
		// stay on a stopped Nexus. The ledger says who was chosen and why.
		why := "not running in its sled's inventory"
		if expunged[in.Preferred] {
			why = "expunged"
		} else if !slices.ContainsFunc(zs, func(z nexusZone) bool { return z.id == in.Preferred }) {
			why = "in no answering sled's config"
		}
		return live[0], a.event(ctx, in.AttemptID, "zone.owner."+live[0].String(), "", fmt.Sprintf(
			"preferred saga owner %s is %s; chose live Nexus %s instead", in.Preferred, why, live[0]))
	}
	return live[0], nil
}

// ZoneReassignInput is step 5's input.
type ZoneReassignInput struct {
	AttemptID uuid.UUID `json:"attemptId"`
	Zone      uuid.UUID `json:"zone"`
	NewOwner  uuid.UUID `json:"newOwner"`
}

// ZoneReassignResult is what one reassignment did.
type ZoneReassignResult struct {
	Moved []uuid.UUID `json:"moved"`
	// Remaining is what was still on the zone right after, in the same transaction.
	Remaining int64 `json:"remaining"`
}

// ReassignNexusSagas is step 5: move every unfinished saga of the expunged
// Nexus to NewOwner in one transaction (adopt_generation bumped). It refuses
// unless the ledger has the zone ready_for_cleanup: the gate is checked
// here too, not only by the workflow's ordering. The sagas are recorded in
// the ledger before and after the move, so a retry loses none.
func (a *ZoneActivities) ReassignNexusSagas(ctx context.Context, in ZoneReassignInput) (ZoneReassignResult, error) {
	var out ZoneReassignResult
	if err := a.requireDirectMode(fmt.Sprintf("move the sagas of Nexus %s", in.Zone)); err != nil {
		return out, err
	}
	z, err := a.Store.ZoneDisposition(ctx, in.Zone)
	if errors.Is(err, ledger.ErrZoneNotExpunged) {
		return out, zoneFail(failure.GateNotProven, "zone %s is not expunged in the ledger", in.Zone)
	}
	if err != nil {
		return out, err
	}
	if !z.ReadyForCleanup {
		return out, zoneFail(failure.GateNotProven,
			"refusing to reassign sagas of Nexus %s: inventory has not proven it gone (expunged as of %d, not ready for cleanup)", in.Zone, z.ExpungedAsOf)
	}
	if a.Nexus == nil {
		return out, zoneFail(failure.NexusDBNotConfigured, "no Nexus database configured (fleet endpoint nexusDB)")
	}
	planned, err := a.Nexus.UnfinishedSagas(ctx, in.Zone)
	if err != nil {
		return out, err
	}
	rec := ledger.SagaReassignment{ZoneID: in.Zone, AttemptID: in.AttemptID, NewOwner: in.NewOwner, Sagas: planned}
	if err := a.Store.RecordSagaReassignment(ctx, rec); err != nil {
		return out, err
	}
	// The owner is re-checked inside the move: its expunge cannot be
	// recorded while the move runs, and a move after it is refused.
	var res nexusdb.Reassignment
	err = a.Store.MoveSagasTo(ctx, in.NewOwner, func(ctx context.Context) error {
		var err error
		res, err = a.Nexus.ReassignSagas(ctx, in.Zone, in.NewOwner)
		return err
	})
	if errors.Is(err, ledger.ErrOwnerExpunged) {
		return out, zoneFail(failure.OwnerGone, "new saga owner %s was expunged before the sagas of %s moved to it; nothing moved", in.NewOwner, in.Zone)
	}
	if err != nil {
		return out, err
	}
	rec.Sagas = res.Sagas
	if err := a.Store.RecordSagaReassignment(ctx, rec); err != nil {
		return out, err
	}
	out.Moved, out.Remaining = res.Sagas, res.Remaining
	return out, nil
}

// CountUnfinishedSagas is step 5's verification.
func (a *ZoneActivities) CountUnfinishedSagas(ctx context.Context, zone uuid.UUID) (int64, error) {
	if a.Nexus == nil {
		return 0, zoneFail(failure.NexusDBNotConfigured, "no Nexus database configured (fleet endpoint nexusDB)")
	}
	return a.Nexus.CountUnfinished(ctx, zone)
}

// ZoneCommitInput is step 6's input.
type ZoneCommitInput struct {
	AttemptID uuid.UUID `json:"attemptId"`
	Zone      uuid.UUID `json:"zone"`
	NewOwner  uuid.UUID `json:"newOwner,omitzero"`
}

// CommitZoneExpunge is step 6: the expunge is complete, with the number of
// sagas the ledger recorded as moved and their new owner.
func (a *ZoneActivities) CommitZoneExpunge(ctx context.Context, in ZoneCommitInput) (ledger.ZoneDisposition, error) {
	moved, err := a.Store.ReassignedSagas(ctx, in.Zone)
	if err != nil {
		return ledger.ZoneDisposition{}, err
	}
	z, err := a.Store.CompleteZoneExpunge(ctx, in.Zone, len(moved), in.NewOwner)
	if errors.Is(err, ledger.ErrNotReadyForCleanup) {
		return ledger.ZoneDisposition{}, zoneFail(failure.GateNotProven, "%v", err)
	}
	if err != nil {
		return ledger.ZoneDisposition{}, err
	}
	return *z, a.event(ctx, in.AttemptID, "zone.committed", "", fmt.Sprintf(
		"zone %s expunge committed: %d sagas moved to %s", in.Zone, z.SagasMoved, z.SagaNewOwner))
}
