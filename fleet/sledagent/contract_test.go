package sledagent_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/openapi"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// checkedClient talks to a sled-agent through openapi.Transport: every
// request the client sends and every response it gets is checked against
// the vendored sled-agent document.
func checkedClient(t *testing.T, base string) *sledagent.Client {
	tr := &openapi.Transport{Contract: openapi.MustLoad(openapi.SledAgent), Rep: t, Responses: true}
	return sledagent.New(base, &http.Client{Transport: tr, Timeout: 10 * time.Second})
}

// The client's traffic with fleetsim's sled-agent, in both modes, follows
// the document: inventory, an accepted PUT, and both 400s.
func TestClientTrafficFollowsOpenAPI(t *testing.T) {
	for _, mode := range []string{spec.SledAgentLedgerFirst, spec.SledAgentRemoveBeforeLedger} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			rack := spec.Rack{ID: "r", MGSSleds: []int{0, 1}, SledAgentMode: mode}
			for i := 0; i < 2; i++ {
				rack.Sleds = append(rack.Sleds, spec.Sled{ID: uuid.New(), Cubby: i, Serial: fmt.Sprint("S", i), SP: spec.SPFirmware{Active: "1"},
					Generation: 3, Zones: []spec.Zone{{ID: uuid.New(), Kind: "internal_ntp"}, {ID: uuid.New(), Kind: "nexus"}}})
			}
			s := &spec.Spec{Seed: 1, SpeedUp: 100, Timings: spec.DefaultTimings(), Racks: []spec.Rack{rack}}
			require.NoError(t, s.Validate())
			d, err := sled.NewDomain(ctx, fleetsim.Env{Spec: s, Faults: faults.NewRegistry(1), Log: zerolog.Nop()})
			require.NoError(t, err)
			t.Cleanup(func() { _ = d.Close() })

			id := rack.Sleds[0].ID
			c := checkedClient(t, "http://"+d.SledAgentAddress(id))
			inv, err := c.InventoryOf(ctx, id)
			require.NoError(t, err)
			next := inv.LedgeredSledConfig.WithoutZone(4, rack.Sleds[0].Zones[1].ID)
			require.NoError(t, c.PutOmicronConfig(ctx, next))
			assert.True(t, sledagent.IsBadRequest(c.PutOmicronConfig(ctx, *inv.LedgeredSledConfig)), "older generation")
			assert.True(t, sledagent.IsBadRequest(c.PutOmicronConfig(ctx, inv.LedgeredSledConfig.WithoutZone(4, rack.Sleds[0].Zones[0].ID))), "same generation, other contents")
			require.Eventually(t, func() bool {
				inv, err := c.Inventory(ctx)
				require.NoError(t, err)
				gone, _ := inv.ZoneGone(rack.Sleds[0].Zones[1].ID, 4)
				return gone
			}, 10*time.Second, 10*time.Millisecond)
		})
	}
}
