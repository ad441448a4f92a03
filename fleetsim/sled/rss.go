package sled

import (
	"encoding/json"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
)

// blueprintShaped is a sled's initial config as rack setup writes it from
// the first blueprint when Nexus owns the rack (spec.RackOwners.Nexus):
// every zone names its filesystem pool and the install dataset image, and
// both host phase 2 slots keep their current contents. The blueprint
// fleetsim/nexus builds from this ledger converts back to the same config,
// so the executor's first push changes nothing (the real executor sends
// these fields; a sled ledgered without them would refuse the push as
// "changed with the same generation").
func blueprintShaped(cfg sledagent.OmicronSledConfig) sledagent.OmicronSledConfig {
	for id, z := range cfg.Zones {
		pool := zonePool(id)
		z.FilesystemPool = &pool
		z.ImageSource = json.RawMessage(`{"type":"install_dataset"}`)
		cfg.Zones[id] = z
	}
	cfg.HostPhase2 = json.RawMessage(`{"slot_a":{"type":"current_contents"},"slot_b":{"type":"current_contents"}}`)
	return cfg
}

// zonePool is the zpool a zone's root filesystem is on.
func zonePool(zone uuid.UUID) string {
	return "oxp_" + v4(uuid.NewSHA1(zone, []byte("pool"))).String()
}
