package redact_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/redact"
)

// A Google Cloud Storage V2 signed URL names its service account, with an
// unescaped "@", in the query (GoogleAccessId=sa@project.iam...), before the
// signature. The last "@" is then in the query, and what follows it must
// still have its query values hidden.
const gcsSigned = "https://storage.googleapis.com/fw/sp-1.1.0.img?GoogleAccessId=fw-reader@fleet.iam.gserviceaccount.com&Expires=1893456000&Signature=c2VjcmV0LXNpZ25hdHVyZQ"

func TestURLHidesASignatureAfterAnAtInTheQuery(t *testing.T) {
	got := redact.URL(gcsSigned)
	require.NotContains(t, got, "c2VjcmV0LXNpZ25hdHVyZQ", got)
}

func TestErrorHidesASignatureAfterAnAtInTheQuery(t *testing.T) {
	raw := strings.Replace(gcsSigned, "https://storage.googleapis.com", "http://127.0.0.1:1", 1)
	_, err := http.Get(raw)
	require.Error(t, err)
	msg := redact.Error(err, raw).Error()
	require.NotContains(t, msg, "c2VjcmV0LXNpZ25hdHVyZQ", msg)
}
