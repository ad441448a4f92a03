// Package redact hides the secrets a URL may carry (a password, a
// presigned token) from errors, logs, the ledger and Temporal failures.
package redact

import (
	"errors"
	"net/url"
	"strings"
)

// Hidden stands for a secret.
const Hidden = "xxxxx"

// URL is raw with its user info, every query value and its fragment
// hidden, also where net/url cannot parse it or reads it otherwise: any
// scheme's case, with or without "//" ("https:user:pw@host"); the user
// info is everything before the last "@" (a password may hold "/", "?"
// or "#" unescaped), so an "@" later in the URL hides more, never less.
func URL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, ":")
	if !ok || !isScheme(scheme) {
		scheme, rest = "", raw
	} else {
		scheme += ":"
	}
	slashes := ""
	if strings.HasPrefix(rest, "//") {
		slashes, rest = "//", rest[2:]
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if tail := rest[at:]; strings.ContainsAny(rest[:at], "?#") && !strings.Contains(tail, "?") && strings.ContainsAny(tail, "=&") {
			// The last "@" is in the query (a signed URL's
			// GoogleAccessId=sa@project…&Signature=…), not after user
			// info: everything after the scheme is hidden.
			return scheme + slashes + Hidden
		}
		rest = Hidden + rest[at:]
	}
	rest, fragment, hasFragment := strings.Cut(rest, "#")
	path, query, hasQuery := strings.Cut(rest, "?")
	var b strings.Builder
	b.WriteString(scheme + slashes + path)
	if hasQuery {
		b.WriteString("?")
		for i, kv := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteString("&")
			}
			k, _, hasValue := strings.Cut(kv, "=")
			b.WriteString(k)
			if hasValue {
				b.WriteString("=" + Hidden)
			}
		}
	}
	if hasFragment && fragment != "" {
		b.WriteString("#" + Hidden)
	}
	return b.String()
}

func isScheme(s string) bool {
	for i, c := range s {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// Error is err with raw's secrets hidden in its text (as written and as
// net/url decodes them), and a *url.Error's URL (a redirect's, too)
// shown through URL. An error that held one is replaced, not wrapped, so
// nothing down its chain can print it.
func Error(err error, raw string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = strings.ReplaceAll(msg, ue.URL, URL(ue.URL))
	}
	clean := msg
	for _, s := range secrets(raw) {
		clean = strings.ReplaceAll(clean, s, Hidden)
	}
	if clean == err.Error() {
		return err
	}
	return errors.New(clean)
}

// secrets are the pieces of raw that URL hides, longest first.
func secrets(raw string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= 3 { // shorter pieces are too common to replace safely
			out = append(out, s)
			if d, err := url.QueryUnescape(s); err == nil && d != s {
				out = append(out, d)
			}
		}
	}
	if _, query, ok := strings.Cut(raw, "?"); ok { // every value after the first "?", whatever "@" follows
		query, _, _ = strings.Cut(query, "#")
		for _, kv := range strings.Split(query, "&") {
			_, v, _ := strings.Cut(kv, "=")
			add(v)
		}
	}
	_, rest, _ := strings.Cut(raw, ":")
	rest = strings.TrimPrefix(rest, "//")
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		info := rest[:at]
		add(info)
		_, pw, _ := strings.Cut(info, ":")
		add(pw)
		rest = rest[at:]
	}
	rest, fragment, _ := strings.Cut(rest, "#")
	add(fragment)
	if _, query, ok := strings.Cut(rest, "?"); ok {
		for _, kv := range strings.Split(query, "&") {
			_, v, _ := strings.Cut(kv, "=")
			add(v)
		}
	}
	return out
}
