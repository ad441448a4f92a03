// Package fleetsim simulates the fleet fleetsaga updates: two MGS instances
// and their SPs, sled-agents and Nexus instances, a Triton-style datacenter
// (CNAPI/SAPI/IMGAPI) and Kubernetes-style clusters. It serves the real APIs'
// shapes on loopback, with fault injection and read-only truth endpoints.
//
// URL layout under one base URL:
//
//	/mgs/{0,1}/...           MGS instance i (real path shapes below the prefix)
//	/sled-agent/{sled}/...   the sled-agent of sled {sled}
//	/nexus/{rack}/...        Nexus's lockstep API of rack {rack} (when the spec turns it on)
//	/cnapi/ /sapi/ /imgapi/  datacenter APIs
//	/kube/...                Kubernetes-style API root
//	/faults                  fault injection
//	/truth, /truth/{domain}  read-only simulated state
package fleetsim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/fleetsaga/fleetsaga/fleetsim/domain"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// Env and Domain are defined in package domain so simulator packages can
// implement them without importing this package.
type (
	Env    = domain.Env
	Domain = domain.Domain
)

// domainConstructors build the domains in order. Each simulator package
// registers itself here from sim_domains.go.
var domainConstructors []domain.Constructor

// Sim is a running simulation (without its listener).
type Sim struct {
	Env     Env
	domains []Domain
	mux     *http.ServeMux
}

// New builds every domain from env.
func New(ctx context.Context, env Env) (*Sim, error) {
	if env.Faults == nil {
		env.Faults = faults.NewRegistry(env.Spec.Seed)
	}
	for _, f := range env.Spec.Faults {
		if _, err := env.Faults.Arm(f); err != nil {
			return nil, fmt.Errorf("arm spec fault: %w", err)
		}
	}
	s := &Sim{Env: env, mux: http.NewServeMux()}
	for _, build := range domainConstructors {
		d, err := build(ctx, env)
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		s.domains = append(s.domains, d)
		d.Mount(s.mux)
	}
	for _, d := range s.domains {
		if l, ok := d.(domain.Linker); ok {
			if err := l.Link(s.domains); err != nil {
				_ = s.Close()
				return nil, err
			}
		}
	}
	env.Faults.Mount(s.mux)
	s.mux.HandleFunc("GET /truth", func(w http.ResponseWriter, _ *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, s.Truth())
	})
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, http.StatusNotFound, "NotFound", "no route for "+r.Method+" "+r.URL.Path)
	})
	return s, nil
}

// Handler serves the whole simulation.
func (s *Sim) Handler() http.Handler { return s.mux }

// Truth is a snapshot of every domain's real state, keyed by domain name.
func (s *Sim) Truth() map[string]any {
	out := make(map[string]any, len(s.domains))
	for _, d := range s.domains {
		out[d.Name()] = d.Truth()
	}
	return out
}

// Close stops every domain.
func (s *Sim) Close() error {
	var errs []error
	for _, d := range s.domains {
		errs = append(errs, d.Close())
	}
	return errors.Join(errs...)
}

// Server is a Sim listening on a TCP address.
type Server struct {
	*Sim
	URL string
	srv *http.Server
}

// Start builds the simulation and serves it on addr ("127.0.0.1:0" picks a port).
func Start(ctx context.Context, env Env, addr string) (*Server, error) {
	sim, err := New(ctx, env)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = sim.Close()
		return nil, fmt.Errorf("fleetsim listen on %s: %w", addr, err)
	}
	s := &Server{Sim: sim, URL: "http://" + ln.Addr().String(), srv: &http.Server{
		Handler:           sim.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
	}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops serving and stops the simulation.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(s.srv.Shutdown(ctx), s.Sim.Close())
}
