package mgs

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// A host phase 2 image starts with a header block (omicron
// sled-agent/config-reconciler/src/host_phase_2.rs, mgs
// gateway-sp-comms/src/host_phase2.rs), little-endian: magic, version,
// flags, data_size, image_size, target_size, the SHA-256 of the data after
// the block, a 128-byte dataset name and a 128-byte image name; the file is
// the block and then data_size bytes. MGS's recovery upload
// (POST /recovery/host-phase2) checks magic, version and length (else 400
// BadHostPhase2Image) and names the image by the header's SHA-256, not the
// file's; sled-agent names the same file by the whole file's SHA-256.
const (
	// Phase2HeaderSize is the header block in front of the data.
	Phase2HeaderSize = 4096
	// Phase2Magic and Phase2Version are what MGS and sled-agent accept.
	Phase2Magic   = 0x1DEB0075
	Phase2Version = 2
	// phase2FieldsLen is the part of the block MGS deserializes (hubpack
	// OnDiskHeader: 4+4+4*8+32+128 bytes); sled-agent also reads the image
	// name after it.
	phase2FieldsLen = 200
	phase2NameLen   = 128
	// CodeBadHostPhase2Image is MGS's 400 for an upload that is not a phase
	// 2 image.
	CodeBadHostPhase2Image = "BadHostPhase2Image"
)

// Phase2Header is a host phase 2 image's header.
type Phase2Header struct {
	Flags      uint64 `json:"flags"`
	DataSize   uint64 `json:"dataSize"`
	ImageSize  uint64 `json:"imageSize"`
	TargetSize uint64 `json:"targetSize"`
	// SHA256 (hex) is the digest of the data after the header block: the
	// image's ID at MGS (recovery upload, host-phase2-progress image_id).
	SHA256    string `json:"sha256"`
	ImageName string `json:"imageName,omitempty"`
}

// FileSize is the length of the whole image the header describes.
func (h Phase2Header) FileSize() uint64 { return h.DataSize + Phase2HeaderSize }

// ParsePhase2Header reads a phase 2 image's header from its first bytes
// and checks magic and version, with MGS's error messages.
func ParsePhase2Header(b []byte) (Phase2Header, error) {
	var h Phase2Header
	if len(b) < phase2FieldsLen {
		return h, fmt.Errorf("could not deserialize image header")
	}
	le := binary.LittleEndian
	if m := le.Uint32(b[0:]); m != Phase2Magic {
		return h, fmt.Errorf("incorrect magic in image header (expected %#x, got %#x)", Phase2Magic, m)
	}
	if v := le.Uint32(b[4:]); v != Phase2Version {
		return h, fmt.Errorf("incorrect version in image header (expected %#x, got %#x)", Phase2Version, v)
	}
	h.Flags, h.DataSize, h.ImageSize, h.TargetSize = le.Uint64(b[8:]), le.Uint64(b[16:]), le.Uint64(b[24:]), le.Uint64(b[32:])
	h.SHA256 = hex.EncodeToString(b[40:72])
	if len(b) >= phase2FieldsLen+phase2NameLen {
		name := b[phase2FieldsLen : phase2FieldsLen+phase2NameLen]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		h.ImageName = string(name)
	}
	return h, nil
}

// CheckPhase2Size is MGS's length check: the image is the header block
// and exactly data_size bytes.
func (h Phase2Header) CheckPhase2Size(got uint64) error {
	if want := h.FileSize(); got != want {
		return fmt.Errorf("incorrect image size (expected %d, got %d)", want, got)
	}
	return nil
}

// EncodePhase2Header writes h as a header block (the image's first
// Phase2HeaderSize bytes); datasetName goes in its field. h.SHA256 must be
// 64 hex digits.
func EncodePhase2Header(h Phase2Header, datasetName string) ([]byte, error) {
	sum, err := hex.DecodeString(h.SHA256)
	if err != nil || len(sum) != 32 {
		return nil, fmt.Errorf("phase 2 header: sha256 %q is not 32 bytes of hex", h.SHA256)
	}
	if len(datasetName) > phase2NameLen || len(h.ImageName) > phase2NameLen {
		return nil, fmt.Errorf("phase 2 header: names are at most %d bytes", phase2NameLen)
	}
	b := make([]byte, Phase2HeaderSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], Phase2Magic)
	le.PutUint32(b[4:], Phase2Version)
	le.PutUint64(b[8:], h.Flags)
	le.PutUint64(b[16:], h.DataSize)
	le.PutUint64(b[24:], h.ImageSize)
	le.PutUint64(b[32:], h.TargetSize)
	copy(b[40:72], sum)
	copy(b[72:72+phase2NameLen], datasetName)
	copy(b[phase2FieldsLen:], h.ImageName)
	return b, nil
}
