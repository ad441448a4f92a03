package devstack

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// namespaceRetention is how long a registered namespace keeps closed runs:
// a day, as the dev server's default namespace does.
const namespaceRetention = 24 * time.Hour

// namespaceReadyTimeout bounds waiting for a new namespace to reach every
// service's cache before its search attributes can be added.
const namespaceReadyTimeout = time.Minute

// RegisterNamespace creates namespace name (if it does not exist) and adds
// fleetsaga's search attributes to it (SQL visibility keeps them per
// namespace). cl may be dialled on any namespace.
func RegisterNamespace(ctx context.Context, cl client.Client, name string) error {
	_, err := cl.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: name, WorkflowExecutionRetentionPeriod: durationpb.New(namespaceRetention),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("register namespace %s: %w", name, err)
	}
	sas := map[string]enumspb.IndexedValueType{}
	for _, k := range workflows.SearchAttributes() {
		sas[k.GetName()] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	deadline := time.Now().Add(namespaceReadyTimeout)
	for {
		_, err = cl.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace: name, SearchAttributes: sas,
		})
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("namespace %s: register fleetsaga's search attributes: %w", name, err)
	}
	return nil
}
