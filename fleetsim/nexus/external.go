package nexus

import (
	"crypto/subtle"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// The external API subset under /nexus/{rack}/external/: the rack's update
// status and its target release, answered as omicron's
// nexus/src/external_api/http_entrypoints.rs (system_update_status,
// target_release_update) and nexus/src/app/update.rs
// (update_status_external) do. fleetsim keeps no TUF repositories: any
// system version can be made the target (fleetsim/DEVIATIONS.md).

// ExternalAPIVersion is the external API version fleetsim serves:
// nexus-external-2026081901.0.0.json's.
const ExternalAPIVersion = "2026081901.0.0"

// maxExternalBody bounds a request body (SetTargetReleaseParams is one
// short string).
const maxExternalBody = 4 << 10

// TargetRelease is the rack's target release (TargetRelease).
type TargetRelease struct {
	TimeRequested time.Time `json:"time_requested"`
	Version       string    `json:"version"`
}

// contactSupportSince is the external API version that added
// contact_support to UpdateStatus (omicron nexus/external-api/src/lib.rs,
// ADD_CONTACT_SUPPORT_TO_UPDATE_STATUS): an older client is not sent it.
const contactSupportSince = "2026052000.0.0"

// updateStatus is UpdateStatus.
type updateStatus struct {
	ComponentsByReleaseVersion map[string]int `json:"components_by_release_version"`
	ContactSupport             *bool          `json:"contact_support,omitempty"`
	Suspended                  bool           `json:"suspended"`
	TargetRelease              *TargetRelease `json:"target_release"`
	TimeLastStepPlanned        time.Time      `json:"time_last_step_planned"`
}

// systemVersion is the document's pattern of a semver (SetTargetReleaseParams).
var systemVersion = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

func (r *rack) externalHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/system/update/status", r.updateStatus)
	mux.HandleFunc("PUT /v1/system/update/target-release", r.targetReleaseUpdate)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		httpx.WriteError(w, http.StatusNotFound, "", "Not Found")
	})
	return httpx.DefaultAPIVersion(ExternalAPIVersion, r.d.authenticated(mux))
}

// authenticated answers a request without the API token fleetsim was
// given as Nexus answers an unauthenticated one (omicron
// common/src/api/external/error.rs, Error::Unauthenticated).
func (d *Domain) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		if !ok || d.env.NexusToken == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(d.env.NexusToken)) != 1 {
			httpx.WriteError(w, http.StatusUnauthorized, "Unauthorized", "credentials missing or invalid")
			return
		}
		next.ServeHTTP(w, req)
	})
}

func (r *rack) updateStatus(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	st := updateStatus{
		ComponentsByReleaseVersion: map[string]int{},
		TargetRelease:              r.release,
		TimeLastStepPlanned:        r.target.TimeMadeTarget,
	}
	r.mu.Unlock()
	// Every component runs what rack setup installed until a release is
	// the target (fleetsim keeps no repositories to match versions by).
	st.ComponentsByReleaseVersion["install dataset"] = len(r.spec.Sleds)
	if !httpx.AskedBefore(req, contactSupportSince) {
		st.ContactSupport = new(bool)
	}
	httpx.WriteJSON(w, http.StatusOK, st)
}

// targetReleaseUpdate makes a system version the target release (204).
func (r *rack) targetReleaseUpdate(w http.ResponseWriter, req *http.Request) {
	var p struct {
		SystemVersion *string `json:"system_version"`
	}
	if !httpx.ReadJSON(w, req, &p, maxExternalBody) {
		return
	}
	if p.SystemVersion == nil || !systemVersion.MatchString(*p.SystemVersion) {
		httpx.WriteError(w, http.StatusBadRequest, "", "unable to parse JSON body: system_version: not a semver")
		return
	}
	r.mu.Lock()
	r.release = &TargetRelease{TimeRequested: time.Now().UTC(), Version: *p.SystemVersion}
	r.releases = append(r.releases, *r.release)
	r.mu.Unlock()
	r.d.log.Info().Str("rack", r.spec.ID).Str("version", *p.SystemVersion).Msg("target release set")
	w.WriteHeader(http.StatusNoContent)
}
