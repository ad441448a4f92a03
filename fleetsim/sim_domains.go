package fleetsim

import (
	"github.com/fleetsaga/fleetsaga/fleetsim/dc"
	"github.com/fleetsaga/fleetsaga/fleetsim/domain"
	"github.com/fleetsaga/fleetsaga/fleetsim/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/nexus"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
)

// The simulated domains, in start order. Each simulator package exposes a
// domain.Constructor; add it here when it lands.
func init() {
	domainConstructors = []domain.Constructor{
		sled.New,
		dc.New,
		machineapi.New,
		mgs.New,
		nexus.New, // after sled and mgs: it links to them
	}
}
