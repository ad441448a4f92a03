package httpx

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// VersionHeader is the header a versioned omicron API reads its version
// from (omicron common/src/api/mod.rs VERSION_HEADER).
const VersionHeader = "api-version"

// RequireAPIVersion is dropshot's ClientSpecifiesVersionInHeader policy
// with no default for a missing header, as MGS and sled-agent configure it
// (omicron gateway/src/lib.rs, sled-agent/src/server.rs): a request without
// the header, with a value that is not a semver, or naming a version newer
// than latest is refused with a 400 without error_code and dropshot's
// message (dropshot/src/versioning.rs), before any route is looked up. A
// version at or below latest is served (fleetsim serves one version of
// each API; dropshot would route an older one to the handlers of that
// version).
func RequireAPIVersion(latest string, next http.Handler) http.Handler {
	max, err := parseSemver(latest)
	if err != nil {
		panic("fleetsim: bad API version " + latest + ": " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vals := r.Header.Values(VersionHeader)
		if len(vals) == 0 {
			WriteError(w, http.StatusBadRequest, "", fmt.Sprintf("missing expected header %q", VersionHeader))
			return
		}
		raw := vals[0]
		for i := 0; i < len(raw); i++ {
			if raw[i] < 0x20 || raw[i] > 0x7e {
				WriteError(w, http.StatusBadRequest, "", fmt.Sprintf("bad value for header %q: not ASCII: %q", VersionHeader, raw))
				return
			}
		}
		v, err := parseSemver(raw)
		if err != nil {
			WriteError(w, http.StatusBadRequest, "", fmt.Sprintf("bad value for header %q: %v: %s", VersionHeader, err, raw))
			return
		}
		if v.compare(max) > 0 {
			WriteError(w, http.StatusBadRequest, "", "server does not support this API version: "+raw)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// semver is a parsed semantic version. Build metadata is ignored in
// comparisons, as the semver crate does.
type semver struct {
	major, minor, patch uint64
	pre                 string
}

// compare orders versions: numbers first, then a pre-release below its
// release; two pre-releases compare as strings (a simplification of the
// semver rules, enough for the versions fleetsim is asked about).
func (a semver) compare(b semver) int {
	for _, d := range [][2]uint64{{a.major, b.major}, {a.minor, b.minor}, {a.patch, b.patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case a.pre == b.pre:
		return 0
	case a.pre == "":
		return 1
	case b.pre == "":
		return -1
	}
	return strings.Compare(a.pre, b.pre)
}

// parseSemver parses MAJOR.MINOR.PATCH[-PRE][+BUILD] with the semver
// crate's error messages (the ones dropshot puts in its 400).
func parseSemver(text string) (semver, error) {
	var v semver
	if text == "" {
		return v, fmt.Errorf("empty string, expected a semver version")
	}
	positions := []string{"major version number", "minor version number", "patch version number"}
	nums := []*uint64{&v.major, &v.minor, &v.patch}
	rest := text
	for i, pos := range positions {
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		switch {
		case n == 0 && rest == "":
			return v, fmt.Errorf("unexpected end of input while parsing %s", pos)
		case n == 0:
			return v, fmt.Errorf("unexpected character %s while parsing %s", rustChar(rest), pos)
		case n > 1 && rest[0] == '0':
			return v, fmt.Errorf("invalid leading zero in %s", pos)
		}
		x, err := strconv.ParseUint(rest[:n], 10, 64)
		if err != nil {
			return v, fmt.Errorf("value of %s exceeds u64::MAX", pos)
		}
		*nums[i], rest = x, rest[n:]
		if i == 2 {
			break
		}
		switch {
		case rest == "":
			return v, fmt.Errorf("unexpected end of input while parsing %s", pos)
		case rest[0] != '.':
			return v, fmt.Errorf("unexpected character %s after %s", rustChar(rest), pos)
		}
		rest = rest[1:]
	}
	last := "patch version number"
	if pre, ok := strings.CutPrefix(rest, "-"); ok {
		id, after := identifier(pre)
		if id == "" {
			return v, fmt.Errorf("empty identifier segment in pre-release identifier")
		}
		v.pre, rest, last = id, after, "pre-release identifier"
	}
	if build, ok := strings.CutPrefix(rest, "+"); ok {
		id, after := identifier(build)
		if id == "" {
			return v, fmt.Errorf("empty identifier segment in build metadata")
		}
		rest, last = after, "build metadata"
	}
	if rest != "" {
		return v, fmt.Errorf("unexpected character %s after %s", rustChar(rest), last)
	}
	return v, nil
}

// identifier takes the leading run of [0-9A-Za-z.-].
func identifier(s string) (string, string) {
	n := 0
	for n < len(s) {
		c := s[n]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '-') {
			break
		}
		n++
	}
	return s[:n], s[n:]
}

// rustChar formats the first character of s as Rust's char Debug does for
// printable ASCII: 'x'.
func rustChar(s string) string {
	if s[0] == '\'' {
		return `'\''`
	}
	return "'" + s[:1] + "'"
}

// DefaultAPIVersion is RequireAPIVersion with latest for a missing header,
// as Nexus configures its external API (omicron nexus/src/lib.rs,
// on_missing): it does not control all its clients.
func DefaultAPIVersion(latest string, next http.Handler) http.Handler {
	versioned := RequireAPIVersion(latest, next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header.Values(VersionHeader)) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		versioned.ServeHTTP(w, r)
	})
}

// AskedBefore says whether the request names an API version older than v
// (no header, or one that does not parse: no): dropshot serves such a
// client the answer of its own version (dropshot/src/versioning.rs).
func AskedBefore(r *http.Request, v string) bool {
	asked, err := parseSemver(r.Header.Get(VersionHeader))
	if err != nil {
		return false
	}
	since, err := parseSemver(v)
	return err == nil && asked.compare(since) < 0
}
