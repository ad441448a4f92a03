package machineapi

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Opt-in modes of MachineConfiguration spec.managedBootImages
// (openshift/api operator/v1 MachineManagerSelectorMode).
const (
	OptInAll     = "All"
	OptInPartial = "Partial"
	OptInNone    = "None"
)

// OptIn is the cluster's boot image management opt-in for MachineSets.
type OptIn struct {
	// Mode is All, Partial or None.
	Mode string `json:"mode"`
	// Selector is Partial's machineResourceSelector as a label selector
	// string ("" selects everything, as an empty LabelSelector does).
	Selector string `json:"selector,omitempty"`
	// Source is the field read: status.managedBootImagesStatus (the
	// operator's resolution, preferred) or spec.managedBootImages.
	Source string `json:"source"`
}

// OptInSourceStatus is OptIn.Source when the machine-config operator
// resolved the opt-in itself: its boot image controller is active and owns
// the MachineSets the opt-in selects (docs/CONFORMANCE.md §I).
const OptInSourceStatus = "status.managedBootImagesStatus"

// ManagedByMCO reports whether the MCO's boot image controller manages the
// selected MachineSets (the operator resolved an opt-in other than None).
func (o OptIn) ManagedByMCO() bool { return o.Source == OptInSourceStatus && o.Mode != OptInNone }

// BootImageOptIn reads MachineConfiguration "cluster": the machine manager
// entry for machinesets.machine.openshift.io, from the operator's resolved
// status when it has one (the controller acts on the status, not the spec),
// else from the spec. No entry means None: boot image management is opt-in.
func (c *Client) BootImageOptIn(ctx context.Context) (OptIn, error) {
	u, err := c.get(ctx, GVRMachineConfigurations, "", MachineConfigurationName)
	if err != nil {
		return OptIn{}, err
	}
	for _, path := range [][]string{{"status", "managedBootImagesStatus"}, {"spec", "managedBootImages"}} {
		mgrs, found, err := unstructured.NestedSlice(u.Object, append(path, "machineManagers")...)
		if err != nil {
			return OptIn{}, malformed("MachineConfiguration %s.machineManagers: %v", path[0], err)
		}
		if !found {
			continue
		}
		src := path[0] + "." + path[1]
		for _, m := range mgrs {
			mm, _ := m.(map[string]any)
			if mm["resource"] != "machinesets" || mm["apiGroup"] != GVRMachineSets.Group {
				continue
			}
			return parseSelection(mm, src)
		}
		return OptIn{Mode: OptInNone, Source: src}, nil
	}
	return OptIn{Mode: OptInNone, Source: "none"}, nil
}

func parseSelection(mm map[string]any, src string) (OptIn, error) {
	sel, _ := mm["selection"].(map[string]any)
	mode, _ := sel["mode"].(string)
	out := OptIn{Mode: mode, Source: src}
	switch mode {
	case OptInAll, OptInNone:
		return out, nil
	case OptInPartial:
	default:
		return OptIn{}, malformed("MachineConfiguration %s: selection mode %q is not All, Partial or None", src, mode)
	}
	raw, found, _ := unstructured.NestedFieldNoCopy(sel, "partial", "machineResourceSelector")
	if !found {
		return OptIn{}, malformed("MachineConfiguration %s: Partial without partial.machineResourceSelector", src)
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return OptIn{}, malformed("MachineConfiguration %s: machineResourceSelector: %v", src, err)
	}
	var ls metav1.LabelSelector
	if err := json.Unmarshal(b, &ls); err != nil {
		return OptIn{}, malformed("MachineConfiguration %s: machineResourceSelector: %v", src, err)
	}
	s, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return OptIn{}, malformed("MachineConfiguration %s: machineResourceSelector: %v", src, err)
	}
	out.Selector = s.String()
	return out, nil
}
