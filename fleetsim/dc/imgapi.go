package dc

import (
	"io"
	"net/http"
	"strconv"

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

func (im *image) manifest() triton.Image {
	out := triton.Image{
		V: 2, UUID: im.spec.UUID, Name: im.spec.Name, Version: im.spec.Version,
		Type: triton.ImageTypeOther, OS: "other", State: "active",
		Files: []triton.ImageFile{{SHA1: im.manifestSHA1(), Size: im.spec.Size, Compression: im.compression()}},
	}
	pub := im.published
	out.PublishedAt = &pub
	if im.spec.EffectiveType() == spec.ImageTypeAgent {
		out.Tags = map[string]any{"smartdc_agent": true}
	} else {
		out.Type, out.OS = triton.ImageTypeZone, "smartos"
	}
	return out
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
