package devstack

import (
	"fmt"
	"net/url"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// withDatabase returns adminURL pointing at database name instead.
func withDatabase(adminURL, name string) (string, error) {
	if err := ledger.CheckURL(adminURL); err != nil { // net/url's error would quote the password
		return "", err
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", fmt.Errorf("parse database URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}
