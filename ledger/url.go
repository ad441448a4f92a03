package ledger

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// A database is named by a URL (postgres://user:password@host/db?…) or a
// libpq key=value string (host=… password=…); lib/pq takes both. Its
// password must reach no log line and no error, also when the operator did
// not URL-escape it: then net/url cannot parse the URL, and its errors (and
// lib/pq's) quote the whole input.

// redacted stands for a password.
const redacted = "xxxxx"

// RedactURL hides the passwords of a database URL or key=value string, for
// logs and errors, also in what net/url cannot parse: a URL's user info is
// everything between "://" and the last "@", its password everything there
// after the first ":"; a password= parameter's value is hidden too.
func RedactURL(raw string) string {
	scheme, rest, isURL := strings.Cut(raw, "://")
	if !isURL {
		return redactKeyValue(raw)
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if user, _, hasPassword := strings.Cut(rest[:at], ":"); hasPassword {
			rest = user + ":" + redacted + rest[at:]
		}
	}
	return scheme + "://" + redactQueryPassword(rest)
}

// redactQueryPassword hides the value of every password= parameter.
func redactQueryPassword(s string) string {
	var b strings.Builder
	for {
		i := queryPassword(s)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i] + redacted)
		s = s[i:]
		s = s[strings.IndexAny(s+"&", "&#"):]
	}
}

// queryPassword is where the value of the first password= parameter in s
// starts, or -1.
func queryPassword(s string) int {
	for off := 0; ; {
		i := strings.Index(s[off:], "password=")
		if i < 0 {
			return -1
		}
		i += off
		if i > 0 && (s[i-1] == '?' || s[i-1] == '&') {
			return i + len("password=")
		}
		off = i + 1
	}
}

// redactKeyValue hides every password value of a key=value string; if the
// string is malformed, everything from the malformed part on (lib/pq
// would read it otherwise than its author meant, a password may be in it).
func redactKeyValue(s string) string {
	vals, badAt, _ := scanKeyValue(s)
	end := len(s)
	if badAt >= 0 {
		end = badAt
	}
	var b strings.Builder
	last := 0
	for _, v := range vals {
		if v.key == "password" {
			b.WriteString(s[last:v.start] + redacted)
			last = v.end
		}
	}
	b.WriteString(s[last:end])
	if badAt >= 0 {
		b.WriteString(redacted)
	}
	return b.String()
}

// passwords are the passwords a database URL or key=value string holds,
// as written and as lib/pq reads them.
func passwords(raw string) []string {
	var out []string
	add := func(written, read string) {
		for _, p := range []string{written, read} {
			if p != "" {
				out = append(out, p)
			}
		}
	}
	_, rest, isURL := strings.Cut(raw, "://")
	if !isURL {
		vals, badAt, _ := scanKeyValue(raw)
		for _, v := range vals {
			if v.key == "password" {
				add(raw[v.start:v.end], unquoteKeyValue(raw[v.start:v.end]))
			}
		}
		if badAt >= 0 {
			add(raw[badAt:], "")
		}
		return out
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if _, p, ok := strings.Cut(rest[:at], ":"); ok {
			read, _ := url.PathUnescape(p)
			add(p, read)
		}
	}
	for s := rest; ; {
		i := queryPassword(s)
		if i < 0 {
			return out
		}
		s = s[i:]
		p := s[:strings.IndexAny(s+"&", "&#")]
		read, _ := url.QueryUnescape(p)
		add(p, read)
	}
}

// RedactError is err with every password of dsn hidden in its text, as
// written, as read, and as %q quotes it. An error that held one is
// replaced, not wrapped, so that nothing down its chain can print it.
func RedactError(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for _, p := range passwords(dsn) {
		quoted := strconv.Quote(p)
		clean = strings.ReplaceAll(clean, p, redacted)
		clean = strings.ReplaceAll(clean, quoted[1:len(quoted)-1], redacted)
	}
	if clean == msg {
		return err
	}
	return errors.New(clean)
}
