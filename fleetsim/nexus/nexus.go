// Package nexus plays, for each rack whose spec turns it on
// (spec.Rack.Owners, docs/CONFORMANCE.md §I), the Nexus that owns the rack's sled
// configs and SP updates:
//
//   - the lockstep API subset fleetsaga needs, under /nexus/{rack}/ (shapes
//     and error answers of nexus-lockstep-0.0.1.json and omicron's datastore):
//     GET/POST /deployment/blueprints/target, PUT …/target/enabled,
//     GET /deployment/blueprints/all/{id}, POST /deployment/blueprints/import;
//     the first target is an enabled blueprint made from the sleds' ledgers,
//     as rack setup leaves it;
//   - the blueprint executor (executor.go): while the target is enabled it
//     PUTs every sled's config from the target every
//     Timings.BlueprintExecutorInterval (scaled), which the sled-agents
//     accept or refuse by generation as they do for anyone; it reassigns the
//     unfinished sagas of expunged Nexus zones that are ready for cleanup to
//     a running Nexus of the same nexus_generation (omicron
//     nexus/reconfigurator/execution/src/sagas.rs);
//   - the planner step that marks an expunged zone ready for cleanup once
//     inventory shows its sled at as_of_generation without it, and drops
//     pending MGS updates that are done, in a new target blueprint;
//   - the MGS update driver (mgsupdates.go): it carries out the target's
//     pending SP updates through the rack's MGS;
//   - the external API subset under /nexus/{rack}/external/ (external.go):
//     the update status and the target release, for the bearer token
//     fleetsim is given (Env.NexusToken).
//
// Each rack's API is also under /nexus/{rack_id}/ (the sled table's rack_id).
//
// GET /truth/nexus reports per rack the target, the blueprints, every push
// and its answer, the planner's changes, saga reassignments and MGS updates.
package nexus

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	_ "github.com/lib/pq" // PostgreSQL driver
	"github.com/rs/zerolog"

	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim/domain"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// Name is the domain's key under /truth.
const Name = "nexus"

const (
	// lockstepPort is Nexus's lockstep API port (omicron NEXUS_LOCKSTEP_PORT).
	lockstepPort = 12232
	// initialNexusGeneration is nexus_generation of the first blueprint.
	initialNexusGeneration = 1
	// plannerCreator names fleetsim's planner as a blueprint's creator.
	plannerCreator = "fleetsim planner"
	// firstSledIPOffset is a new sled's last_allocated_ip_subnet_offset: the
	// lowest 32 addresses of its subnet are reserved (omicron
	// nexus/types/src/deployment.rs, BlueprintSledConfig).
	firstSledIPOffset = 32
	// maxBlueprintBytes bounds an imported blueprint.
	maxBlueprintBytes = 16 << 20
	// sledAgentTimeout bounds one executor request to a sled-agent: a hung
	// sled must not hold the executor past its next period.
	sledAgentTimeout = 15 * time.Second
	// sledAgentAPIVersion is the sled-agent API version Nexus's client was
	// built for (dropshot versioned API: every request names it).
	sledAgentAPIVersion = "48.0.0"
)

// Domain is every rack's simulated Nexus.
type Domain struct {
	env    domain.Env
	log    zerolog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	racks  []*rack // only racks with Owners.Nexus
	sleds  *sled.Domain
	mgs    *mgs.Domain
	db     *sql.DB // nil: no saga table (fleetsim without a database)
	http   *http.Client
}

// rack is one rack's Nexus: its blueprints and target.
type rack struct {
	d     *Domain
	index int // the rack's index in the spec
	spec  spec.Rack

	mu         sync.Mutex
	blueprints map[uuid.UUID]*Blueprint
	target     Target
	history    []Target
	pushes     map[uuid.UUID]Push
	pushCount  int
	planned    []string
	sagas      []Reassignment
	updates    []MGSUpdate
	// release is the target release (nil: none set, the rack runs its
	// initial release); releases every one set, in order.
	release  *TargetRelease
	releases []TargetRelease
}

// Target is BlueprintTarget.
type Target struct {
	TargetID       uuid.UUID `json:"target_id"`
	Enabled        bool      `json:"enabled"`
	TimeMadeTarget time.Time `json:"time_made_target"`
}

// New is the domain.Constructor.
func New(_ context.Context, env domain.Env) (domain.Domain, error) {
	ctx, cancel := context.WithCancel(context.Background())
	d := &Domain{
		env: env, log: env.Log.With().Str("domain", Name).Logger(), ctx: ctx, cancel: cancel,
		http: &http.Client{Timeout: sledAgentTimeout},
	}
	for i, r := range env.Spec.Racks {
		if r.Owners.NexusOn() {
			d.racks = append(d.racks, &rack{d: d, index: i, spec: r, blueprints: map[uuid.UUID]*Blueprint{}, pushes: map[uuid.UUID]Push{}})
		}
	}
	return d, nil
}

// Link implements domain.Linker: the initial target blueprint is made from
// the sleds' ledgers (read from each sled-agent's inventory, as RSS hands
// its config over), then the executor starts.
func (d *Domain) Link(others []domain.Domain) error {
	if len(d.racks) == 0 {
		return nil
	}
	for _, o := range others {
		switch o := o.(type) {
		case *sled.Domain:
			d.sleds = o
		case *mgs.Domain:
			d.mgs = o
		}
	}
	if d.sleds == nil || d.mgs == nil {
		return errors.New("fleetsim nexus: needs the sled and mgs domains")
	}
	if d.env.DatabaseURL != "" {
		db, err := sql.Open("postgres", d.env.DatabaseURL)
		if err != nil {
			return fmt.Errorf("fleetsim nexus: saga database: %w", err)
		}
		db.SetMaxOpenConns(2)
		d.db = db
	}
	for _, r := range d.racks {
		bp, err := r.initialBlueprint(d.ctx)
		if err != nil {
			return err
		}
		r.blueprints[bp.ID] = bp
		r.target = Target{TargetID: bp.ID, Enabled: true, TimeMadeTarget: time.Now().UTC()}
		r.history = append(r.history, r.target)
		if r.spec.Owners.ExecutorOn() || r.spec.Owners.MGSUpdatesOn() {
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				r.loop()
			}()
		}
	}
	return nil
}

// initialBlueprint is the blueprint rack setup leaves: every sled at its
// ledgered generation with its zones in service.
func (r *rack) initialBlueprint(ctx context.Context) (*Blueprint, error) {
	bp := &Blueprint{
		ID:                                  v4(uuid.NewSHA1(uuid.NameSpaceOID, []byte("fleetsim initial blueprint "+r.spec.ID))),
		NexusGeneration:                     initialNexusGeneration,
		Sleds:                               map[uuid.UUID]*SledConfig{},
		PendingMGSUpdates:                   PendingMGSUpdates{ByBaseboard: []PendingMGSUpdate{}},
		CockroachdbSettingPreserveDowngrade: json.RawMessage(`{"action":"do_not_modify"}`),
		Comment:                             "initial blueprint from rack setup",
		Creator:                             "RSS",
		ExternalDNSVersion:                  1,
		ExternalNetworkingGeneration:        1,
		InternalDNSVersion:                  1,
		OximeterReadMode:                    json.RawMessage(`{"type":"single_node"}`),
		OximeterReadVersion:                 1,
		Source:                              json.RawMessage(`{"source":"rss"}`),
		TargetReleaseMinimumGeneration:      1,
		TimeCreated:                         time.Now().UTC(),
	}
	for i, s := range r.spec.Sleds {
		inv, err := r.d.inventory(ctx, s.ID)
		if err != nil {
			return nil, fmt.Errorf("fleetsim nexus: initial blueprint of rack %q: %w", r.spec.ID, err)
		}
		if inv.LedgeredSledConfig == nil {
			return nil, fmt.Errorf("fleetsim nexus: sled %s has no ledgered config", s.ID)
		}
		led := inv.LedgeredSledConfig
		sc := &SledConfig{
			Datasets: json.RawMessage(`[]`), Disks: json.RawMessage(`[]`), HostPhase2: led.HostPhase2,
			SledAgentGeneration: led.Generation, State: "active", Zones: ZoneMap{},
			Subnet:                      json.RawMessage(fmt.Sprintf(`{"net":"fd00:1122:3344:%x::/64"}`, 0x101+i)),
			LastAllocatedIPSubnetOffset: firstSledIPOffset + uint16(len(led.Zones)),
			Measurements:                json.RawMessage(`{"type":"install_dataset"}`),
			UpdateDisposition:           json.RawMessage(`{"generation":1,"kind":{"availability":"available"}}`),
		}
		for id, z := range led.Zones {
			zt, err := blueprintZoneType(id, z.ZoneType, initialNexusGeneration)
			if err != nil {
				return nil, fmt.Errorf("fleetsim nexus: zone %s: %w", id, err)
			}
			pool := ""
			if z.FilesystemPool != nil {
				pool = *z.FilesystemPool
			}
			sc.Zones[id] = &ZoneConfig{
				Disposition: Disposition{Kind: InService}, FilesystemPool: pool, ID: id,
				ImageSource: z.ImageSource, ZoneType: zt,
			}
		}
		bp.Sleds[s.ID] = sc
	}
	return bp, nil
}

// Name implements domain.Domain.
func (d *Domain) Name() string { return Name }

// Mount implements domain.Domain: each rack's lockstep API under
// /nexus/{rack}/, its external API subset under /nexus/{rack}/external/.
func (d *Domain) Mount(mux *http.ServeMux) {
	for _, r := range d.racks {
		// By name, and by the rack_id the sled table records (how a client
		// that starts from a sled finds its rack's Nexus).
		for _, name := range []string{r.spec.ID, sled.RackUUID(r.spec.ID).String()} {
			prefix := "/nexus/" + name
			mux.Handle(prefix+"/", d.env.Wrap("nexus-lockstep", prefix,
				http.StripPrefix(prefix, d.env.Faults.Middleware("nexus-lockstep", r.handler()))))
			ext := prefix + "/external"
			mux.Handle(ext+"/", d.env.Wrap("nexus-external", ext,
				http.StripPrefix(ext, d.env.Faults.Middleware("nexus-external", r.externalHandler()))))
		}
	}
	mux.HandleFunc("GET /truth/"+Name, func(w http.ResponseWriter, _ *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, d.Truth())
	})
}

// Close implements domain.Domain.
func (d *Domain) Close() error {
	d.cancel()
	d.wg.Wait()
	if d.db != nil {
		return d.db.Close()
	}
	return nil
}

// inventory reads a sled-agent's inventory over HTTP, as Nexus's inventory
// collector does.
func (d *Domain) inventory(ctx context.Context, id uuid.UUID) (*sledagent.Inventory, error) {
	addr := d.sleds.SledAgentAddress(id)
	if addr == "" {
		return nil, fmt.Errorf("no sled-agent for sled %s", id)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/inventory", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("api-version", sledAgentAPIVersion)
	resp, err := d.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sled %s inventory: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sled %s inventory: HTTP %d", id, resp.StatusCode)
	}
	var inv sledagent.Inventory
	if err := json.NewDecoder(resp.Body).Decode(&inv); err != nil {
		return nil, fmt.Errorf("sled %s inventory: %w", id, err)
	}
	return &inv, nil
}

// current returns the target and its blueprint.
func (r *rack) current() (Target, *Blueprint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.target, r.blueprints[r.target.TargetID]
}
