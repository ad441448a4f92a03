package fleetsim

import "github.com/fleetsaga/fleetsaga/fleetsim/domain"

// The simulated domains, in start order. Each simulator package exposes a
// domain.Constructor; add it here when it lands.
func init() {
	domainConstructors = []domain.Constructor{}
}
