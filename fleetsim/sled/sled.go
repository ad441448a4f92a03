// Package sled simulates the sled-agents of the racks in the fleet spec and
// the Nexus instances running in their Nexus zones.
//
// Each sled-agent serves, under /sled-agent/{sled}/, the sled-agent API
// subset fleetsaga drives (shapes from sled-agent-openapi-48.0.0.json):
//
//	PUT /omicron-config  the sled's whole config {generation, zones, ...}
//	GET /inventory       ledgered config, reconciler status, zones present
//
// in one of two modes (spec.Rack.SledAgentMode, docs/CONFORMANCE.md §D and §H):
//
//   - ledger-first (default, today's sled-agent): a PUT that passes the
//     generation checks is ledgered and answered 204 at once. A reconciler
//     per sled then removes the zones left out and starts the new ones in
//     the background, retrying failed removals every reconcileRetry, and
//     reports each zone's result in GET /inventory's last_reconciliation.
//     The PUT's success proves nothing about removal.
//   - remove-before-ledger (opt-in, the seed's rule): removal must succeed
//     before the new generation is ledgered. A failed removal fails the
//     request (500 ZoneRemovalFailed) and keeps the old ledger; the same
//     request sent again retries the removal, and a zone already gone counts
//     as removed.
//
// In both modes an older generation is a 400 "sled config generation out of
// date (got G1, have G2)" and the same generation with other contents a 400
// "sled config changed with the same generation (G)", with no error_code, as
// the real sled-agent answers. Removal takes Timings.ZoneRemovalTime
// (scaled). The fault zone_removal_failure (target zone/<uuid>, Times =
// attempts) makes removals fail.
//
// Nexus instances (see nexus.go) claim sagas in PostgreSQL while their zone
// is present on its sled, and stop only once the zone is really removed. With
// an empty Env.DatabaseURL the Nexus simulation is disabled: Nexus zones are
// still configured, listed and removed like any other zone, but nothing
// touches a database.
//
// GET /truth/sled reports, per sled, the ledgered generation, the zones
// present, removal attempts and results per zone; per Nexus, whether it runs,
// how many sagas it created, claimed, adopted and finished, and when it last
// claimed one.
package sled

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim/domain"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// Name is the domain's key under /truth.
const Name = "sled"

// APIVersion is the sled-agent API version fleetsim serves (the newest it
// accepts in the api-version header): sled-agent-openapi-48.0.0.json's.
const APIVersion = "48.0.0"

// maxConfigBytes bounds a PUT /omicron-config body.
const maxConfigBytes = 1 << 20

// reconcileRetry is how soon the ledger-first reconciler retries after a
// failed attempt (real time, scaled by SpeedUp). The real reconciler retries
// on a timer too; the value here is an order of magnitude, not omicron's.
const reconcileRetry = 30 * time.Second

// requiredConfigFields are OmicronSledConfig's required properties in the
// OpenAPI document; a real sled-agent rejects a body without them.
var requiredConfigFields = []string{"datasets", "disks", "generation", "measurements", "zones"}

// Domain is the simulated sled-agents and Nexus instances.
type Domain struct {
	env    domain.Env
	log    zerolog.Logger
	ctx    context.Context // cancelled by Close: ends removals and claim loops
	cancel context.CancelFunc

	sleds map[uuid.UUID]*sledAgent
	order []uuid.UUID

	db      *sql.DB // nil: Nexus simulation disabled
	nexusMu sync.Mutex
	nexus   map[uuid.UUID]*nexusSim // by zone ID, every Nexus ever started
}

var _ domain.Domain = (*Domain)(nil)

// New is the domain.Constructor: one sled-agent per sled of every rack, and
// a Nexus for every Nexus zone when env.DatabaseURL is set.
func New(ctx context.Context, env domain.Env) (domain.Domain, error) {
	return NewDomain(ctx, env)
}

// NewDomain is New with the concrete type.
func NewDomain(ctx context.Context, env domain.Env) (*Domain, error) {
	if env.Faults == nil {
		env.Faults = faults.NewRegistry(env.Spec.Seed)
	}
	dctx, cancel := context.WithCancel(context.Background())
	d := &Domain{
		env:    env,
		log:    env.Log.With().Str("domain", Name).Logger(),
		ctx:    dctx,
		cancel: cancel,
		sleds:  map[uuid.UUID]*sledAgent{},
		nexus:  map[uuid.UUID]*nexusSim{},
	}
	if env.DatabaseURL != "" {
		db, err := openNexusDB(ctx, env.DatabaseURL)
		if err != nil {
			cancel()
			return nil, err
		}
		d.db = db
	}
	now := time.Now()
	for _, rack := range env.Spec.Racks {
		for _, s := range rack.Sleds {
			zones := make([]sledagent.OmicronZoneConfig, 0, len(s.Zones))
			for i, z := range s.Zones {
				zones = append(zones, sledagent.OmicronZoneConfig{ID: z.ID, ZoneType: zoneType(z.Kind, z.ID, i)})
			}
			cfg := sledagent.NewSledConfig(uint64(s.Generation), zones...)
			if rack.Owners.NexusOn() {
				cfg = blueprintShaped(cfg)
			}
			sa := &sledAgent{
				d:           d,
				id:          s.ID,
				mode:        rack.SledAgentMode,
				wake:        make(chan struct{}, 1),
				serial:      s.Serial,
				part:        s.Part,
				scrimlet:    slices.Contains(rack.MGSSleds, s.Cubby),
				ledger:      cfg,
				lastConfig:  cfg,
				zones:       map[uuid.UUID]*zoneState{},
				completedAt: now,
				attempts:    map[uuid.UUID]int{},
				lastRemoval: map[uuid.UUID]sledagent.ConfigReconcilerInventoryResult{},
				removedAt:   map[uuid.UUID]time.Time{},
				store:       map[string]storedArtifact{},
				bootDisk:    s.Host.ActiveSlot & 1,
				hostUp:      true,
			}
			for i, v := range s.Host.Slots {
				if v != "" {
					img := InitialPhase2(v)
					sa.disks[i].image = &img
				}
			}
			sa.handler = sa.newHandler()
			if err := sa.listen(); err != nil {
				_ = d.Close()
				return nil, err
			}
			for _, z := range zones {
				sa.startZone(z)
			}
			d.sleds[s.ID] = sa
			d.order = append(d.order, s.ID)
			if !sa.removesBeforeLedger() {
				go sa.reconcileLoop()
			}
		}
	}
	slices.SortFunc(d.order, compareUUID)
	if d.db != nil {
		if err := d.recordSleds(ctx); err != nil {
			_ = d.Close()
			return nil, err
		}
	}
	return d, nil
}

// Name implements domain.Domain.
func (d *Domain) Name() string { return Name }

// Mount implements domain.Domain. Each sled-agent is also served at the
// root of its own listener (SledAgentAddress), as a real one is; the
// /sled-agent/{sled}/ prefix on the shared server is fleetsim's routing.
func (d *Domain) Mount(mux *http.ServeMux) {
	mux.HandleFunc("/sled-agent/{sled}/", func(w http.ResponseWriter, r *http.Request) {
		id, err := uuid.Parse(r.PathValue("sled"))
		if err != nil {
			httpx.WriteError(w, http.StatusBadRequest, "InvalidRequest", "sled id must be a UUID: "+err.Error())
			return
		}
		h := d.SledAgentHandler(id)
		if h == nil {
			httpx.WriteError(w, http.StatusNotFound, "NotFound", "no sled "+id.String())
			return
		}
		http.StripPrefix("/sled-agent/"+r.PathValue("sled"), h).ServeHTTP(w, r)
	})
	mux.HandleFunc("/sled-agent/", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, http.StatusNotFound, "NotFound", "no sled-agent route for "+r.Method+" "+r.URL.Path)
	})
	mux.HandleFunc("GET /truth/"+Name, func(w http.ResponseWriter, _ *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, d.Truth())
	})
}

// SledAgentHandler serves one sled's sled-agent API at its root paths
// (PUT /omicron-config, GET /inventory); nil for an unknown sled.
func (d *Domain) SledAgentHandler(id uuid.UUID) http.Handler {
	sa := d.sleds[id]
	if sa == nil {
		return nil
	}
	return sa.handler
}

// SledAgentAddress is where the sled's own listener serves its sled-agent
// ("" for an unknown sled).
func (d *Domain) SledAgentAddress(id uuid.UUID) string {
	if sa := d.sleds[id]; sa != nil {
		return sa.address
	}
	return ""
}

func (s *sledAgent) newHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /omicron-config", s.putConfig)
	mux.HandleFunc("GET /inventory", s.inventory)
	mux.HandleFunc("GET /artifacts-config", s.getArtifactConfig)
	mux.HandleFunc("PUT /artifacts-config", s.putArtifactConfig)
	mux.HandleFunc("PUT /artifacts/{sha256}", s.putArtifact)
	mux.HandleFunc("GET /artifacts", s.listArtifacts)
	// Everything else gets a JSON 404/405, not the mux's text.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/omicron-config" || r.URL.Path == "/inventory" || r.URL.Path == "/artifacts-config" || r.URL.Path == "/artifacts" {
			httpx.WriteError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" is not allowed on "+r.URL.Path)
			return
		}
		httpx.WriteError(w, http.StatusNotFound, "NotFound", "no sled-agent route for "+r.Method+" "+r.URL.Path)
	})
	return s.hostUpOnly(s.d.env.Faults.Middleware("sled-agent", httpx.RequireAPIVersion(APIVersion, mux)))
}

// listen starts the sled's own listener on loopback.
func (s *sledAgent) listen() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("fleetsim sled %s: listen: %w", s.id, err)
	}
	s.address = ln.Addr().String()
	s.srv = &http.Server{Handler: s.d.env.Wrap("sled-agent", "", s.handler), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return nil
}

// Close implements domain.Domain: stops removals and every Nexus.
func (d *Domain) Close() error {
	d.cancel()
	for _, sa := range d.sleds {
		if sa.srv != nil {
			_ = sa.srv.Close()
		}
	}
	d.nexusMu.Lock()
	all := make([]*nexusSim, 0, len(d.nexus))
	for _, n := range d.nexus {
		all = append(all, n)
	}
	d.nexusMu.Unlock()
	for _, n := range all {
		n.stop()
	}
	if d.db != nil {
		return d.db.Close()
	}
	return nil
}

// sledAgent is one simulated sled-agent.
type sledAgent struct {
	d        *Domain
	id       uuid.UUID
	serial   string
	part     string
	scrimlet bool
	mode     string // spec.SledAgent*; "" is ledger-first
	// address is where this sled-agent listens (inventory's sled_agent_address).
	address string
	handler http.Handler
	srv     *http.Server
	// wake tells the ledger-first reconciler that a new config was ledgered.
	wake chan struct{}

	// put serializes PUT /omicron-config, like the real ledger writer.
	put sync.Mutex

	mu     sync.Mutex // guards everything below
	ledger sledagent.OmicronSledConfig
	// zones are the zones present on the sled: running, or failed to shut down.
	zones map[uuid.UUID]*zoneState
	// lastConfig is the config of the last reconciliation attempt.
	lastConfig sledagent.OmicronSledConfig
	// running is the config being reconciled now (nil when idle).
	running     *sledagent.OmicronSledConfig
	startedAt   time.Time
	completedAt time.Time
	ranFor      time.Duration
	attempts    map[uuid.UUID]int // removal attempts per zone
	lastRemoval map[uuid.UUID]sledagent.ConfigReconcilerInventoryResult
	removedAt   map[uuid.UUID]time.Time

	// The host and its boot disks (bootdisk.go): disks[0] is M.2 A.
	disks        [2]disk
	bootDisk     int
	hostUp       bool
	bootFailure  string // why the last boot failed ("" if it did not)
	phase2Writes [2]int
	// The artifact store (artifacts.go): nil config until one is PUT.
	artConfig *sledagent.ArtifactConfig
	store     map[string]storedArtifact
}

type zoneState struct {
	cfg    sledagent.OmicronZoneConfig
	result sledagent.ConfigReconcilerInventoryResult
}

// startZone makes z present and running (starting a Nexus when it is one).
// Zone start never fails in the simulation. Caller must not hold s.mu.
func (s *sledAgent) startZone(z sledagent.OmicronZoneConfig) {
	s.mu.Lock()
	s.zones[z.ID] = &zoneState{cfg: z, result: sledagent.ConfigReconcilerInventoryResult{Result: sledagent.ResultOK}}
	delete(s.removedAt, z.ID)
	s.mu.Unlock()
	if z.ZoneType.Type == sledagent.ZoneTypeNexus {
		s.d.startNexus(s.id, z.ID)
	}
}

func (s *sledAgent) putConfig(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if !httpx.ReadJSON(w, r, &raw, maxConfigBytes) {
		return
	}
	cfg, err := decodeSledConfig(raw)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "InvalidRequest", err.Error())
		return
	}

	s.put.Lock()
	defer s.put.Unlock()
	s.mu.Lock()
	ledger := s.ledger
	missing := s.missingArtifacts(cfg)
	s.mu.Unlock()
	// The real sled-agent's 400s carry no error_code: only these messages.
	switch {
	case cfg.Generation < ledger.Generation:
		httpx.WriteError(w, http.StatusBadRequest, "", fmt.Sprintf(
			"sled config generation out of date (got %d, have %d)", cfg.Generation, ledger.Generation))
		return
	case cfg.Generation == ledger.Generation:
		same, err := sledagent.SameContents(cfg, ledger)
		if err != nil {
			httpx.WriteError(w, http.StatusInternalServerError, "Internal", err.Error())
			return
		}
		if !same {
			httpx.WriteError(w, http.StatusBadRequest, "", fmt.Sprintf(
				"sled config changed with the same generation (%d)", cfg.Generation))
			return
		}
	}
	if len(missing) > 0 {
		httpx.WriteError(w, http.StatusBadRequest, "", "sled config is invalid: "+strings.Join(missing, ", "))
		return
	}
	if !s.removesBeforeLedger() {
		// Today's sled-agent: ledgered means done for the PUT; the
		// reconciler removes zones afterwards and inventory reports how.
		s.mu.Lock()
		s.ledger = cfg
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err := s.reconcile(cfg); err != nil {
		httpx.WriteError(w, http.StatusInternalServerError, sledagent.CodeZoneRemovalFailed, err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *sledAgent) removesBeforeLedger() bool { return s.mode == spec.SledAgentRemoveBeforeLedger }

// reconcileLoop is the ledger-first reconciler: it applies the ledgered
// config whenever a new one arrives, and again every reconcileRetry while
// an attempt failed (a zone that failed to shut down is retried).
func (s *sledAgent) reconcileLoop() {
	var retry <-chan time.Time
	for {
		select {
		case <-s.d.ctx.Done():
			return
		case <-s.wake:
		case <-retry:
		}
		s.mu.Lock()
		cfg := s.ledger.Clone()
		s.mu.Unlock()
		retry = nil
		if err := s.apply(cfg); err != nil {
			retry = time.After(s.d.env.Scale(reconcileRetry))
			s.d.log.Info().Str("sled", s.id.String()).Err(err).Msg("reconciliation failed; will retry")
		}
	}
}

// decodeSledConfig strictly decodes an OmicronSledConfig: required fields
// present, no unknown fields, zone keys matching zone IDs.
func decodeSledConfig(raw json.RawMessage) (sledagent.OmicronSledConfig, error) {
	var cfg sledagent.OmicronSledConfig
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return cfg, errors.New("body must be a JSON object (OmicronSledConfig)")
	}
	for _, f := range requiredConfigFields {
		if v, ok := fields[f]; !ok || string(v) == "null" {
			return cfg, fmt.Errorf("missing required field %q", f)
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("bad OmicronSledConfig: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg.Normalized(), nil
}

// reconcile is the remove-before-ledger PUT: apply cfg (every removal must
// succeed), then ledger it. A failed removal leaves the ledger untouched and
// returns the error.
func (s *sledAgent) reconcile(cfg sledagent.OmicronSledConfig) error {
	if err := s.apply(cfg); err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return fmt.Errorf("sled %s keeps ledgered generation %d: %w", s.id, s.ledger.Generation, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cfg.Generation >= s.ledger.Generation {
		s.ledger = cfg
	}
	return nil
}

// apply makes the sled match cfg: remove zones absent from it, start zones
// it adds, and record the attempt as the last reconciliation. It returns
// the removals that failed (those zones stay, reported with their error).
func (s *sledAgent) apply(cfg sledagent.OmicronSledConfig) error {
	start := time.Now()
	s.mu.Lock()
	s.running, s.startedAt = &cfg, start
	var remove []uuid.UUID
	for id := range s.zones {
		if _, keep := cfg.Zones[id]; !keep {
			remove = append(remove, id)
		}
	}
	var add []sledagent.OmicronZoneConfig
	for _, id := range cfg.ZoneIDs() {
		if z, ok := s.zones[id]; ok {
			// Kept (again): a zone whose shutdown failed earlier stays up.
			z.cfg = cfg.Zones[id]
			z.result = sledagent.ConfigReconcilerInventoryResult{Result: sledagent.ResultOK}
		} else {
			add = append(add, cfg.Zones[id])
		}
	}
	s.mu.Unlock()
	slices.SortFunc(remove, compareUUID)

	var errs []error
	for _, id := range remove {
		if err := s.removeZone(id); err != nil {
			errs = append(errs, err)
		}
	}
	for _, z := range add {
		s.startZone(z)
	}
	if err := s.reconcileBootPartitions(cfg); err != nil {
		errs = append(errs, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastConfig, s.running = cfg, nil
	s.completedAt, s.ranFor = time.Now(), time.Since(start)
	return errors.Join(errs...)
}

// removeZone shuts zone id down and removes it, taking ZoneRemovalTime. A
// Nexus in it is stopped (and has stopped) before the zone counts as gone.
func (s *sledAgent) removeZone(id uuid.UUID) error {
	s.mu.Lock()
	s.attempts[id]++
	attempt := s.attempts[id]
	s.mu.Unlock()

	t := time.NewTimer(s.d.env.Scale(s.d.env.Spec.Timings.ZoneRemovalTime.Duration))
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.d.ctx.Done():
		return fmt.Errorf("zone %s: removal interrupted: sled-agent shutting down", id)
	}

	if _, fail := s.d.env.Faults.Fire(faults.ZoneRemovalFailure, "zone/"+id.String()); fail {
		msg := fmt.Sprintf("failed to remove zone %s (attempt %d): zone halt failed (injected fault)", id, attempt)
		s.mu.Lock()
		res := sledagent.ConfigReconcilerInventoryResult{Result: sledagent.ResultErr, Message: msg}
		if z := s.zones[id]; z != nil {
			z.result = res
		}
		s.lastRemoval[id] = res
		s.mu.Unlock()
		s.d.log.Info().Str("sled", s.id.String()).Str("zone", id.String()).Int("attempt", attempt).Msg("zone removal failed (fault)")
		return errors.New(msg)
	}

	s.d.stopNexus(id)
	s.mu.Lock()
	delete(s.zones, id)
	s.removedAt[id] = time.Now()
	s.lastRemoval[id] = sledagent.ConfigReconcilerInventoryResult{Result: sledagent.ResultOK}
	s.mu.Unlock()
	s.d.log.Info().Str("sled", s.id.String()).Str("zone", id.String()).Int("attempt", attempt).Msg("zone removed")
	return nil
}

func (s *sledAgent) inventory(w http.ResponseWriter, _ *http.Request) {
	httpx.WriteJSON(w, http.StatusOK, fullInventoryOf(s.snapshotInventory()))
}

func (s *sledAgent) snapshotInventory() sledagent.Inventory {
	s.mu.Lock()
	defer s.mu.Unlock()
	role := "gimlet"
	if s.scrimlet {
		role = "scrimlet"
	}
	ledger := s.ledger.Clone()
	inv := sledagent.Inventory{
		SledID:             s.id,
		SledRole:           role,
		SledAgentAddress:   s.address,
		BaseboardID:        &sledagent.BaseboardID{PartNumber: s.part, SerialNumber: s.serial},
		LedgeredSledConfig: &ledger,
		LastReconciliation: &sledagent.ConfigReconcilerInventory{
			LastReconciledConfig: s.lastConfig.Clone(),
			Zones:                make(map[uuid.UUID]sledagent.ConfigReconcilerInventoryResult, len(s.zones)),
			Datasets:             map[string]sledagent.ConfigReconcilerInventoryResult{},
			ExternalDisks:        map[string]sledagent.ConfigReconcilerInventoryResult{},
			OrphanedDatasets:     []json.RawMessage{},
			BootPartitions:       s.bootPartitions(),
		},
	}
	for id, z := range s.zones {
		inv.LastReconciliation.Zones[id] = z.result
	}
	if s.running != nil {
		cfg := s.running.Clone()
		started := s.startedAt
		inv.ReconcilerStatus = sledagent.ConfigReconcilerInventoryStatus{
			Status: sledagent.StatusRunning, Config: &cfg, StartedAt: &started,
			RunningFor: sledagent.NewDuration(time.Since(started)),
		}
	} else {
		done := s.completedAt
		inv.ReconcilerStatus = sledagent.ConfigReconcilerInventoryStatus{
			Status: sledagent.StatusIdle, CompletedAt: &done, RanFor: sledagent.NewDuration(s.ranFor),
		}
	}
	return inv
}

func compareUUID(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) }
