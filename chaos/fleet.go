package chaos

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"sigs.k8s.io/yaml"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

// Versions the chaos rollout installs (the generated fleet is one step
// behind: spec.GeneratedSPActive, spec.GeneratedHostActive).
const (
	spTargetVersion   = "1.1.0"
	hostTargetVersion = "1.1.0"
	// foreignVersion is what a foreign_update fault writes: newer than the
	// fleet, older than ours (so ours must still land, without a rollback).
	foreignVersion = "1.0.7"
	spImageSize    = 512 << 10
	hostImageSize  = 256 << 10
	phase2Size     = 1 << 20
)

// platforms of the generated clusters, one cluster each (round robin).
var platforms = []string{spec.PlatformAWS, spec.PlatformGCP, spec.PlatformAzure, spec.PlatformVSphere}

// fleet is the simulated fleet of one chaos run and the artifacts it needs.
type fleet struct {
	spec      *spec.Spec
	specPath  string
	spImage   mgsupdate.Artifact
	hostP1    mgsupdate.Artifact
	hostP2    mgsupdate.Artifact
	hostP2ID  string                // hostP2's ID at MGS and in the SP's truth: its header's SHA-256
	agentNew  map[string]spec.Image // agent name → its new image
	agentOld  map[string]spec.Image
	clusterOf map[string]spec.Cluster
}

// fleetTimings are the device timings, divided by the speed-up: real
// devices' orders of magnitude, so every step takes long enough for a kill
// or a restart to land in the middle of it.
func fleetTimings() spec.Timings {
	t := spec.DefaultTimings()
	t.FlashBytesPerSecond = 8 << 10   // 512 KiB image: 64 s real
	t.Phase2BytesPerSecond = 64 << 10 // 1 MiB phase 2: 16 s real
	t.HostBootTime = spec.Duration{Duration: 2 * time.Minute}
	t.AgentInstallTime = spec.Duration{Duration: 60 * time.Second}
	t.MachineBootTime = spec.Duration{Duration: 4 * time.Minute}
	t.ZoneRemovalTime = spec.Duration{Duration: 10 * time.Second}
	t.NexusClaimInterval = spec.Duration{Duration: 20 * time.Second}
	t.SagaRunTime = spec.Duration{Duration: 60 * time.Second}
	return t
}

// newFleet generates the fleet spec and writes it and the artifacts to dir.
func newFleet(cfg Config, dir string) (*fleet, error) {
	s, err := spec.Generate(spec.GenerateOptions{Sleds: cfg.Sleds, Servers: cfg.Servers, Seed: cfg.Seed, SpeedUp: cfg.SpeedUp})
	if err != nil {
		return nil, err
	}
	s.Timings = fleetTimings()
	f := &fleet{spec: s, agentNew: map[string]spec.Image{}, agentOld: map[string]spec.Image{}, clusterOf: map[string]spec.Cluster{}}
	for i := range cfg.Clusters {
		c := spec.SampleCluster(fmt.Sprintf("c%d", i), platforms[i%len(platforms)], true)
		s.Clusters = append(s.Clusters, c)
		f.clusterOf[c.Name] = c
	}
	if cfg.NoOwners {
		for i := range s.Racks {
			s.Racks[i].Owners = spec.NoOwners()
		}
		for i := range s.Clusters {
			s.Clusters[i].MCO = spec.Off()
			f.clusterOf[s.Clusters[i].Name] = s.Clusters[i]
		}
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("chaos fleet spec: %w", err)
	}
	for _, name := range spec.GeneratedAgents {
		if im, ok := s.Datacenter.ImageFor(name, spec.GeneratedNewVersion); ok {
			f.agentNew[name] = im
		}
		if im, ok := s.Datacenter.ImageFor(name, spec.GeneratedOldVersion); ok {
			f.agentOld[name] = im
		}
	}
	b, err := yaml.Marshal(s)
	if err != nil {
		return nil, err
	}
	f.specPath = filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(f.specPath, b, 0o644); err != nil {
		return nil, err
	}
	adir := filepath.Join(dir, "artifacts")
	if err := os.MkdirAll(adir, 0o755); err != nil {
		return nil, err
	}
	spPath := filepath.Join(adir, "sp-"+spTargetVersion+".img")
	sum, err := simmgs.WriteImageFile(spPath, simmgs.ImageHeader{Component: simmgs.CompSP, Version: spTargetVersion}, spImageSize)
	if err != nil {
		return nil, err
	}
	f.spImage = mgsupdate.Artifact{Version: spTargetVersion, SHA256: sum, Path: spPath}
	p2 := simmgs.MakePhase2Image(hostTargetVersion, phase2Size)
	p2Path := filepath.Join(adir, "host-phase2-"+hostTargetVersion+".img")
	if err := os.WriteFile(p2Path, p2, 0o644); err != nil {
		return nil, err
	}
	f.hostP2 = mgsupdate.Artifact{Version: hostTargetVersion, SHA256: simmgs.SHA256Hex(p2), Path: p2Path}
	f.hostP2ID = simmgs.Phase2ID(p2)
	p1Path := filepath.Join(adir, "host-phase1-"+hostTargetVersion+".img")
	p1sum, err := simmgs.WriteImageFile(p1Path, simmgs.ImageHeader{Component: simmgs.CompHost, Version: hostTargetVersion, Phase2: f.hostP2ID}, hostImageSize)
	if err != nil {
		return nil, err
	}
	f.hostP1 = mgsupdate.Artifact{Version: hostTargetVersion, SHA256: p1sum, Path: p1Path}
	return f, nil
}

// sleds returns the rack's sleds.
func (f *fleet) sleds() []spec.Sled { return f.spec.Racks[0].Sleds }

// mgsSleds are the cubbies the two MGS instances run on.
func (f *fleet) mgsSleds() []int { return f.spec.Racks[0].MGSSleds }

func (f *fleet) sledIDs() []uuid.UUID {
	var ids []uuid.UUID
	for _, s := range f.sleds() {
		ids = append(ids, s.ID)
	}
	return ids
}

// pick returns k distinct indexes of 0..n-1, in increasing order.
func pick(rng *rand.Rand, n, k int) []int {
	k = min(k, n)
	idx := rng.Perm(n)[:k]
	out := append([]int(nil), idx...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func spTarget(s spec.Sled) mgsupdate.SPTarget {
	return mgsupdate.SPTarget{Type: fmgs.SpTypeSled, Slot: uint16(s.Cubby), Serial: s.Serial, Part: s.Part}
}
