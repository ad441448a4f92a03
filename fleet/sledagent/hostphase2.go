package sledagent

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// M.2 slots (M2Slot): the boot disks. Phase 1 slot 0 boots the phase 2 on
// disk A, slot 1 the one on disk B (omicron M2Slot::from_mgs_firmware_slot).
const (
	M2SlotA = "A"
	M2SlotB = "B"
)

// M2SlotOf is the disk a host boot flash (phase 1) slot boots from.
func M2SlotOf(phase1Slot uint16) string {
	if phase1Slot == 1 {
		return M2SlotB
	}
	return M2SlotA
}

// HostPhase2DesiredContents is one boot partition's desired contents:
// {"type": "current_contents"} or {"type": "artifact", "hash": H}, H the
// phase 2 file's SHA-256 in the sled's artifact store.
type HostPhase2DesiredContents struct {
	Type string `json:"type"`
	Hash string `json:"hash,omitempty"`
}

// Desired contents tags.
const (
	Phase2CurrentContents = "current_contents"
	Phase2Artifact        = "artifact"
)

// HostPhase2DesiredSlots is OmicronSledConfig's host_phase_2.
type HostPhase2DesiredSlots struct {
	SlotA HostPhase2DesiredContents `json:"slot_a"`
	SlotB HostPhase2DesiredContents `json:"slot_b"`
}

// Slot returns the desired contents of disk slot ("A" or "B").
func (s *HostPhase2DesiredSlots) Slot(slot string) *HostPhase2DesiredContents {
	if slot == M2SlotB {
		return &s.SlotB
	}
	return &s.SlotA
}

// DesiredHostPhase2 reads the config's host_phase_2; absent means both
// slots keep their current contents (the document's default).
func (c OmicronSledConfig) DesiredHostPhase2() (HostPhase2DesiredSlots, error) {
	out := HostPhase2DesiredSlots{SlotA: HostPhase2DesiredContents{Type: Phase2CurrentContents}, SlotB: HostPhase2DesiredContents{Type: Phase2CurrentContents}}
	if len(c.HostPhase2) == 0 || string(c.HostPhase2) == "null" {
		return out, nil
	}
	if err := json.Unmarshal(c.HostPhase2, &out); err != nil {
		return out, fmt.Errorf("host_phase_2: %w", err)
	}
	for _, s := range []*HostPhase2DesiredContents{&out.SlotA, &out.SlotB} {
		switch s.Type {
		case Phase2CurrentContents:
		case Phase2Artifact:
			if b, err := hex.DecodeString(s.Hash); err != nil || len(b) != 32 {
				return out, fmt.Errorf("host_phase_2: artifact hash %q is not 32 bytes of hex", s.Hash)
			}
		default:
			return out, fmt.Errorf("host_phase_2: unknown type %q", s.Type)
		}
	}
	return out, nil
}

// WithHostPhase2 is the config at generation gen with disk slot's phase 2
// set to the artifact hash; everything else (the other slot included) is
// c's.
func (c OmicronSledConfig) WithHostPhase2(gen uint64, slot, hash string) (OmicronSledConfig, error) {
	want, err := c.DesiredHostPhase2()
	if err != nil {
		return c, err
	}
	*want.Slot(slot) = HostPhase2DesiredContents{Type: Phase2Artifact, Hash: strings.ToLower(hash)}
	raw, err := json.Marshal(want)
	if err != nil {
		return c, err
	}
	out := c.Clone()
	out.Generation, out.HostPhase2 = gen, raw
	return out, nil
}

// BootPartitions is inventory's last_reconciliation.boot_partitions: the
// disk the host booted from and what each boot partition holds. Each is
// a Rust Result: {"ok": …} or {"err": "…"}.
type BootPartitions struct {
	BootDisk BootResult[string]               `json:"boot_disk"`
	SlotA    BootResult[BootPartitionDetails] `json:"slot_a"`
	SlotB    BootResult[BootPartitionDetails] `json:"slot_b"`
}

// Slot returns disk slot's contents ("A" or "B").
func (b BootPartitions) Slot(slot string) BootResult[BootPartitionDetails] {
	if slot == M2SlotB {
		return b.SlotB
	}
	return b.SlotA
}

// BootResult is {"ok": T} or {"err": message}.
type BootResult[T any] struct {
	Ok  *T     `json:"ok,omitempty"`
	Err string `json:"err,omitempty"`
}

// Value is the ok value, or an error with the sled-agent's message.
func (r BootResult[T]) Value() (T, error) {
	if r.Ok != nil {
		return *r.Ok, nil
	}
	var zero T
	if r.Err != "" {
		return zero, errors.New(r.Err)
	}
	return zero, errors.New("neither ok nor err")
}

// BootPartitionDetails is a boot partition holding a valid phase 2 image:
// the whole file's SHA-256 (the artifact store's name for it) and its
// header (whose sha256 is MGS's name for it).
type BootPartitionDetails struct {
	ArtifactHash string          `json:"artifact_hash"`
	ArtifactSize uint64          `json:"artifact_size"`
	Header       BootImageHeader `json:"header"`
}

// BootImageHeader is a phase 2 image's header as sled-agent reports it
// (sha256 as an array of 32 bytes).
type BootImageHeader struct {
	DataSize   uint64   `json:"data_size"`
	Flags      uint64   `json:"flags"`
	ImageName  string   `json:"image_name"`
	ImageSize  uint64   `json:"image_size"`
	SHA256     [32]byte `json:"sha256"`
	TargetSize uint64   `json:"target_size"`
}

// ArtifactConfig is the artifact store's configuration: the artifacts the
// sled keeps, under a generation (GET/PUT /artifacts-config).
type ArtifactConfig struct {
	Artifacts  []string `json:"artifacts"`
	Generation uint64   `json:"generation"`
}

// Has reports whether the config lists artifact hash.
func (c ArtifactConfig) Has(hash string) bool {
	for _, a := range c.Artifacts {
		if strings.EqualFold(a, hash) {
			return true
		}
	}
	return false
}

// ArtifactPutResponse is PUT /artifacts/{sha256}'s answer.
type ArtifactPutResponse struct {
	Datasets         uint64 `json:"datasets"`
	SuccessfulWrites uint64 `json:"successful_writes"`
}

// ArtifactListResponse is GET /artifacts: the artifacts present, each with
// the number of datasets holding it.
type ArtifactListResponse struct {
	Generation uint64            `json:"generation"`
	List       map[string]uint64 `json:"list"`
}
