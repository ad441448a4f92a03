package devstack

import (
	"fmt"
	"net/url"
)

// withDatabase returns adminURL pointing at database name instead.
func withDatabase(adminURL, name string) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", fmt.Errorf("parse database URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}
