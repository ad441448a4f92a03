package mgs

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// SP component names.
const (
	ComponentSP            = "sp"
	ComponentHostBootFlash = "host-boot-flash"
	ComponentRoT           = "rot"
	ComponentStage0        = "stage0"
	ComponentSPAuxFlash    = "sp-aux-flash"
)

// SpType is the kind of SP: sled, switch or power.
type SpType string

// SP types.
const (
	SpTypeSled   SpType = "sled"
	SpTypeSwitch SpType = "switch"
	SpTypePower  SpType = "power"
)

// Valid reports whether t is one of the three SP types.
func (t SpType) Valid() bool { return t == SpTypeSled || t == SpTypeSwitch || t == SpTypePower }

// SpIdentifier names one SP.
type SpIdentifier struct {
	Type SpType `json:"type"`
	Slot uint16 `json:"slot"`
}

func (id SpIdentifier) String() string { return fmt.Sprintf("%s/%d", id.Type, id.Slot) }

// PowerState is the host power state the SP controls.
type PowerState string

// Power states.
const (
	PowerA0 PowerState = "A0"
	PowerA1 PowerState = "A1"
	PowerA2 PowerState = "A2"
)

// SpState is the subset of MGS's SpState fleetsaga reads. Model is the part
// number.
type SpState struct {
	SerialNumber    string     `json:"serial_number"`
	Model           string     `json:"model"`
	Revision        uint32     `json:"revision"`
	HubrisArchiveID string     `json:"hubris_archive_id"`
	PowerState      PowerState `json:"power_state"`
}

func (s *SpState) UnmarshalJSON(b []byte) error {
	var raw struct {
		SerialNumber    *string     `json:"serial_number"`
		Model           *string     `json:"model"`
		Revision        *uint32     `json:"revision"`
		HubrisArchiveID *string     `json:"hubris_archive_id"`
		PowerState      *PowerState `json:"power_state"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw.SerialNumber == nil || raw.Model == nil || raw.Revision == nil || raw.HubrisArchiveID == nil || raw.PowerState == nil {
		return errors.New("SpState: serial_number, model, revision, hubris_archive_id and power_state are required")
	}
	*s = SpState{*raw.SerialNumber, *raw.Model, *raw.Revision, *raw.HubrisArchiveID, *raw.PowerState}
	return nil
}

// Caboose is a firmware slot's caboose (SpComponentCaboose).
type Caboose struct {
	Board     string  `json:"board"`
	GitCommit string  `json:"git_commit"`
	Name      string  `json:"name"`
	Version   string  `json:"version"`
	Sign      *string `json:"sign,omitempty"`
	Epoch     *string `json:"epoch,omitempty"`
}

func (c *Caboose) UnmarshalJSON(b []byte) error {
	var raw struct {
		Board     *string `json:"board"`
		GitCommit *string `json:"git_commit"`
		Name      *string `json:"name"`
		Version   *string `json:"version"`
		Sign      *string `json:"sign"`
		Epoch     *string `json:"epoch"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw.Board == nil || raw.GitCommit == nil || raw.Name == nil || raw.Version == nil {
		return errors.New("SpComponentCaboose: board, git_commit, name and version are required")
	}
	*c = Caboose{*raw.Board, *raw.GitCommit, *raw.Name, *raw.Version, raw.Sign, raw.Epoch}
	return nil
}

// UpdateState is SpUpdateStatus's `state` tag.
type UpdateState string

// Update states.
const (
	UpdateNone       UpdateState = "none"
	UpdatePreparing  UpdateState = "preparing"
	UpdateInProgress UpdateState = "in_progress"
	UpdateComplete   UpdateState = "complete"
	UpdateAborted    UpdateState = "aborted"
	UpdateFailed     UpdateState = "failed"
	UpdateRotError   UpdateState = "rot_error"
)

// PreparationProgress is UpdatePreparationProgress (units defined by the SP).
type PreparationProgress struct {
	Current uint32 `json:"current"`
	Total   uint32 `json:"total"`
}

// UpdateStatus is SpUpdateStatus, a tagged union on State. ID is set for
// every state but none; Progress for preparing (optional); BytesReceived and
// TotalBytes for in_progress; Code for failed; Message for rot_error.
type UpdateStatus struct {
	State         UpdateState
	ID            uuid.UUID
	Progress      *PreparationProgress
	BytesReceived uint32
	TotalBytes    uint32
	Code          uint32
	Message       string
}

func (s UpdateStatus) String() string {
	switch s.State {
	case UpdateNone, "":
		return "none"
	case UpdateInProgress:
		return fmt.Sprintf("in_progress{%s, %d/%d}", s.ID, s.BytesReceived, s.TotalBytes)
	case UpdateFailed:
		return fmt.Sprintf("failed{%s, code %d}", s.ID, s.Code)
	case UpdateRotError:
		return fmt.Sprintf("rot_error{%s, %s}", s.ID, s.Message)
	default:
		return fmt.Sprintf("%s{%s}", s.State, s.ID)
	}
}

// MarshalJSON writes the tagged shape MGS uses (the zero value is none).
func (s UpdateStatus) MarshalJSON() ([]byte, error) {
	m := map[string]any{"state": s.State}
	switch s.State {
	case UpdateNone, "":
		m["state"] = UpdateNone
	case UpdatePreparing:
		m["id"], m["progress"] = s.ID, s.Progress
	case UpdateInProgress:
		m["id"], m["bytes_received"], m["total_bytes"] = s.ID, s.BytesReceived, s.TotalBytes
	case UpdateFailed:
		m["id"], m["code"] = s.ID, s.Code
	case UpdateRotError:
		m["id"], m["message"] = s.ID, s.Message
	case UpdateComplete, UpdateAborted:
		m["id"] = s.ID
	default:
		return nil, fmt.Errorf("SpUpdateStatus: unknown state %q", s.State)
	}
	return json.Marshal(m)
}

// UnmarshalJSON checks the tag and each variant's required fields.
func (s *UpdateStatus) UnmarshalJSON(b []byte) error {
	var raw struct {
		State         *UpdateState         `json:"state"`
		ID            *uuid.UUID           `json:"id"`
		Progress      *PreparationProgress `json:"progress"`
		BytesReceived *uint32              `json:"bytes_received"`
		TotalBytes    *uint32              `json:"total_bytes"`
		Code          *uint32              `json:"code"`
		Message       *string              `json:"message"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("SpUpdateStatus: %w", err)
	}
	if raw.State == nil {
		return errors.New("SpUpdateStatus: state is required")
	}
	out := UpdateStatus{State: *raw.State}
	need := func(ok bool, fields string) error {
		if !ok {
			return fmt.Errorf("SpUpdateStatus %s: %s required", *raw.State, fields)
		}
		return nil
	}
	var err error
	switch *raw.State {
	case UpdateNone:
	case UpdatePreparing:
		err = need(raw.ID != nil, "id is")
		out.Progress = raw.Progress
	case UpdateInProgress:
		err = need(raw.ID != nil && raw.BytesReceived != nil && raw.TotalBytes != nil, "id, bytes_received and total_bytes are")
		if err == nil {
			out.BytesReceived, out.TotalBytes = *raw.BytesReceived, *raw.TotalBytes
		}
	case UpdateComplete, UpdateAborted:
		err = need(raw.ID != nil, "id is")
	case UpdateFailed:
		err = need(raw.ID != nil && raw.Code != nil, "id and code are")
		if err == nil {
			out.Code = *raw.Code
		}
	case UpdateRotError:
		err = need(raw.ID != nil && raw.Message != nil, "id and message are")
		if err == nil {
			out.Message = *raw.Message
		}
	default:
		return fmt.Errorf("SpUpdateStatus: unknown state %q", *raw.State)
	}
	if err != nil {
		return err
	}
	if raw.ID != nil {
		out.ID = *raw.ID
	}
	*s = out
	return nil
}

// HostPhase2Progress is the last host phase 2 request seen for an SP:
// Available false means "none".
type HostPhase2Progress struct {
	Available bool
	// ImageSHA256 is the hex SHA-256 of the phase 2 image being fetched.
	ImageSHA256 string
	Offset      uint64
	TotalSize   uint64
	// Age is how long ago the request was seen.
	Age time.Duration
}

type durationJSON struct {
	Secs  *uint64 `json:"secs"`
	Nanos *uint32 `json:"nanos"`
}

// MarshalJSON writes the tagged shape MGS uses.
func (p HostPhase2Progress) MarshalJSON() ([]byte, error) {
	if !p.Available {
		return []byte(`{"progress":"none"}`), nil
	}
	secs, nanos := uint64(p.Age/time.Second), uint32(p.Age%time.Second)
	return json.Marshal(map[string]any{
		"progress":   "available",
		"image_id":   map[string]string{"sha256_hash": p.ImageSHA256},
		"offset":     p.Offset,
		"total_size": p.TotalSize,
		"age":        durationJSON{&secs, &nanos},
	})
}

// UnmarshalJSON checks the tag and the required fields.
func (p *HostPhase2Progress) UnmarshalJSON(b []byte) error {
	var raw struct {
		Progress *string `json:"progress"`
		ImageID  *struct {
			SHA256 *string `json:"sha256_hash"`
		} `json:"image_id"`
		Offset    *uint64       `json:"offset"`
		TotalSize *uint64       `json:"total_size"`
		Age       *durationJSON `json:"age"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("HostPhase2Progress: %w", err)
	}
	if raw.Progress == nil {
		return errors.New("HostPhase2Progress: progress is required")
	}
	switch *raw.Progress {
	case "none":
		*p = HostPhase2Progress{}
		return nil
	case "available":
	default:
		return fmt.Errorf("HostPhase2Progress: unknown progress %q", *raw.Progress)
	}
	if raw.ImageID == nil || raw.ImageID.SHA256 == nil || raw.Offset == nil || raw.TotalSize == nil ||
		raw.Age == nil || raw.Age.Secs == nil || raw.Age.Nanos == nil {
		return errors.New("HostPhase2Progress available: image_id.sha256_hash, offset, total_size and age{secs,nanos} are required")
	}
	*p = HostPhase2Progress{
		Available:   true,
		ImageSHA256: *raw.ImageID.SHA256,
		Offset:      *raw.Offset,
		TotalSize:   *raw.TotalSize,
		Age:         time.Duration(*raw.Age.Secs)*time.Second + time.Duration(*raw.Age.Nanos),
	}
	return nil
}

// HashState is ComponentFirmwareHashStatus's `status` tag.
type HashState string

// Hash states.
const (
	HashNotCalculated HashState = "hash_not_calculated"
	HashInProgress    HashState = "hash_in_progress"
	HashHashed        HashState = "hashed"
)

// HashStatus is a host boot flash slot's hash; SHA256 (hex) when hashed.
type HashStatus struct {
	Status HashState
	SHA256 string
}

// UnmarshalJSON checks the tag and, when hashed, the 32-byte digest.
func (h *HashStatus) UnmarshalJSON(b []byte) error {
	var raw struct {
		Status *HashState `json:"status"`
		SHA256 []int      `json:"sha256"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("ComponentFirmwareHashStatus: %w", err)
	}
	if raw.Status == nil {
		return errors.New("ComponentFirmwareHashStatus: status is required")
	}
	switch *raw.Status {
	case HashNotCalculated, HashInProgress:
		*h = HashStatus{Status: *raw.Status}
		return nil
	case HashHashed:
	default:
		return fmt.Errorf("ComponentFirmwareHashStatus: unknown status %q", *raw.Status)
	}
	if len(raw.SHA256) != 32 {
		return fmt.Errorf("ComponentFirmwareHashStatus hashed: sha256 must have 32 bytes, got %d", len(raw.SHA256))
	}
	sum := make([]byte, 32)
	for i, v := range raw.SHA256 {
		if v < 0 || v > 255 {
			return fmt.Errorf("ComponentFirmwareHashStatus hashed: sha256[%d]=%d is not a byte", i, v)
		}
		sum[i] = byte(v)
	}
	*h = HashStatus{Status: HashHashed, SHA256: hex.EncodeToString(sum)}
	return nil
}

// MarshalJSON writes the tagged shape MGS uses.
func (h HashStatus) MarshalJSON() ([]byte, error) {
	if h.Status != HashHashed {
		return json.Marshal(map[string]any{"status": h.Status})
	}
	raw, err := hex.DecodeString(h.SHA256)
	if err != nil {
		return nil, err
	}
	ints := make([]int, len(raw))
	for i, b := range raw {
		ints[i] = int(b)
	}
	return json.Marshal(map[string]any{"status": h.Status, "sha256": ints})
}

// HostStartupOptions is what the host reads from its SP when it boots (MGS
// sends and takes the whole object). Phase2RecoveryMode makes the host
// fetch phase 2 through the SP instead of booting the phase 2 on its disk.
type HostStartupOptions struct {
	BootNet            bool `json:"boot_net"`
	BootRamdisk        bool `json:"boot_ramdisk"`
	Bootrd             bool `json:"bootrd"`
	Kbm                bool `json:"kbm"`
	Kmdb               bool `json:"kmdb"`
	KmdbBoot           bool `json:"kmdb_boot"`
	Phase2RecoveryMode bool `json:"phase2_recovery_mode"`
	Prom               bool `json:"prom"`
	Verbose            bool `json:"verbose"`
}

// UnmarshalJSON requires every field, as the document does.
func (o *HostStartupOptions) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("HostStartupOptions: %w", err)
	}
	for _, f := range []string{"boot_net", "boot_ramdisk", "bootrd", "kbm", "kmdb", "kmdb_boot", "phase2_recovery_mode", "prom", "verbose"} {
		if _, ok := raw[f]; !ok {
			return fmt.Errorf("HostStartupOptions: %s is required", f)
		}
	}
	type plain HostStartupOptions
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("HostStartupOptions: %w", err)
	}
	*o = HostStartupOptions(p)
	return nil
}
