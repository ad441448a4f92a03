package temporalauthz

import (
	"context"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/common/api"
	"go.temporal.io/server/common/authorization"
)

// ApproveUpdate is the Update a rollout's approval is sent as: fleetsaga's
// workflows.ApproveUpdate (this module does not import fleetsaga's; the
// real-stack test e2e/authorization_test.go fails if they part).
const ApproveUpdate = "approve"

const updateAPI = api.WorkflowServicePrefix + "UpdateWorkflowExecution"

// authorizer is the stock default authorizer, which allows whatever the
// standard roles allow, plus, for an approver of the call's namespace,
// the namespace's read-only calls (to see the gate) and the approval
// Update.
type authorizer struct {
	stock authorization.Authorizer
}

// NewAuthorizer wraps the stock default authorizer.
func NewAuthorizer() authorization.Authorizer {
	return &authorizer{stock: authorization.NewDefaultAuthorizer()}
}

func (a *authorizer) Authorize(ctx context.Context, claims *authorization.Claims, target *authorization.CallTarget) (authorization.Result, error) {
	res, err := a.stock.Authorize(ctx, claims, target)
	if err != nil || res.Decision == authorization.DecisionAllow || claims == nil {
		return res, err
	}
	ap, ok := claims.Extensions.(Approver)
	if !ok || !ap.Namespaces[target.Namespace] {
		return res, nil
	}
	md := api.GetMethodMetadata(target.APIName)
	if md.Scope == api.ScopeNamespace && md.Access == api.AccessReadOnly {
		return authorization.Result{Decision: authorization.DecisionAllow}, nil
	}
	if target.APIName == updateAPI {
		if req, ok := target.Request.(*workflowservice.UpdateWorkflowExecutionRequest); ok &&
			req.GetRequest().GetInput().GetName() == ApproveUpdate {
			return authorization.Result{Decision: authorization.DecisionAllow}, nil
		}
	}
	return res, nil
}
