package ledger

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// escapeHint says how to write a password that holds URL syntax.
const escapeHint = "escape special characters of the password (%25 for %, %40 for @, %2F for /, %3F for ?, %23 for #, %20 for a space)"

// quoteHint says how to write a key=value password that holds spaces.
const quoteHint = `quote a password with spaces in it (password='…', \' for ' and \\ for \)`

// quotedInput is what net/url's errors quote of their input.
var quotedInput = regexp.MustCompile(`\s*"(?:[^"\\]|\\.)*"`)

// CheckDSN checks the syntax of a database URL or key=value string the way
// lib/pq will read it, and says what is wrong without quoting any of it:
// net/url's and lib/pq's own errors quote their input, password included.
func CheckDSN(dsn string) error {
	if strings.Contains(dsn, "://") {
		return CheckURL(dsn)
	}
	if _, badAt, problem := scanKeyValue(dsn); badAt >= 0 {
		return fmt.Errorf("the database connection string is not valid: %s; %s", problem, quoteHint)
	}
	return nil
}

// CheckURL checks a database URL's syntax (see CheckDSN).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("the database URL is not valid: %s; %s", parseProblem(err), escapeHint)
	}
	// A password with /, ? or # in it can parse as a host, a port and a
	// path: "u:2024/S3cret@db" is host u, port 2024. Only an @ after the
	// host shows it.
	_, rest, _ := strings.Cut(raw, "://")
	if hostEnd := strings.IndexAny(rest, "/?#"); hostEnd >= 0 && strings.LastIndex(rest, "@") > hostEnd {
		return fmt.Errorf("the database URL is not valid: @ after the host; %s", escapeHint)
	}
	if _, err := url.ParseQuery(u.RawQuery); err != nil {
		return fmt.Errorf("the database URL's parameters are not valid: %s; %s", parseProblem(err), escapeHint)
	}
	return nil
}

// parseProblem is net/url's error without the input it quotes:
// `invalid URL escape "%zz"` becomes "invalid URL escape".
func parseProblem(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := strings.TrimPrefix(err.Error(), "net/url: ")
	msg = strings.Replace(msg, "invalid userinfo", "invalid character in the user or password", 1)
	return strings.TrimSpace(quotedInput.ReplaceAllString(msg, ""))
}
