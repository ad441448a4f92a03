package spec

import (
	"fmt"
	"math/rand"

	"github.com/google/uuid"
)

// GeneratedAgents are the agents a generated datacenter runs on each server,
// in install order. marlin (Manta's agent; its name in server.agents, as in
// sdc-cnapi test/test-servers.js) runs only on Manta storage nodes (every
// fourth server, trait manta=true).
var GeneratedAgents = []string{
	"agents_core", "cn-agent", "config-agent", "vm-agent", "net-agent",
	"firewaller", "amon-agent", "smartlogin", "cmon-agent", GeneratedMarlin,
}

// GeneratedMarlin is the Manta agent's name.
const GeneratedMarlin = "marlin"

// Versions used by GenerateDatacenter: every server runs GeneratedOldVersion
// of each agent; IMGAPI also holds GeneratedNewVersion of each, published
// later. Both read as an agent build writes them: VERSION-BUILDSTAMP, the
// buildstamp being branch, build time and git hash (sdc-cn-agent Makefile).
const (
	GeneratedOldVersion = "1.0.0-master-20240101T000000Z-g1a2b3c4"
	GeneratedNewVersion = "1.1.0-master-20240601T120000Z-g5d6e7f8"
	generatedImageSize  = 48 << 10
)

// GenerateDatacenter builds a datacenter of nServers running servers that
// all run the old version of every agent, with IMGAPI holding the old and new
// image of each agent and SAPI holding one service per agent (intent = old
// image) and one instance per agent per server. Deterministic in seed.
func GenerateDatacenter(nServers int, seed int64) Datacenter {
	rng := rand.New(rand.NewSource(seed))
	newUUID := func() uuid.UUID {
		var u uuid.UUID
		_, _ = rng.Read(u[:])
		u[6] = (u[6] & 0x0f) | 0x40 // version 4
		u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
		return u
	}
	var dc Datacenter
	oldImage := map[string]Image{}
	for _, name := range GeneratedAgents {
		for _, v := range []string{GeneratedOldVersion, GeneratedNewVersion} {
			im := Image{UUID: newUUID(), Name: name, Version: v, Size: generatedImageSize, Compression: "gzip"}
			dc.Images = append(dc.Images, im)
			if v == GeneratedOldVersion {
				oldImage[name] = im
			}
		}
	}
	services := map[string]uuid.UUID{}
	for _, name := range GeneratedAgents {
		svc := Service{UUID: newUUID(), Name: name, Type: "agent", ImageUUID: oldImage[name].UUID}
		dc.Services = append(dc.Services, svc)
		services[name] = svc.UUID
	}
	for i := range nServers {
		s := Server{
			UUID:     newUUID(),
			Hostname: fmt.Sprintf("cn%05d", i),
			Status:   ServerRunning,
			Headnode: i == 0,
			Traits:   map[string]string{"rack": fmt.Sprintf("r%02d", i/40)},
		}
		manta := i%4 == 0
		if manta {
			s.Traits["manta"] = "true"
		}
		for _, name := range GeneratedAgents {
			if name == GeneratedMarlin && !manta {
				continue
			}
			im := oldImage[name]
			inst := Instance{UUID: newUUID(), ServiceUUID: services[name], ServerUUID: s.UUID, ImageUUID: im.UUID}
			dc.Instances = append(dc.Instances, inst)
			s.Agents = append(s.Agents, Agent{Name: name, Version: im.Version, ImageUUID: im.UUID, UUID: inst.UUID})
		}
		dc.Servers = append(dc.Servers, s)
	}
	return dc
}

// ImageFor returns the image of agent name at version.
func (d Datacenter) ImageFor(name, version string) (Image, bool) {
	for _, im := range d.Images {
		if im.Name == name && im.Version == version {
			return im, true
		}
	}
	return Image{}, false
}
