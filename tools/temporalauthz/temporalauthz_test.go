package temporalauthz

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v4"
	updatepb "go.temporal.io/api/update/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/common/api"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
)

// jwks serves one RSA key, as an identity provider does, and signs tokens
// with it.
type jwks struct {
	key *rsa.PrivateKey
	url string
}

func startJWKS(t *testing.T) *jwks {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	}))
	t.Cleanup(srv.Close)
	return &jwks{key: key, url: srv.URL}
}

func (j *jwks) token(t *testing.T, key *rsa.PrivateKey, exp time.Time, perms ...string) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"sub": "someone", "permissions": perms, "exp": exp.Unix()})
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return "Bearer " + s
}

func call(method string, req any) *authorization.CallTarget {
	return &authorization.CallTarget{Namespace: "default", APIName: api.WorkflowServicePrefix + method, Request: req}
}

func update(name string) *authorization.CallTarget {
	return call("UpdateWorkflowExecution", &workflowservice.UpdateWorkflowExecutionRequest{Namespace: "default",
		Request: &updatepb.Request{Input: &updatepb.Input{Name: name}}})
}

// Through the stock JWT claim mapper (the server's own JWKS key provider)
// and the stock authorizer underneath: an approver may read and approve,
// nothing else, and only in its namespace; the stock roles are unchanged;
// an expired or forged approver token maps to no claims at all.
func TestApproverMayApproveAndNothingElse(t *testing.T) {
	j := startJWKS(t)
	cfg := &config.Authorization{JWTKeyProvider: config.JWTKeyProvider{KeySourceURIs: []string{j.url}}, ClaimMapper: "default"}
	stock, err := authorization.GetClaimMapperFromConfig(cfg, log.NewNoopLogger())
	if err != nil {
		t.Fatal(err)
	}
	mapper, authz := NewClaimMapper(stock, ""), NewAuthorizer()
	live := time.Now().Add(time.Hour)
	allowed := func(token string, target *authorization.CallTarget) bool {
		t.Helper()
		claims, err := mapper.GetClaims(&authorization.AuthInfo{AuthToken: token})
		if err != nil {
			t.Fatal(err)
		}
		res, err := authz.Authorize(context.Background(), claims, target)
		if err != nil {
			t.Fatal(err)
		}
		return res.Decision == authorization.DecisionAllow
	}
	approver := j.token(t, j.key, live, "default:approve")
	writer := j.token(t, j.key, live, "default:write")
	reader := j.token(t, j.key, live, "default:read")
	for _, tc := range []struct {
		name   string
		token  string
		target *authorization.CallTarget
		want   bool
	}{
		{"approver approves", approver, update(ApproveUpdate), true},
		{"approver reads the gate", approver, call("QueryWorkflow", &workflowservice.QueryWorkflowRequest{Namespace: "default"}), true},
		{"approver describes", approver, call("DescribeWorkflowExecution", &workflowservice.DescribeWorkflowExecutionRequest{Namespace: "default"}), true},
		{"approver sends another update", approver, update("setConcurrency"), false},
		{"approver signals", approver, call("SignalWorkflowExecution", &workflowservice.SignalWorkflowExecutionRequest{Namespace: "default"}), false},
		{"approver terminates", approver, call("TerminateWorkflowExecution", &workflowservice.TerminateWorkflowExecutionRequest{Namespace: "default"}), false},
		{"approver cancels", approver, call("RequestCancelWorkflowExecution", &workflowservice.RequestCancelWorkflowExecutionRequest{Namespace: "default"}), false},
		{"approver starts", approver, call("StartWorkflowExecution", &workflowservice.StartWorkflowExecutionRequest{Namespace: "default"}), false},
		{"approver elsewhere", approver, &authorization.CallTarget{Namespace: "other", APIName: updateAPI,
			Request: &workflowservice.UpdateWorkflowExecutionRequest{Namespace: "other", Request: &updatepb.Request{Input: &updatepb.Input{Name: ApproveUpdate}}}}, false},
		{"writer terminates", writer, call("TerminateWorkflowExecution", &workflowservice.TerminateWorkflowExecutionRequest{Namespace: "default"}), true},
		{"writer approves", writer, update(ApproveUpdate), true},
		{"reader approves", reader, update(ApproveUpdate), false},
		{"reader lists", reader, call("ListWorkflowExecutions", &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default"}), true},
	} {
		if got := allowed(tc.token, tc.target); got != tc.want {
			t.Errorf("%s: allowed=%v, want %v", tc.name, got, tc.want)
		}
	}

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for name, token := range map[string]string{
		"expired": j.token(t, j.key, time.Now().Add(-time.Minute), "default:approve"),
		"forged":  j.token(t, other, live, "default:approve"),
	} {
		if _, err := mapper.GetClaims(&authorization.AuthInfo{AuthToken: token}); err == nil {
			t.Errorf("%s approver token: mapped to claims", name)
		}
	}
}
