package dc

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

func (d *DC) imgapiMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /images", d.listImages)
	mux.HandleFunc("GET /images/{uuid}", d.getImage)
	mux.HandleFunc("GET /images/{uuid}/file", d.getImageFile)
	return withFallback(mux, "imgapi")
}

// manifest is the image as IMGAPI serves it: an agent image has the fields
// of its repository's manifest.tmpl filled as the release build fills them
// (sdc-cn-agent manifest.tmpl and Makefile, triton-cmon-agent
// manifest.tmpl), and published_at.
func (im *image) manifest() triton.Image {
	out := triton.Image{
		V: 2, UUID: im.spec.UUID, Owner: uuid.Nil, Name: im.spec.Name, Version: im.spec.Version,
		Description: im.spec.Name + " agent", Type: triton.ImageTypeOther, OS: "other", State: "active",
		Files: []triton.ImageFile{{SHA1: im.manifestSHA1(), Size: im.spec.Size, Compression: im.compression()}},
	}
	pub := im.published
	out.PublishedAt = &pub
	if im.spec.EffectiveType() == spec.ImageTypeAgent {
		out.Tags = map[string]any{triton.TagSmartDCService: "true"}
		if stamp := buildstamp(im.spec.Version); stamp != "" {
			out.Tags[triton.TagBuildstamp] = stamp
		}
	} else {
		out.Type, out.OS = triton.ImageTypeZone, "smartos"
	}
	return out
}

// buildstamp is the BUILDSTAMP of a "VERSION-BUILDSTAMP" version ("" when
// the version has no "-").
func buildstamp(version string) string {
	if _, stamp, ok := strings.Cut(version, "-"); ok {
		return stamp
	}
	return ""
}

// firstPublished is the default published_at of the spec's first image;
// each later one is published an hour after the one before.
var firstPublished = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// publishedAt is an image's published_at: the spec's, or its place in the
// spec.
func publishedAt(im spec.Image, index int) time.Time {
	if im.PublishedAt != nil {
		return im.PublishedAt.UTC()
	}
	return firstPublished.Add(time.Duration(index) * time.Hour)
}

func (im *image) compression() string {
	if im.spec.Compression == "" {
		return "gzip"
	}
	return im.spec.Compression
}

func (d *DC) listImages(w http.ResponseWriter, r *http.Request) {
	name, version := r.URL.Query().Get("name"), r.URL.Query().Get("version")
	d.mu.Lock()
	defer d.mu.Unlock()
	out := []triton.Image{}
	for _, id := range d.imgOrder {
		im := d.images[id]
		if (name == "" || im.spec.Name == name) && (version == "" || im.spec.Version == version) {
			out = append(out, im.manifest())
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *DC) lookupImage(w http.ResponseWriter, r *http.Request) *image {
	id, ok := pathUUID(w, r, "uuid")
	if !ok {
		return nil
	}
	d.mu.Lock()
	im := d.images[id]
	d.mu.Unlock()
	if im == nil {
		notFound(w, "image", id)
	}
	return im
}

func (d *DC) getImage(w http.ResponseWriter, r *http.Request) {
	if im := d.lookupImage(w, r); im != nil {
		writeJSON(w, http.StatusOK, im.manifest())
	}
}

// getImageFile streams the generated file (never held in memory).
func (d *DC) getImageFile(w http.ResponseWriter, r *http.Request) {
	im := d.lookupImage(w, r)
	if im == nil {
		return
	}
	size := im.spec.EffectiveFileSize()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, fileReader(im.spec.UUID, size))
}
