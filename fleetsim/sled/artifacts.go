package sled

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// The artifact store as sled-agent/src/artifact_store.rs has it: a config
// (generation + the artifacts to keep, ledgered) and the artifacts, each
// PUT under the config's generation only if the config lists it, checked
// against its SHA-256. fleetsim keeps each artifact's size and, for a
// phase 2 image, its header, not its bytes (fleetsim/DEVIATIONS.md). A
// body is taken at the spec's artifactStoreBytesPerSecond, when set; the
// fault artifact_upload_stall stops taking it partway (stall.go).

// storeDatasets is the number of artifact datasets (one per M.2) a write
// goes to, as ArtifactPutResponse counts them.
const storeDatasets = 2

// maxArtifactBytes bounds a PUT /artifacts body (a phase 2 image is at most
// MGS's 512 MiB; zone images are smaller).
const maxArtifactBytes = 1 << 30

type storedArtifact struct {
	size   int64
	phase2 *sledagent.BootPartitionDetails // nil: not a phase 2 image
}

func (s *sledAgent) getArtifactConfig(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	cfg := s.artConfig
	s.mu.Unlock()
	if cfg == nil {
		httpx.WriteError(w, http.StatusNotFound, "", "No artifact configuration present")
		return
	}
	httpx.WriteJSON(w, http.StatusOK, cfg)
}

// putArtifactConfig: a higher generation replaces the config (if it keeps
// every artifact the ledgered sled config uses) and drops the artifacts
// it no longer lists (the delete reconciler); the same config again is a
// no-op; anything else is a 409 CONFIG_GENERATION.
func (s *sledAgent) putArtifactConfig(w http.ResponseWriter, r *http.Request) {
	var cfg sledagent.ArtifactConfig
	if !httpx.ReadJSON(w, r, &cfg, maxConfigBytes) {
		return
	}
	for i, a := range cfg.Artifacts {
		if !isHash(a) {
			httpx.WriteError(w, http.StatusBadRequest, "", fmt.Sprintf("unable to parse JSON body: artifacts[%d]: %q is not 32 bytes of hex", i, a))
			return
		}
		cfg.Artifacts[i] = strings.ToLower(a)
	}
	slices.Sort(cfg.Artifacts)
	cfg.Artifacts = slices.Compact(cfg.Artifacts)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.artConfig
	switch {
	case cur != nil && cfg.Generation == cur.Generation && slices.Equal(cfg.Artifacts, cur.Artifacts):
		w.WriteHeader(http.StatusNoContent)
		return
	case cur != nil && cfg.Generation <= cur.Generation:
		httpx.WriteError(w, http.StatusConflict, "CONFIG_GENERATION", fmt.Sprintf(
			"Attempt to modify config to generation %d while at %d", cfg.Generation, cur.Generation))
		return
	}
	var missing []string
	for _, h := range configArtifacts(s.ledger) {
		if !cfg.Has(h) {
			missing = append(missing, h)
		}
	}
	if len(missing) > 0 {
		httpx.WriteError(w, http.StatusBadRequest, "", fmt.Sprintf(
			"New config is invalid per current sled config: Artifacts in use by ledgered sled config are not present in new artifact config: %v", missing))
		return
	}
	s.artConfig = &cfg
	for h := range s.store {
		if !cfg.Has(h) {
			delete(s.store, h)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// putArtifact stores one artifact (PUT /artifacts/{sha256}?generation=G).
func (s *sledAgent) putArtifact(w http.ResponseWriter, r *http.Request) {
	hash := strings.ToLower(r.PathValue("sha256"))
	if !isHash(hash) {
		httpx.WriteError(w, http.StatusBadRequest, "", fmt.Sprintf("bad parameter in URL path: sha256: %q is not 32 bytes of hex", r.PathValue("sha256")))
		return
	}
	gen, err := strconv.ParseUint(r.URL.Query().Get("generation"), 10, 64)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "", "unable to parse query string: generation: a positive integer is required")
		return
	}
	s.mu.Lock()
	cfg := s.artConfig
	s.mu.Unlock()
	switch {
	case cfg == nil:
		httpx.WriteError(w, http.StatusBadRequest, "", "No artifact configuration present")
		return
	case gen != cfg.Generation:
		httpx.WriteError(w, http.StatusConflict, "", fmt.Sprintf("Attempt to put object with generation %d while at %d", gen, cfg.Generation))
		return
	case !cfg.Has(hash):
		httpx.WriteError(w, http.StatusBadRequest, "", fmt.Sprintf("Attempt to put artifact %s not in config generation %d", hash, cfg.Generation))
		return
	}
	sum := sha256.New()
	head := make([]byte, 0, fmgs.Phase2HeaderSize)
	rate := float64(s.d.env.Spec.Timings.ArtifactStoreBytesPerSecond) * s.d.env.Spec.SpeedUp
	body := paced(r.Context(), io.LimitReader(r.Body, maxArtifactBytes+1), rate)
	if f, stall := s.d.env.Faults.Fire(faults.ArtifactUploadStall, "sled/"+s.id.String()); stall {
		body = stalling(r.Context(), s.d.ctx, body, max(r.ContentLength, 0)*int64(f.AfterPercent)/100)
	}
	n, err := io.Copy(io.MultiWriter(sum, headWriter{&head}), body)
	if errors.Is(err, errStoreStalled) {
		httpx.WriteError(w, http.StatusServiceUnavailable, "", err.Error())
		return
	}
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "", "Error while reading request body: "+err.Error())
		return
	}
	if n > maxArtifactBytes {
		httpx.WriteError(w, http.StatusBadRequest, "", fmt.Sprintf("request body exceeded maximum size of %d bytes", maxArtifactBytes))
		return
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != hash {
		httpx.WriteError(w, http.StatusBadRequest, "", fmt.Sprintf("Digest mismatch: expected %s, actual %s", hash, got))
		return
	}
	s.mu.Lock()
	s.store[hash] = storedArtifact{size: n, phase2: phase2Details(hash, n, head)}
	s.mu.Unlock()
	httpx.WriteJSON(w, http.StatusOK, sledagent.ArtifactPutResponse{Datasets: storeDatasets, SuccessfulWrites: storeDatasets})
}

// listArtifacts is GET /artifacts: the configured artifacts present.
func (s *sledAgent) listArtifacts(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.artConfig == nil {
		httpx.WriteError(w, http.StatusBadRequest, "", "No artifact configuration present")
		return
	}
	out := sledagent.ArtifactListResponse{Generation: s.artConfig.Generation, List: map[string]uint64{}}
	for _, h := range s.artConfig.Artifacts {
		if _, ok := s.store[h]; ok {
			out.List[h] = storeDatasets
		}
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

// missingArtifacts is PUT /omicron-config's existence check: the
// artifacts cfg uses that the store lacks. Caller holds s.mu.
func (s *sledAgent) missingArtifacts(cfg sledagent.OmicronSledConfig) []string {
	var out []string
	for _, h := range configArtifacts(cfg) {
		if _, ok := s.store[h]; !ok {
			out = append(out, fmt.Sprintf("Artifact %s not found", h))
		}
	}
	return out
}

// configArtifacts are the artifacts a sled config uses: zone images from
// the artifact store and the boot partitions' desired phase 2 (omicron
// config_artifact_hashes).
func configArtifacts(cfg sledagent.OmicronSledConfig) []string {
	var out []string
	for _, id := range cfg.ZoneIDs() {
		var src struct {
			Type string `json:"type"`
			Hash string `json:"hash"`
		}
		if json.Unmarshal(cfg.Zones[id].ImageSource, &src) == nil && src.Type == "artifact" && src.Hash != "" {
			out = append(out, strings.ToLower(src.Hash))
		}
	}
	if want, err := cfg.DesiredHostPhase2(); err == nil {
		for _, c := range []sledagent.HostPhase2DesiredContents{want.SlotA, want.SlotB} {
			if c.Type == sledagent.Phase2Artifact {
				out = append(out, strings.ToLower(c.Hash))
			}
		}
	}
	return out
}

func isHash(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == 32
}

// headWriter keeps the first bytes written, up to its capacity.
type headWriter struct{ b *[]byte }

func (h headWriter) Write(p []byte) (int, error) {
	if room := cap(*h.b) - len(*h.b); room > 0 {
		*h.b = append(*h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
