// Package dc simulates a Triton-style datacenter: CNAPI (servers, their
// agents and cn-agent install tasks), SAPI (agent services and instances:
// the intent) and IMGAPI (agent images). It serves the real APIs' shapes
// under /cnapi/, /sapi/ and /imgapi/ and its truth under /truth/dc.
//
// The truth keeps what CNAPI may not: the agents actually installed on each
// server (CNAPI's server.agents is a record that a failed refresh leaves
// stale) and a log of every install task, so tests can prove that an agent
// was installed once and that no SAPI intent ran ahead of the actual state.
package dc

import (
	"context"
	"crypto/sha1" //nolint:gosec // IMGAPI digests are SHA-1.
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/domain"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// Name is the domain's key under /truth.
const Name = "dc"

// DatacenterName is the `datacenter` field of every server.
const DatacenterName = "fleetsim-1"

// TaskTimeout is cn-agent's bound on one task (scaled by the spec's
// speed-up): a task that cannot finish by then fails.
const TaskTimeout = time.Hour

// DC is the simulated datacenter.
type DC struct {
	env    domain.Env
	faults *faults.Registry
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	servers   map[uuid.UUID]*server
	order     []uuid.UUID // CNAPI list order (spec order)
	images    map[uuid.UUID]*image
	imgOrder  []uuid.UUID
	services  map[uuid.UUID]*service
	svcOrder  []uuid.UUID
	instances map[uuid.UUID]*instance
	instOrder []uuid.UUID
	tasks     map[string]*task
	installs  []InstallRecord
	appUUID   uuid.UUID
}

type server struct {
	uuid         uuid.UUID
	hostname     string
	status       string
	setup        bool
	headnode     bool
	traits       map[string]string
	actual       []triton.Agent // what is really installed (truth)
	record       []triton.Agent // CNAPI's server.agents
	activeTask   string
	staleRefresh bool
	cnAgentTask  string
	slowness     float64
	lastBeat     time.Time
}

type image struct {
	spec       spec.Image
	actualSHA1 string
	published  time.Time
}

type service struct {
	uuid      uuid.UUID
	name      string
	typ       string
	imageUUID uuid.UUID
}

type instance struct {
	uuid        uuid.UUID
	serviceUUID uuid.UUID
	typ         string
	serverUUID  uuid.UUID
	imageUUID   uuid.UUID
}

// New builds the datacenter from env.Spec.Datacenter.
func New(ctx context.Context, env domain.Env) (domain.Domain, error) {
	return newDC(env), nil
}

func newDC(env domain.Env) *DC {
	sp := env.Spec.Datacenter
	ctx, cancel := context.WithCancel(context.Background())
	d := &DC{
		env: env, faults: env.Faults, ctx: ctx, cancel: cancel,
		servers:   make(map[uuid.UUID]*server, len(sp.Servers)),
		images:    make(map[uuid.UUID]*image, len(sp.Images)),
		services:  make(map[uuid.UUID]*service, len(sp.Services)),
		instances: make(map[uuid.UUID]*instance, len(sp.Instances)),
		tasks:     map[string]*task{},
		appUUID:   uuid.NewSHA1(uuid.NameSpaceOID, []byte("fleetsim/sdc")),
	}
	now := time.Now().UTC()
	for i, im := range sp.Images {
		d.images[im.UUID] = &image{spec: im, actualSHA1: fileSHA1(im.UUID, im.EffectiveFileSize()), published: publishedAt(im, i)}
		d.imgOrder = append(d.imgOrder, im.UUID)
	}
	for _, s := range sp.Servers {
		srv := &server{
			uuid: s.UUID, hostname: s.Hostname, status: s.EffectiveStatus(), setup: s.IsSetup(),
			headnode: s.Headnode, traits: s.Traits, staleRefresh: s.StaleRefresh, cnAgentTask: s.CNAgentTask,
			slowness: s.InstallSlowness, lastBeat: now,
		}
		for _, a := range s.Agents {
			srv.actual = append(srv.actual, triton.Agent{Name: a.Name, Version: a.Version, ImageUUID: a.ImageUUID, UUID: a.UUID})
		}
		srv.record = cloneAgents(srv.actual)
		d.servers[s.UUID] = srv
		d.order = append(d.order, s.UUID)
	}
	for _, s := range sp.Services {
		typ := s.Type
		if typ == "" {
			typ = triton.ServiceTypeAgent
		}
		d.services[s.UUID] = &service{uuid: s.UUID, name: s.Name, typ: typ, imageUUID: s.ImageUUID}
		d.svcOrder = append(d.svcOrder, s.UUID)
	}
	for _, in := range sp.Instances {
		d.instances[in.UUID] = &instance{uuid: in.UUID, serviceUUID: in.ServiceUUID, typ: d.services[in.ServiceUUID].typ, serverUUID: in.ServerUUID, imageUUID: in.ImageUUID}
		d.instOrder = append(d.instOrder, in.UUID)
	}
	return d
}

// Name implements domain.Domain.
func (d *DC) Name() string { return Name }

// Mount serves /cnapi/, /sapi/, /imgapi/ (each behind the API-level fault
// middleware) and GET /truth/dc.
func (d *DC) Mount(mux *http.ServeMux) {
	mux.Handle("/cnapi/", d.faults.Middleware("cnapi", http.StripPrefix("/cnapi", d.cnapiMux())))
	mux.Handle("/sapi/", d.faults.Middleware("sapi", http.StripPrefix("/sapi", d.sapiMux())))
	mux.Handle("/imgapi/", d.faults.Middleware("imgapi", http.StripPrefix("/imgapi", d.imgapiMux())))
	mux.HandleFunc("GET /truth/"+Name, d.serveTruth)
}

// Close stops running tasks.
func (d *DC) Close() error {
	d.cancel()
	d.wg.Wait()
	return nil
}

// isOnline reports whether the server answers right now: spec status running
// and no server_offline fault (which consumes one firing per check).
func (d *DC) isOnline(s *server) bool {
	if s.status != spec.ServerRunning {
		return false
	}
	_, offline := d.faults.Fire(faults.ServerOffline, "server/"+s.uuid.String())
	return !offline
}

// isOnlinePeek is isOnline without consuming a firing (background checks).
func (d *DC) isOnlinePeek(s *server) bool {
	if s.status != spec.ServerRunning {
		return false
	}
	_, offline := d.faults.Peek(faults.ServerOffline, "server/"+s.uuid.String())
	return !offline
}

// fileReader returns the deterministic body of an image's file.
func fileReader(id uuid.UUID, size int64) io.Reader {
	seed := sha256.Sum256(id[:])
	return io.LimitReader(rand.NewChaCha8(seed), size)
}

func fileSHA1(id uuid.UUID, size int64) string {
	h := sha1.New() //nolint:gosec
	_, _ = io.Copy(h, fileReader(id, size))
	return hex.EncodeToString(h.Sum(nil))
}

func cloneAgents(in []triton.Agent) []triton.Agent {
	if in == nil {
		return nil
	}
	return append([]triton.Agent(nil), in...)
}
