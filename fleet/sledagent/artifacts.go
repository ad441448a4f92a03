package sledagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/fleetsaga/fleetsaga/fleet/dropshot"
)

// The artifact store (sled-agent/src/artifact_store.rs): a content-addressed
// store on the sled's M.2 disks. The config says which artifacts the sled
// keeps; an artifact is PUT only under the config's generation and only
// when the config lists it. A sled config naming an artifact the store
// lacks is refused (400 "…failed artifact store existence checks…").

// ArtifactConfig reads the store's config (GET /artifacts-config); found is
// false when the sled has none yet (404).
func (c *Client) ArtifactConfig(ctx context.Context) (cfg ArtifactConfig, found bool, err error) {
	err = c.do(ctx, http.MethodGet, "/artifacts-config", nil, &cfg)
	var he *Error
	if errors.As(err, &he) && he.StatusCode == http.StatusNotFound {
		return cfg, false, nil
	}
	return cfg, err == nil, err
}

// PutArtifactConfig replaces the store's config (PUT /artifacts-config →
// 204). A lower generation, or the same with other contents, is a 409
// CONFIG_GENERATION; an artifact the ledgered sled config uses missing from
// it is a 400.
func (c *Client) PutArtifactConfig(ctx context.Context, cfg ArtifactConfig) error {
	if cfg.Artifacts == nil {
		cfg.Artifacts = []string{}
	}
	body, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("sled-agent PUT /artifacts-config: encode: %w", err)
	}
	return c.do(ctx, http.MethodPut, "/artifacts-config", body, nil)
}

// PutArtifact writes an artifact (PUT /artifacts/{sha256}?generation=G,
// the raw bytes). The store checks the body's SHA-256 against sha256 (400
// on a mismatch).
func (c *Client) PutArtifact(ctx context.Context, sha256 string, generation uint64, body io.Reader, size int64) (ArtifactPutResponse, error) {
	var out ArtifactPutResponse
	path := "/artifacts/" + strings.ToLower(sha256) + "?generation=" + strconv.FormatUint(generation, 10)
	err := c.send(ctx, dropshot.Request{Method: http.MethodPut, Path: path, Body: body, Size: size,
		ContentType: "application/octet-stream"}, &out)
	return out, err
}

// ListArtifacts lists the artifacts present (GET /artifacts).
func (c *Client) ListArtifacts(ctx context.Context) (ArtifactListResponse, error) {
	var out ArtifactListResponse
	err := c.do(ctx, http.MethodGet, "/artifacts", nil, &out)
	return out, err
}

// IsConflict reports a 409: another writer moved the artifact config on.
func IsConflict(err error) bool {
	var he *Error
	return errors.As(err, &he) && he.StatusCode == http.StatusConflict
}
