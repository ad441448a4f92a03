package ledger

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// kvValue is one value of a libpq key=value connection string: its key and
// where its text (quotes included) starts and ends in the string.
type kvValue struct {
	key        string
	start, end int
}

// scanKeyValue reads a libpq key=value connection string the way lib/pq
// does (keys and values separated by spaces, a value quoted in ' with \
// escapes). On malformed input it returns what it read so far, where the
// malformed part starts, and what is wrong with it; lib/pq's own error
// would quote that part, which may be a piece of a password.
func scanKeyValue(s string) (vals []kvValue, badAt int, problem string) {
	i := 0
	// lib/pq reads runes, and any Unicode space separates.
	isSpace := func() bool { r, _ := utf8.DecodeRuneInString(s[i:]); return unicode.IsSpace(r) }
	next := func() { _, n := utf8.DecodeRuneInString(s[i:]); i += n }
	skipSpaces := func() {
		for i < len(s) && isSpace() {
			next()
		}
	}
	for {
		skipSpaces()
		if i == len(s) {
			return vals, -1, ""
		}
		keyStart := i
		for i < len(s) && !isSpace() && s[i] != '=' {
			next()
		}
		key := s[keyStart:i]
		skipSpaces()
		if i == len(s) || s[i] != '=' {
			return vals, keyStart, `a key without "="`
		}
		next()
		skipSpaces()
		start := i
		if i < len(s) && s[i] == '\'' {
			for next(); ; next() {
				if i >= len(s) {
					return vals, keyStart, "an unterminated quoted value"
				}
				if s[i] == '\\' {
					next()
					if i >= len(s) {
						return vals, keyStart, "an unterminated quoted value"
					}
					continue
				}
				if s[i] == '\'' {
					next()
					break
				}
			}
		} else {
			for i < len(s) && !isSpace() {
				if s[i] == '\\' {
					next()
					if i == len(s) {
						return vals, keyStart, "a backslash at the end"
					}
				}
				next()
			}
		}
		vals = append(vals, kvValue{key: key, start: start, end: i})
	}
}

// unquoteKeyValue is a value as lib/pq reads it: without its quotes and
// with its \ escapes resolved.
func unquoteKeyValue(text string) string {
	text = strings.TrimSuffix(strings.TrimPrefix(text, "'"), "'")
	var b strings.Builder
	escaped := false
	for _, r := range text {
		if r == '\\' && !escaped {
			escaped = true
			continue
		}
		escaped = false
		b.WriteRune(r)
	}
	return b.String()
}
