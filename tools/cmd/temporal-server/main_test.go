package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"gopkg.in/yaml.v3"
)

// docs/DEPLOYING.md's authorization config is what the server reads (as
// its loader does, every field known), and both authorizers it names
// start from it: the stock default and fleetsaga's.
func TestDeployingAuthorizationExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "DEPLOYING.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- deploying-example: temporal-authorization -->\n```yaml\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("no temporal-authorization example in docs/DEPLOYING.md")
	}
	var c struct {
		Global struct {
			Authorization config.Authorization `yaml:"authorization"`
		} `yaml:"global"`
		Services map[string]config.Service `yaml:"services"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(m[1]))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Services["internal-frontend"]; !ok {
		t.Error("the example has no internal-frontend service")
	}
	authz := c.Global.Authorization
	if authz.ClaimMapper != "default" || authz.PermissionsClaimName != "permissions" || len(authz.JWTKeyProvider.KeySourceURIs) != 1 {
		t.Errorf("unexpected authorization config: %+v", authz)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"keys":[]}`)) }))
	defer jwks.Close()
	authz.JWTKeyProvider.KeySourceURIs = []string{jwks.URL} // the example's provider is not reachable from a test
	for _, name := range []string{"default", authorizerFleetsaga} {
		authz.Authorizer = name
		if _, _, err := authorizers(&authz, log.NewNoopLogger()); err != nil {
			t.Errorf("authorizer %s: %v", name, err)
		}
	}
	authz.PermissionsRegex = `^(?P<namespace>\w+):(?P<role>\w+)$`
	if _, _, err := authorizers(&authz, log.NewNoopLogger()); err == nil {
		t.Error("fleetsaga's authorizer accepted a permissionsRegex it does not read")
	}
}
