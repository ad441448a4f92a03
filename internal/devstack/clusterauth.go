package devstack

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.temporal.io/sdk/client"
)

// TemporalAuth turns on the cluster's authorization, as DEPLOYING.md ("Who
// may act") configures it: JWTs verified against an identity provider's
// JWKS by the server's default claim mapper, then the server's default
// authorizer (or fleetsaga's, which adds the approve role). Clients
// without a token are refused; the server's own system workers reach it
// through its internal frontend, which authorizes nothing.
type TemporalAuth struct {
	JWKSURL string // the identity provider's keys (keySourceURIs)
	// Authorizer is AuthorizerDefault (the stock server) or
	// AuthorizerFleetsaga (fleetsaga's build in tools/cmd/temporal-server).
	Authorizer string
	// AdminToken is devstack's own (temporal-system:admin): it registers the
	// namespace and search attributes and makes the workers' version
	// current.
	AdminToken string
	// WorkerToken is what the stack's workers present (write on the
	// namespace), from a file in the stack's directory.
	WorkerToken string
}

// Authorizers a cluster can run.
const (
	AuthorizerDefault   = "default"
	AuthorizerFleetsaga = "fleetsaga"
)

// fleetsagaServerTool is the Temporal server with fleetsaga's authorizer,
// cached under a digest of its source (it is ours, and changes between
// server versions): a changed authorizer is built afresh.
func fleetsagaServerTool() Tool {
	t := Tool{Env: "FLEETSAGA_TEMPORAL_AUTHZ_SERVER_BIN", File: "temporal-server-fleetsaga-" + TemporalServerVersion,
		Package: "github.com/fleetsaga/fleetsaga/tools/cmd/temporal-server"}
	root, err := RepoRoot()
	if err != nil {
		return t
	}
	h := sha256.New()
	for _, pattern := range []string{"tools/go.sum", "tools/temporalauthz/*.go", "tools/cmd/temporal-server/*.go"} {
		files, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return t
			}
			fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
			h.Write(b)
		}
	}
	t.File += "-" + hex.EncodeToString(h.Sum(nil))[:12]
	return t
}

func (a *TemporalAuth) validate() error {
	if a.JWKSURL == "" || a.AdminToken == "" {
		return errors.New("Temporal authorization needs a JWKS URL and devstack's admin token")
	}
	if a.Authorizer != AuthorizerDefault && a.Authorizer != AuthorizerFleetsaga {
		return errors.New("Temporal authorizer: want " + AuthorizerDefault + " or " + AuthorizerFleetsaga)
	}
	return nil
}

// serverTool is the server binary that runs a.
func (a *TemporalAuth) serverTool() Tool {
	if a != nil && a.Authorizer == AuthorizerFleetsaga {
		return fleetsagaServerTool()
	}
	return serverTool
}

// credentials are devstack's own, for its calls to a cluster with
// authorization (none without).
func (a *TemporalAuth) credentials() client.Credentials {
	if a == nil {
		return nil
	}
	return client.NewAPIKeyStaticCredentials(a.AdminToken)
}

// writeWorkerToken puts the workers' token in dir (readable by us only)
// and returns the worker flags and environment that present it.
func (a *TemporalAuth) writeWorkerToken(dir string) (args, env []string, err error) {
	if a == nil || a.WorkerToken == "" {
		return nil, nil, nil
	}
	path := filepath.Join(dir, "worker.token")
	if err := os.WriteFile(path, []byte(a.WorkerToken), 0o600); err != nil {
		return nil, nil, err
	}
	// The cluster's frontend speaks plain gRPC on loopback.
	return []string{"--temporal-api-key-file", path}, []string{"TEMPORAL_TLS=false"}, nil
}
