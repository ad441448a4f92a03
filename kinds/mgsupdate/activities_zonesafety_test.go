package mgsupdate_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

// Direct mode has no target blueprint to count the rack's zones from: a
// sled holding an internal DNS zone (read from its sled-agent's
// inventory) is refused, naming the zone; a sled with no zone of a
// checked kind may reboot.
func TestHostZoneSafetyInDirectModeRefusesWhatItCannotCount(t *testing.T) {
	m := newMGSAct(t, func(s *spec.Spec) {
		z := &s.Racks[0].Sleds[1].Zones
		*z = slices.DeleteFunc(*z, func(z spec.Zone) bool {
			return z.Kind == mgsupdate.ZoneKindInternalDNS || z.Kind == mgsupdate.ZoneKindCockroachDB
		})
	})
	dns := m.spec.Racks[0].Sleds[2]
	_, err := m.env.ExecuteActivity(m.a.HostZoneSafety, mgsupdate.ZoneSafetyInput{Serial: dns.Serial, SledID: dns.ID})
	require.Error(t, err)
	assert.Equal(t, failure.ZoneSafetyUnknown, mgsErrType(err))
	assert.Contains(t, err.Error(), "internal_dns zone "+dns.Zones[1].ID.String())

	plain := m.spec.Racks[0].Sleds[1]
	_, err = m.env.ExecuteActivity(m.a.HostZoneSafety, mgsupdate.ZoneSafetyInput{Serial: plain.Serial, SledID: plain.ID})
	assert.NoError(t, err)
}
