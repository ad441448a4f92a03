package sled

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
)

// The sled's two M.2 boot disks (A and B) and the host running on them.
// A phase 1 image names the phase 2 it boots (its header's SHA-256); the
// host boots the phase 2 on the disk matching the active phase 1 slot
// (0↔A, 1↔B) and fails to boot when that disk does not hold it (omicron
// nexus/mgs-updates/src/host_phase1_updater.rs). fleetsim's MGS domain
// asks BootHost when a host boots; sled-agent answers only while its host
// runs, and reports the disks in inventory's boot_partitions as
// sled-agent/config-reconciler/src/host_phase_2.rs does.

// phase2WriteTime is how long sled-agent takes to write a phase 2 image to
// a boot partition and re-read it (real: ~1 GiB to an M.2, seconds to a
// minute; scaled by SpeedUp).
const phase2WriteTime = 20 * time.Second

// Errors a boot partition reports (host_phase_2.rs BootPartitionError).
const (
	msgNoImage        = "failed parsing image header: incorrect magic in image header (the partition holds no phase 2 image)"
	msgNotPhase2Image = "failed parsing image header: the artifact written is not a phase 2 image"
)

// InitialPhase2 is the phase 2 image a spec's host OS version boots: what
// the disks hold at start, and what fleetsim's MGS makes the initial
// phase 1 images name (its header SHA-256).
func InitialPhase2(version string) sledagent.BootPartitionDetails {
	file := sha256.Sum256([]byte("fleetsim-initial-phase2-file:" + version))
	return sledagent.BootPartitionDetails{
		ArtifactHash: hex.EncodeToString(file[:]),
		ArtifactSize: 1 << 30,
		Header: sledagent.BootImageHeader{
			DataSize: 1<<30 - fmgs.Phase2HeaderSize, ImageSize: 1<<30 - fmgs.Phase2HeaderSize, TargetSize: 1 << 32, Flags: 1,
			ImageName: "fleetsim " + version,
			SHA256:    sha256.Sum256([]byte("fleetsim-initial-phase2:" + version)),
		},
	}
}

// Phase2HeaderID is a boot partition's phase 2 ID (its header's SHA-256,
// hex): what a phase 1 image names.
func Phase2HeaderID(d sledagent.BootPartitionDetails) string {
	return hex.EncodeToString(d.Header.SHA256[:])
}

// phase2Details reads a stored artifact as a phase 2 image: nil when its
// first block is not a phase 2 header.
func phase2Details(hash string, size int64, head []byte) *sledagent.BootPartitionDetails {
	h, err := fmgs.ParsePhase2Header(head)
	if err != nil {
		return nil
	}
	sum, err := hex.DecodeString(h.SHA256)
	if err != nil || len(sum) != 32 {
		return nil
	}
	d := &sledagent.BootPartitionDetails{
		ArtifactHash: strings.ToLower(hash), ArtifactSize: uint64(size),
		Header: sledagent.BootImageHeader{DataSize: h.DataSize, Flags: h.Flags, ImageName: h.ImageName, ImageSize: h.ImageSize, TargetSize: h.TargetSize},
	}
	copy(d.Header.SHA256[:], sum)
	return d
}

// disk is one M.2 boot partition.
type disk struct {
	image *sledagent.BootPartitionDetails // nil: no valid image
	err   string                          // the last write's failure, if any
}

// BootHost is the host of sled booting phase 1 slot slot, whose image
// names phase 2 want (its header SHA-256; "" names none: an image without
// a pairing boots whatever the disk holds). ok: the disk holds it, the
// host runs and sled-agent answers with that boot disk; else the host
// fails to boot and sled-agent stays down. An unknown sled boots (a rack
// without sled-agents).
func (d *Domain) BootHost(sled uuid.UUID, slot int, want string) (ok bool, why string) {
	s := d.sleds[sled]
	if s == nil {
		return true, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dk := s.disks[slot&1]
	switch {
	case dk.image == nil:
		why = fmt.Sprintf("boot disk %s holds no phase 2 image", sledagent.M2SlotOf(uint16(slot)))
	case want != "" && !strings.EqualFold(Phase2HeaderID(*dk.image), want):
		why = fmt.Sprintf("boot disk %s holds phase 2 %s, phase 1 names %s", sledagent.M2SlotOf(uint16(slot)), Phase2HeaderID(*dk.image), want)
	}
	s.bootDisk, s.hostUp, s.bootFailure = slot&1, why == "", why
	return why == "", why
}

// HostDown is sled's host going down (power off, reboot): its sled-agent
// stops answering until BootHost succeeds.
func (d *Domain) HostDown(sled uuid.UUID) {
	if s := d.sleds[sled]; s != nil {
		s.mu.Lock()
		s.hostUp = false
		s.mu.Unlock()
	}
}

// hostUpOnly answers only while the host runs: a sled-agent whose host is
// down or failed to boot is not there (the connection is closed without
// an answer, as an unreachable host's).
func (s *sledAgent) hostUpOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		up := s.hostUp
		s.mu.Unlock()
		if up {
			next.ServeHTTP(w, r)
			return
		}
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	})
}

// reconcileBootPartitions writes each slot's desired phase 2 from the
// artifact store, as the real reconciler does on every pass: a slot whose
// disk already holds the artifact is left alone.
func (s *sledAgent) reconcileBootPartitions(cfg sledagent.OmicronSledConfig) error {
	want, err := cfg.DesiredHostPhase2()
	if err != nil {
		return err
	}
	var errs []error
	for i, slot := range []string{sledagent.M2SlotA, sledagent.M2SlotB} {
		c := want.Slot(slot)
		if c.Type != sledagent.Phase2Artifact {
			continue
		}
		s.mu.Lock()
		have := s.disks[i].image
		art, stored := s.store[strings.ToLower(c.Hash)]
		s.mu.Unlock()
		if have != nil && strings.EqualFold(have.ArtifactHash, c.Hash) {
			continue
		}
		if !stored {
			msg := fmt.Sprintf("could not find desired artifact %s: Artifact %s not found", c.Hash, c.Hash)
			s.setDisk(i, nil, msg, false)
			errs = append(errs, errors.New(msg))
			continue
		}
		t := time.NewTimer(s.d.env.Scale(phase2WriteTime))
		select {
		case <-t.C:
		case <-s.d.ctx.Done():
			t.Stop()
			return errors.New("phase 2 write interrupted: sled-agent shutting down")
		}
		if art.phase2 == nil {
			s.setDisk(i, nil, msgNotPhase2Image, true)
			errs = append(errs, errors.New(msgNotPhase2Image))
			continue
		}
		s.setDisk(i, art.phase2, "", true)
		s.d.log.Info().Str("sled", s.id.String()).Str("slot", slot).Str("artifact", c.Hash).Msg("phase 2 written to boot partition")
	}
	return errors.Join(errs...)
}

// setDisk records a boot partition's contents after a write (written) or
// a failed attempt.
func (s *sledAgent) setDisk(i int, img *sledagent.BootPartitionDetails, errMsg string, written bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if written {
		s.disks[i].image = img
		s.phase2Writes[i]++
	}
	s.disks[i].err = errMsg
}

// bootPartitions is inventory's boot_partitions. Caller holds s.mu.
func (s *sledAgent) bootPartitions() *sledagent.BootPartitions {
	out := &sledagent.BootPartitions{}
	b := sledagent.M2SlotOf(uint16(s.bootDisk))
	out.BootDisk.Ok = &b
	for i, r := range []*sledagent.BootResult[sledagent.BootPartitionDetails]{&out.SlotA, &out.SlotB} {
		switch dk := s.disks[i]; {
		case dk.err != "":
			r.Err = dk.err
		case dk.image != nil:
			img := *dk.image
			r.Ok = &img
		default:
			r.Err = msgNoImage
		}
	}
	return out
}

// HostUp is sled's host running after a boot that did not read its disk
// (phase 2 fetched through the SP, the recovery path): sled-agent answers,
// with boot disk slot.
func (d *Domain) HostUp(sled uuid.UUID, slot int) {
	if s := d.sleds[sled]; s != nil {
		s.mu.Lock()
		s.bootDisk, s.hostUp, s.bootFailure = slot&1, true, ""
		s.mu.Unlock()
	}
}
