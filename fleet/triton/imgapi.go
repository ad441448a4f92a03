package triton

import (
	"context"
	"crypto/sha1" //nolint:gosec // IMGAPI manifests carry SHA-1 digests.
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
)

// Image types as IMGAPI reports them; agent packages are type "other".
const (
	ImageTypeOther = "other"
	ImageTypeZone  = "zone-dataset"
)

// Image is an IMGAPI image manifest (the subset fleetsaga uses). Agent
// images are built from their repository's manifest.tmpl
// (TritonDataCenter/sdc-cn-agent manifest.tmpl, triton-cmon-agent
// manifest.tmpl): version "VERSION-BUILDSTAMP", tags smartdc_service "true"
// and buildstamp.
type Image struct {
	V           int            `json:"v"`
	UUID        uuid.UUID      `json:"uuid"`
	Owner       uuid.UUID      `json:"owner"`
	Name        string         `json:"name"`
	Version     string         `json:"version"`
	Description string         `json:"description,omitempty"`
	Type        string         `json:"type"`
	OS          string         `json:"os"`
	State       string         `json:"state"`
	Disabled    bool           `json:"disabled"`
	Public      bool           `json:"public"`
	PublishedAt *time.Time     `json:"published_at,omitempty"`
	Tags        map[string]any `json:"tags,omitempty"`
	Files       []ImageFile    `json:"files"`
}

// ImageFile describes an image's file.
type ImageFile struct {
	SHA1        string `json:"sha1"`
	Size        int64  `json:"size"`
	Compression string `json:"compression"`
}

// Tags of agent images (manifest.tmpl).
const (
	TagSmartDCService = "smartdc_service"
	TagBuildstamp     = "buildstamp"
)

// IsAgent reports whether the image is an agent package as the agents'
// manifest.tmpl builds them: type other, tagged smartdc_service "true" (a
// string in the template; a JSON true is read the same).
func (im Image) IsAgent() bool {
	if im.Type != ImageTypeOther {
		return false
	}
	switch v := im.Tags[TagSmartDCService].(type) {
	case string:
		return v == "true"
	case bool:
		return v
	}
	return false
}

// Buildstamp is the image's buildstamp tag ("" if none), e.g.
// "master-20240101T000000Z-g1a2b3c4": branch, build time, git hash.
func (im Image) Buildstamp() string {
	s, _ := im.Tags[TagBuildstamp].(string)
	return s
}

// Newest is the image published last, as sdcadm picks an update
// (sdcadm lib/sdcadm.js and lib/cli/do_update_agents.js sort by
// published_at and take the last), never by comparing version strings. An
// image without published_at counts as published before any other; of two
// published at once the one listed later wins. ok is false for no images.
func Newest(images []Image) (Image, bool) {
	var best *Image
	for i := range images {
		im := &images[i]
		if best == nil || !publishedBefore(im, best) {
			best = im
		}
	}
	if best == nil {
		return Image{}, false
	}
	return *best, true
}

// ComparePublished orders two images by published_at, as sdcadm orders
// agent images (never by version strings: not every agent's version has a
// buildstamp, and builds of one version differ only in it): -1 when a was
// published before b, 1 after, 0 at once. ok is false when either has no
// published_at (IMGAPI does not know it, or an image without one).
func ComparePublished(a, b Image) (c int, ok bool) {
	if a.PublishedAt == nil || b.PublishedAt == nil {
		return 0, false
	}
	return a.PublishedAt.Compare(*b.PublishedAt), true
}

func publishedBefore(a, b *Image) bool {
	switch {
	case a.PublishedAt == nil:
		return b.PublishedAt != nil
	case b.PublishedAt == nil:
		return false
	}
	return a.PublishedAt.Before(*b.PublishedAt)
}

// IMGAPI is a client of the Images API.
type IMGAPI struct{ c *client }

// NewIMGAPI returns an IMGAPI client for base.
func NewIMGAPI(base string, opts ...Option) (*IMGAPI, error) {
	c, err := newClient("imgapi", base, opts)
	if err != nil {
		return nil, err
	}
	return &IMGAPI{c: c}, nil
}

// GetImage returns an image manifest.
func (i *IMGAPI) GetImage(ctx context.Context, id uuid.UUID) (Image, error) {
	var out Image
	err := i.c.get(ctx, "/images/"+id.String(), nil, &out)
	return out, err
}

// ListImages lists images, optionally by name.
func (i *IMGAPI) ListImages(ctx context.Context, name string) ([]Image, error) {
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	var out []Image
	err := i.c.get(ctx, "/images", q, &out)
	return out, err
}

// VerifyFile streams the image's file and checks it against the manifest's
// size and SHA-1 (without holding the file in memory). A mismatch is a
// non-retryable *FileMismatchError.
func (i *IMGAPI) VerifyFile(ctx context.Context, im Image) error {
	if len(im.Files) != 1 {
		return &FileMismatchError{Image: im.UUID, Reason: fmt.Sprintf("manifest lists %d files, want 1", len(im.Files))}
	}
	want := im.Files[0]
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
	}
	u := i.c.base + "/images/" + im.UUID.String() + "/file"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", i.c.userAgent)
	resp, err := i.c.hc.Do(req)
	if err != nil {
		return &Error{API: "imgapi", Method: "GET", URL: u, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e := &Error{API: "imgapi", Method: "GET", URL: u, Status: resp.StatusCode, Message: resp.Status}
		if resp.StatusCode == http.StatusNotFound {
			e.Code = CodeResourceNotFound
		}
		return e
	}
	h := sha1.New() //nolint:gosec
	n, err := io.Copy(h, io.LimitReader(resp.Body, want.Size+1))
	if err != nil {
		return &Error{API: "imgapi", Method: "GET", URL: u, Err: err}
	}
	if n != want.Size {
		got := fmt.Sprintf("%d bytes", n)
		if n > want.Size {
			got = "more"
		}
		return &FileMismatchError{Image: im.UUID, Reason: fmt.Sprintf("size: manifest says %d bytes, file has %s", want.Size, got)}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want.SHA1 {
		return &FileMismatchError{Image: im.UUID, Reason: fmt.Sprintf("sha1: manifest says %s, file is %s", want.SHA1, got)}
	}
	return nil
}

// FileMismatchError is an image whose file does not match its manifest.
type FileMismatchError struct {
	Image  uuid.UUID
	Reason string
}

func (e *FileMismatchError) Error() string {
	return fmt.Sprintf("image %s file does not match its manifest: %s", e.Image, e.Reason)
}
