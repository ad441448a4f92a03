package spec

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Datacenter is the Triton-style datacenter: servers (CNAPI) with their
// agents, agent images (IMGAPI) and agent services/instances (SAPI).
// The datacenter simulator (fleetsim/dc) owns this section.
type Datacenter struct {
	Servers []Server `json:"servers"`
	Images  []Image  `json:"images"`
	// Services are SAPI services; agent services have type "agent" and are
	// named after the agent (cn-agent, vm-agent, ...).
	Services []Service `json:"services"`
	// Instances are SAPI instances: one per agent per server.
	Instances []Instance `json:"instances"`
}

// Server status values (CNAPI `status`).
const (
	ServerRunning = "running"
	ServerUnknown = "unknown" // offline: no heartbeat
)

// Server is one compute node as CNAPI knows it.
type Server struct {
	UUID     uuid.UUID `json:"uuid"`
	Hostname string    `json:"hostname"`
	// Status is "running" (default) or "unknown" (offline).
	Status string `json:"status,omitempty"`
	// Setup is false for a server that booted but was never set up; such a
	// server has no agents besides ur. Default true.
	Setup    *bool `json:"setup,omitempty"`
	Headnode bool  `json:"headnode,omitempty"`
	// Traits are CNAPI server traits; fleetsaga selects servers by them
	// (labels).
	Traits map[string]string `json:"traits,omitempty"`
	// Agents installed on the server (the truth; CNAPI's record starts equal).
	Agents []Agent `json:"agents,omitempty"`
	// StaleRefresh makes cn-agent's post of its agents to CNAPI (after an
	// install, and a new cn-agent's at its start) fail on this server;
	// cn-agent only logs it (sdc-cn-agent lib/backends/smartos/tasks/
	// agent_install.js, lib/app.js): CNAPI's server.agents stays behind.
	StaleRefresh bool `json:"staleRefresh,omitempty"`
	// CNAgentTask is how CNAPI's task of a cn-agent self-update ends on this
	// server: "" stays active (the request went with the cn-agent that held
	// it), CNAgentTaskLost fails it as CNAPI records a broken request to
	// cn-agent, CNAgentTaskComplete completes it.
	CNAgentTask string `json:"cnAgentTask,omitempty"`
	// InstallSlowness multiplies the agent install time on this server
	// (stragglers); 0 means 1.
	InstallSlowness float64 `json:"installSlowness,omitempty"`
}

// CNAgentTask values.
const (
	CNAgentTaskLost     = "lost"
	CNAgentTaskComplete = "complete"
)

// IsSetup reports the effective setup flag.
func (s Server) IsSetup() bool { return s.Setup == nil || *s.Setup }

// EffectiveStatus is Status with its default.
func (s Server) EffectiveStatus() string {
	if s.Status == "" {
		return ServerRunning
	}
	return s.Status
}

// Agent is one installed agent (CNAPI server.agents[] entry).
type Agent struct {
	Name      string    `json:"name"`
	Version   string    `json:"version"`
	ImageUUID uuid.UUID `json:"imageUUID"`
	// UUID is the agent instance UUID (equal to its SAPI instance UUID).
	UUID uuid.UUID `json:"uuid"`
}

// Image types.
const (
	ImageTypeAgent = "agent" // an agent package (the only kind installable by install-agent)
	ImageTypeZone  = "zone-dataset"
)

// Image is one image in IMGAPI. Its file is generated deterministically from
// the UUID (FileSize bytes), so the simulator never holds image bodies.
type Image struct {
	UUID uuid.UUID `json:"uuid"`
	Name string    `json:"name"`
	// Version is the manifest's version; an agent build writes
	// "VERSION-BUILDSTAMP" (sdc-cn-agent manifest.tmpl and Makefile), and
	// the part after the first "-" is served as the buildstamp tag.
	Version string `json:"version"`
	// PublishedAt is IMGAPI's published_at; default: spec order, an hour
	// apart from firstPublished (the images listed later are newer).
	PublishedAt *time.Time `json:"publishedAt,omitempty"`
	// Type is "agent" (default) or "zone-dataset".
	Type string `json:"type,omitempty"`
	// Size is the size the manifest advertises.
	Size int64 `json:"size"`
	// FileSize is the size of the file actually served (default Size); a
	// different value simulates a truncated or wrong upload.
	FileSize int64 `json:"fileSize,omitempty"`
	// SHA1 is the digest the manifest advertises; empty = the real digest of
	// the served file. A wrong value simulates a corrupt image.
	SHA1        string `json:"sha1,omitempty"`
	Compression string `json:"compression,omitempty"` // default gzip
	// Slowness multiplies the install time of this image per server UUID
	// (straggler tests).
	Slowness map[string]float64 `json:"slowness,omitempty"`
}

// EffectiveType is Type with its default.
func (i Image) EffectiveType() string {
	if i.Type == "" {
		return ImageTypeAgent
	}
	return i.Type
}

// EffectiveFileSize is FileSize with its default.
func (i Image) EffectiveFileSize() int64 {
	if i.FileSize == 0 {
		return i.Size
	}
	return i.FileSize
}

// Service is a SAPI service; for agents Params["image_uuid"] is the
// fleet-wide intended image.
type Service struct {
	UUID      uuid.UUID `json:"uuid"`
	Name      string    `json:"name"`
	Type      string    `json:"type,omitempty"` // default "agent"
	ImageUUID uuid.UUID `json:"imageUUID,omitempty"`
}

// Instance is a SAPI instance of an agent service on one server (the
// per-server intent). Instances of older agents carry no server_uuid
// (ServerUUID uuid.Nil): only the agent's own UUID in server.agents ties
// them to a server (sdcadm lib/sdcadm.js listInsts).
type Instance struct {
	UUID        uuid.UUID `json:"uuid"`
	ServiceUUID uuid.UUID `json:"serviceUUID"`
	ServerUUID  uuid.UUID `json:"serverUUID"`
	ImageUUID   uuid.UUID `json:"imageUUID"`
}

func (d Datacenter) validate() error {
	var errs []error
	servers := map[uuid.UUID]bool{}
	for i, s := range d.Servers {
		where := fmt.Sprintf("datacenter.servers[%d]", i)
		if s.UUID == uuid.Nil {
			errs = append(errs, fmt.Errorf("%s: uuid is required", where))
		}
		if servers[s.UUID] {
			errs = append(errs, fmt.Errorf("%s: duplicate server uuid %s", where, s.UUID))
		}
		servers[s.UUID] = true
		if s.Hostname == "" {
			errs = append(errs, fmt.Errorf("%s: hostname is required", where))
		}
		if st := s.EffectiveStatus(); st != ServerRunning && st != ServerUnknown {
			errs = append(errs, fmt.Errorf("%s: status must be running or unknown, got %q", where, s.Status))
		}
		if s.CNAgentTask != "" && s.CNAgentTask != CNAgentTaskLost && s.CNAgentTask != CNAgentTaskComplete {
			errs = append(errs, fmt.Errorf("%s: cnAgentTask must be empty, %q or %q", where, CNAgentTaskLost, CNAgentTaskComplete))
		}
		if s.InstallSlowness < 0 {
			errs = append(errs, fmt.Errorf("%s: installSlowness must be >= 0", where))
		}
		names := map[string]bool{}
		for ai, a := range s.Agents {
			if a.Name == "" || a.Version == "" {
				errs = append(errs, fmt.Errorf("%s agents[%d]: name and version are required", where, ai))
			}
			if names[a.Name] {
				errs = append(errs, fmt.Errorf("%s agents[%d]: agent %q listed twice", where, ai, a.Name))
			}
			names[a.Name] = true
		}
	}
	images := map[uuid.UUID]bool{}
	for i, im := range d.Images {
		where := fmt.Sprintf("datacenter.images[%d]", i)
		if im.UUID == uuid.Nil || im.Name == "" || im.Version == "" {
			errs = append(errs, fmt.Errorf("%s: uuid, name and version are required", where))
		}
		if images[im.UUID] {
			errs = append(errs, fmt.Errorf("%s: duplicate image uuid %s", where, im.UUID))
		}
		images[im.UUID] = true
		if t := im.EffectiveType(); t != ImageTypeAgent && t != ImageTypeZone {
			errs = append(errs, fmt.Errorf("%s: type must be %q or %q", where, ImageTypeAgent, ImageTypeZone))
		}
		if im.Size <= 0 || im.Size > 1<<30 || im.FileSize < 0 || im.FileSize > 1<<30 {
			errs = append(errs, fmt.Errorf("%s: size must be within 1..1GiB (and fileSize 0..1GiB)", where))
		}
		if im.SHA1 != "" && len(im.SHA1) != 40 {
			errs = append(errs, fmt.Errorf("%s: sha1 must be 40 hex digits", where))
		}
		for srv, f := range im.Slowness {
			if _, err := uuid.Parse(srv); err != nil || f <= 0 {
				errs = append(errs, fmt.Errorf("%s: slowness keys must be server UUIDs and factors > 0", where))
			}
		}
	}
	services := map[uuid.UUID]bool{}
	svcNames := map[string]bool{}
	for i, s := range d.Services {
		where := fmt.Sprintf("datacenter.services[%d]", i)
		if s.UUID == uuid.Nil || s.Name == "" {
			errs = append(errs, fmt.Errorf("%s: uuid and name are required", where))
		}
		if services[s.UUID] || svcNames[s.Name] {
			errs = append(errs, fmt.Errorf("%s: duplicate service %s/%s", where, s.UUID, s.Name))
		}
		services[s.UUID] = true
		svcNames[s.Name] = true
	}
	instances := map[uuid.UUID]bool{}
	for i, in := range d.Instances {
		where := fmt.Sprintf("datacenter.instances[%d]", i)
		if in.UUID == uuid.Nil {
			errs = append(errs, fmt.Errorf("%s: uuid is required", where))
		}
		if instances[in.UUID] {
			errs = append(errs, fmt.Errorf("%s: duplicate instance uuid %s", where, in.UUID))
		}
		instances[in.UUID] = true
		if !services[in.ServiceUUID] {
			errs = append(errs, fmt.Errorf("%s: unknown serviceUUID %s", where, in.ServiceUUID))
		}
		// An older agent's instance names no server (uuid.Nil).
		if in.ServerUUID != uuid.Nil && !servers[in.ServerUUID] {
			errs = append(errs, fmt.Errorf("%s: unknown serverUUID %s", where, in.ServerUUID))
		}
	}
	return errors.Join(errs...)
}
