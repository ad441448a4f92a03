package devstack

import (
	"net"
	"net/url"
	"os"
	"os/user"
	"strings"
)

// The libpq variables that name a server (PGPASSWORD or PGSSLMODE alone do
// not); https://www.postgresql.org/docs/current/libpq-envars.html.
var libpqServerVars = []string{"PGHOST", "PGHOSTADDR", "PGPORT", "PGUSER", "PGDATABASE", "PGSERVICE"}

func libpqVarsSet() []string {
	var set []string
	for _, v := range libpqServerVars {
		if os.Getenv(v) != "" {
			set = append(set, v)
		}
	}
	return set
}

// libpqURL is the server the user named with libpq's variables, as a URL
// with libpq's defaults filled in (lib/pq's differ: it requires TLS), or ""
// when none is set.
func libpqURL() string {
	if len(libpqVarsSet()) == 0 {
		return ""
	}
	get := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	name := "postgres"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	name = get("PGUSER", name)
	q := url.Values{}
	q.Set("sslmode", get("PGSSLMODE", "prefer"))
	if s := os.Getenv("PGSERVICE"); s != "" {
		q.Set("service", s)
	}
	u := &url.URL{Scheme: "postgres", User: url.User(name), Path: "/" + get("PGDATABASE", name)}
	if p := os.Getenv("PGPASSWORD"); p != "" {
		u.User = url.UserPassword(name, p)
	}
	host, port := get("PGHOST", get("PGHOSTADDR", "localhost")), get("PGPORT", "5432")
	if strings.HasPrefix(host, "/") { // a socket directory
		q.Set("host", host)
		q.Set("port", port)
	} else {
		u.Host = net.JoinHostPort(host, port)
	}
	u.RawQuery = q.Encode()
	return u.String()
}
