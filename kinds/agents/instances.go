package agents

import (
	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
)

// instanceOnServer says whether an agent's SAPI instance is the one on
// server. An older agent's instance names no server (sdcadm lib/sdcadm.js
// listInsts); it was created under the agent's own UUID, so agentUUID (the
// agent's entry in that server's server.agents; uuid.Nil when unknown) is
// what ties it to the server.
func instanceOnServer(in triton.Instance, server, agentUUID uuid.UUID) bool {
	if in.Params.ServerUUID != uuid.Nil {
		return in.Params.ServerUUID == server
	}
	return agentUUID != uuid.Nil && in.UUID == agentUUID
}

// instancesOn is the service's instances on server, from its instances
// grouped by params.server_uuid (uuid.Nil: those naming no server).
func instancesOn(byServer map[uuid.UUID][]triton.Instance, server, agentUUID uuid.UUID) []triton.Instance {
	var out []triton.Instance
	for _, key := range []uuid.UUID{server, uuid.Nil} {
		for _, in := range byServer[key] {
			if instanceOnServer(in, server, agentUUID) {
				out = append(out, in)
			}
		}
	}
	return out
}
