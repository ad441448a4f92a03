package redact_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/redact"
)

func TestURLHidesUserInfoQueryValuesAndFragment(t *testing.T) {
	for raw, want := range map[string]string{
		"https://ops:pw@host/a?X-Amz-Signature=tok&b=1#frag": "https://xxxxx@host/a?X-Amz-Signature=xxxxx&b=xxxxx#xxxxx",
		"HTTPS://ops:pw@host/a":                              "HTTPS://xxxxx@host/a",
		"https:ops:pw@host/a":                                "https:xxxxx@host/a",
		"https://ops:p/w?x#y@host/a":                         "https://xxxxx@host/a",
		"http://host:8080/a/b":                               "http://host:8080/a/b",
		"ops:pw@host":                                        "ops:xxxxx@host",
		"not a url ?token=t":                                 "not a url ?token=xxxxx",
	} {
		require.Equal(t, want, redact.URL(raw), raw)
	}
}

func TestErrorHidesTheURLsSecretsFromAClientError(t *testing.T) {
	raw := "http://ops:hunter%32@127.0.0.1:1/img?sig=s3cr%33t"
	_, err := http.Get(raw)
	require.Error(t, err)
	msg := redact.Error(err, raw).Error()
	for _, s := range []string{"hunter", "s3cr"} {
		require.False(t, strings.Contains(msg, s), msg)
	}
	require.Contains(t, msg, "127.0.0.1:1")
	plain := errors.New("no URL here")
	require.Equal(t, plain, redact.Error(plain, raw))
}
