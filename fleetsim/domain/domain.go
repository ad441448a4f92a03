// Package domain is the contract between fleetsim and each simulated
// subsystem (rack, datacenter, clusters): what a subsystem is built from and
// what it must serve.
package domain

import (
	"context"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// Env is what every simulated domain is built from.
type Env struct {
	Spec   *spec.Spec
	Faults *faults.Registry
	// DatabaseURL is the PostgreSQL database where simulated Nexus instances
	// keep their sagas (like the real CockroachDB).
	DatabaseURL string
	Log         zerolog.Logger
	// Check, when set, wraps the handler of each real API fleetsim serves
	// ("mgs" below /mgs/N, "sled-agent" on each sled's own listener), so
	// tests can hold every answer, faults included, to the API's contract.
	Check func(api, prefix string, h http.Handler) http.Handler
	// NexusToken is the API token the simulated Nexus's external API
	// accepts as a bearer token ("": it accepts none).
	NexusToken string
}

// Wrap applies Check to h, if one is set.
func (e Env) Wrap(api, prefix string, h http.Handler) http.Handler {
	if e.Check == nil {
		return h
	}
	return e.Check(api, prefix, h)
}

// Scale turns a real-world device duration into simulated wall time.
func (e Env) Scale(d time.Duration) time.Duration { return e.Spec.Scale(d) }

// Domain is one simulated subsystem.
type Domain interface {
	// Name is the domain's key under /truth.
	Name() string
	// Mount registers the domain's API routes (under its prefix) and its
	// truth route GET /truth/{Name}.
	Mount(mux *http.ServeMux)
	// Truth returns a JSON-encodable snapshot of the domain's real state.
	Truth() any
	// Close stops background work (deliveries, claim loops).
	Close() error
}

// Linker is a domain that plays an owner of other domains' devices (Nexus
// over the sled-agents and MGS): once every domain is built, Link hands it
// the others and it starts its background work.
type Linker interface {
	Link(others []Domain) error
}

// Constructor builds a domain.
type Constructor func(ctx context.Context, env Env) (Domain, error)
