package dc

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
)

// Truth is the datacenter's real state.
type Truth struct {
	Servers  []ServerTruth   `json:"servers"`
	Installs []InstallRecord `json:"installs"`
	// Orphans are SAPI instances whose server CNAPI no longer has.
	Orphans []InstanceTruth `json:"orphans"`
}

// ServerTruth is one server: what it really runs, what CNAPI records and
// what SAPI intends.
type ServerTruth struct {
	UUID     uuid.UUID `json:"uuid"`
	Hostname string    `json:"hostname"`
	// Status is the spec status (faults not applied).
	Status     string `json:"status"`
	Setup      bool   `json:"setup"`
	ActiveTask string `json:"activeTask,omitempty"`
	// Agents are the agents actually installed.
	Agents []triton.Agent `json:"agents"`
	// Record is CNAPI's server.agents.
	Record []triton.Agent `json:"record"`
	// Instances are the SAPI agent instances on this server.
	Instances []InstanceTruth `json:"instances"`
}

// InstanceTruth is one SAPI instance as seen from its server.
type InstanceTruth struct {
	UUID       uuid.UUID `json:"uuid"`
	Service    string    `json:"service"`
	ImageUUID  uuid.UUID `json:"imageUuid"`
	ServerUUID uuid.UUID `json:"serverUuid"`
}

// Truth implements domain.Domain.
func (d *DC) Truth() any { return d.truth(nil) }

// truth snapshots the state, optionally for one server only.
func (d *DC) truth(only *uuid.UUID) Truth {
	d.mu.Lock()
	defer d.mu.Unlock()
	byServer := map[uuid.UUID][]InstanceTruth{}
	orphans := []InstanceTruth{}
	for _, id := range d.instOrder {
		in := d.instances[id]
		if only != nil && in.serverUUID != *only {
			continue
		}
		name := ""
		if s := d.services[in.serviceUUID]; s != nil {
			name = s.name
		}
		it := InstanceTruth{UUID: in.uuid, Service: name, ImageUUID: in.imageUUID, ServerUUID: in.serverUUID}
		byServer[in.serverUUID] = append(byServer[in.serverUUID], it)
		if d.servers[in.serverUUID] == nil {
			orphans = append(orphans, it)
		}
	}
	out := Truth{Servers: []ServerTruth{}, Installs: []InstallRecord{}, Orphans: orphans}
	for _, id := range d.order {
		if only != nil && id != *only {
			continue
		}
		s := d.servers[id]
		st := ServerTruth{
			UUID: s.uuid, Hostname: s.hostname, Status: s.status, Setup: s.setup, ActiveTask: s.activeTask,
			Agents: cloneAgents(s.actual), Record: cloneAgents(s.record), Instances: byServer[id],
		}
		if st.Agents == nil {
			st.Agents = []triton.Agent{}
		}
		if st.Record == nil {
			st.Record = []triton.Agent{}
		}
		if st.Instances == nil {
			st.Instances = []InstanceTruth{}
		}
		out.Servers = append(out.Servers, st)
	}
	for _, rec := range d.installs {
		if only == nil || rec.ServerUUID == *only {
			out.Installs = append(out.Installs, rec)
		}
	}
	return out
}

// serveTruth answers GET /truth/dc[?server=UUID].
func (d *DC) serveTruth(w http.ResponseWriter, r *http.Request) {
	srv, ok := queryUUID(w, r, "server")
	if !ok {
		return
	}
	if srv == uuid.Nil {
		writeJSON(w, http.StatusOK, d.truth(nil))
		return
	}
	writeJSON(w, http.StatusOK, d.truth(&srv))
}
