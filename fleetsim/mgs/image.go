package mgs

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// Simulated firmware images.
//
// A real SP image is a Hubris archive whose caboose carries its version and
// board; a host phase 1 image names the phase 2 image it boots (by the
// phase 2 header's SHA-256, which the host asks its SP for). fleetsim's SP
// and phase 1 images carry the same facts in a one-line header (phase 2
// images are in the real format, MakePhase2Image):
//
//	FLEETSIM-IMAGE {"component":"sp","version":"1.1.0","board":"gimlet-e"}\n
//	<filler up to the image size>
//
// The simulator reads the header while it hashes the body as it streams in;
// it never keeps image bodies (only the SHA-256, the length and the header).

// ImageMagic starts every simulated image.
const ImageMagic = "FLEETSIM-IMAGE "

// maxHeaderLen bounds the header line.
const maxHeaderLen = 4096

// ImageHeader is what a simulated image says about itself.
type ImageHeader struct {
	// Component is the SP component the image is for ("sp", "host-boot-flash").
	Component string `json:"component"`
	// Version is the caboose VERS the slot reports once the image is written.
	Version string `json:"version"`
	// Board is the caboose BORD (default "gimlet-e" for SP images).
	Board string `json:"board,omitempty"`
	// Name is the caboose NAME (default "gimlet").
	Name string `json:"name,omitempty"`
	// Phase2 is, for host phase 1 images, the ID of the phase 2 image the
	// host boots after this one: its header's SHA-256 (hex, Phase2ID).
	Phase2 string `json:"phase2,omitempty"`
}

// MakeImage returns a simulated image of at least size bytes whose header is
// h. The filler is deterministic, so the same header and size always give
// the same SHA-256.
func MakeImage(h ImageHeader, size int) []byte {
	var buf bytes.Buffer
	_ = WriteImage(&buf, h, size)
	return buf.Bytes()
}

// WriteImage writes MakeImage(h, size) to w without holding it in memory.
func WriteImage(w io.Writer, h ImageHeader, size int) error {
	hdr, err := json.Marshal(h)
	if err != nil {
		return err
	}
	line := ImageMagic + string(hdr) + "\n"
	if _, err := io.WriteString(w, line); err != nil {
		return err
	}
	return writeFiller(w, h.Component+"/"+h.Version, size-len(line))
}

// WriteImageFile writes a simulated image to path and returns its SHA-256.
func WriteImageFile(path string, h ImageHeader, size int) (string, error) {
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	sum := sha256.New()
	bw := bufio.NewWriter(io.MultiWriter(f, sum))
	err = WriteImage(bw, h, size)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// Phase2DatasetName is the dataset name fleetsim writes in its phase 2
// headers (a real host image's).
const Phase2DatasetName = "rpool/ROOT/ramdisk"

// phase2TargetSize is the header's target_size (a real image's: 4 GiB).
const phase2TargetSize = 1 << 32

// MakePhase2Image returns a host phase 2 image of size bytes in the real
// format (fmgs.Phase2Header): the 4 KiB header block, then deterministic
// data whose SHA-256 the header carries. Its ID at MGS, and the hash a
// phase 1 image names, is that header SHA-256 (Phase2ID). size is raised
// to the header and one byte of data.
func MakePhase2Image(version string, size int) []byte {
	size = max(size, fmgs.Phase2HeaderSize+1)
	var data bytes.Buffer
	_ = writeFiller(&data, "phase2/"+version, size-fmgs.Phase2HeaderSize)
	n := uint64(data.Len())
	hdr, err := fmgs.EncodePhase2Header(fmgs.Phase2Header{
		Flags: 1, DataSize: n, ImageSize: n, TargetSize: phase2TargetSize,
		SHA256: SHA256Hex(data.Bytes()), ImageName: "fleetsim host phase 2 " + version,
	}, Phase2DatasetName)
	if err != nil {
		panic(err) // a version over 100 bytes: a caller's bug
	}
	return append(hdr, data.Bytes()...)
}

// Phase2ID is a phase 2 image's ID as MGS names it: its header's SHA-256
// (hex); "" when img is not a phase 2 image.
func Phase2ID(img []byte) string {
	h, err := fmgs.ParsePhase2Header(img)
	if err != nil {
		return ""
	}
	return h.SHA256
}

// ReadPhase2ID reads a phase 2 image file's header and returns its ID.
func ReadPhase2ID(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, fmgs.Phase2HeaderSize)
	if _, err := io.ReadFull(f, head); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	h, err := fmgs.ParsePhase2Header(head)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return h.SHA256, nil
}

// SHA256Hex is the hex SHA-256 of b.
func SHA256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func writeFiller(w io.Writer, seed string, n int) error {
	if n <= 0 {
		return nil
	}
	block := make([]byte, 4096)
	pat := []byte(seed + "|")
	for i := range block {
		block[i] = pat[i%len(pat)]
	}
	for n > 0 {
		k := min(n, len(block))
		if _, err := w.Write(block[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// imageInfo is what the simulator keeps of a delivered image.
type imageInfo struct {
	SHA256 string
	Size   int64
	// Header is nil when the image has no simulated header.
	Header *ImageHeader
}

// errNoHeader means the image does not start with ImageMagic.
var errNoHeader = errors.New("image has no " + strings.TrimSpace(ImageMagic) + " header")

// imageReader hashes and counts a streamed image and captures its header.
type imageReader struct {
	r      io.Reader
	sum    hash.Hash
	n      int64
	head   []byte // first bytes, until the header line is complete
	header *ImageHeader
	hdrErr error
	done   bool // header parsing finished (found or not)
}

func newImageReader(r io.Reader) *imageReader {
	return &imageReader{r: r, sum: sha256.New()}
}

func (ir *imageReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.sum.Write(p[:n])
		ir.n += int64(n)
		if !ir.done {
			ir.head = append(ir.head, p[:min(n, maxHeaderLen-len(ir.head))]...)
			ir.parseHead(false)
		}
	}
	if err == io.EOF && !ir.done {
		ir.parseHead(true)
	}
	return n, err
}

func (ir *imageReader) parseHead(eof bool) {
	if len(ir.head) < len(ImageMagic) && !eof {
		return
	}
	if !bytes.HasPrefix(ir.head, []byte(ImageMagic)) {
		ir.done, ir.hdrErr, ir.head = true, errNoHeader, nil
		return
	}
	nl := bytes.IndexByte(ir.head, '\n')
	if nl < 0 {
		if eof || len(ir.head) >= maxHeaderLen {
			ir.done, ir.hdrErr, ir.head = true, errors.New("image header line is not terminated within 4 KiB"), nil
		}
		return
	}
	var h ImageHeader
	dec := json.NewDecoder(bytes.NewReader(ir.head[len(ImageMagic):nl]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		ir.hdrErr = fmt.Errorf("bad image header: %w", err)
	} else if h.Version == "" {
		ir.hdrErr = errors.New("bad image header: version is empty")
	} else {
		ir.header = &h
	}
	ir.done, ir.head = true, nil
}

// info returns what was read. Call it after the body hit EOF.
func (ir *imageReader) info() imageInfo {
	return imageInfo{SHA256: hex.EncodeToString(ir.sum.Sum(nil)), Size: ir.n, Header: ir.header}
}
