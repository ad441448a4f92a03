package machineapi

import (
	"context"
	"encoding/json"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/util/json"
)

// The objects fleetsaga reads are decoded into openshift/api's own types
// (machine/v1beta1, operator/v1, config/v1) rather than walked by field
// path: a field renamed or retyped upstream breaks the build, not a
// silent "" at run time. The dynamic
// client stays (no discovery, no scheme registration); only decoding is
// typed. Patches stay small JSON merge patches: decoding a providerSpec into
// the pinned types and writing it back whole would drop fields newer than
// the pin.

// fromUnstructured decodes u, a what (machineset, machine, ...), into out,
// one of openshift/api's types; a field of the wrong JSON type makes the
// object malformed.
func fromUnstructured(u *unstructured.Unstructured, what string, out any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return malformed("%s %s: %v", what, u.GetName(), err)
	}
	return nil
}

// getTyped reads the cluster-scoped object name of gvr, a what, decoded
// into T, one of openshift/api's types.
func getTyped[T any](ctx context.Context, c *Client, gvr schema.GroupVersionResource, what, name string) (*T, error) {
	u, err := c.get(ctx, gvr, "", name)
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := fromUnstructured(u, what, out); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeProviderSpec decodes a providerSpec value (a MachineSet's, as
// fleetsaga carries it) into out, one of machine/v1beta1's provider types.
func decodeProviderSpec(value map[string]any, out any) error {
	raw, err := json.Marshal(value)
	if err != nil {
		return malformed("providerSpec: %v", err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return malformed("providerSpec: %v", err)
	}
	return nil
}

// providerValue is a providerSpec's value as a JSON object (ok false when
// it is absent or not an object).
func providerValue(ps machinev1beta1.ProviderSpec) (map[string]any, bool) {
	if ps.Value == nil || len(ps.Value.Raw) == 0 {
		return nil, false
	}
	// apimachinery's json keeps integers int64, as unstructured objects
	// have them (encoding/json would make them float64).
	var v map[string]any
	if err := kjson.Unmarshal(ps.Value.Raw, &v); err != nil || v == nil {
		return nil, false
	}
	return v, true
}
