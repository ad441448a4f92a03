package machineapi

import (
	"context"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	mc, err := c.machineConfiguration(ctx)
	if err != nil {
		return OptIn{}, err
	}
	// The status is written by the operator; a nil list is a status
	// without the field, an empty one says "no managers".
	for _, src := range []struct {
		name string
		mgrs []operatorv1.MachineManager
	}{{OptInSourceStatus, mc.Status.ManagedBootImagesStatus.MachineManagers}, {"spec.managedBootImages", mc.Spec.ManagedBootImages.MachineManagers}} {
		if src.mgrs == nil {
			continue
		}
		for _, m := range src.mgrs {
			if m.Resource != operatorv1.MachineSets || string(m.APIGroup) != GVRMachineSets.Group {
				continue
			}
			return parseSelection(m.Selection, src.name)
		}
		return OptIn{Mode: OptInNone, Source: src.name}, nil
	}
	return OptIn{Mode: OptInNone, Source: "none"}, nil
}

func parseSelection(sel operatorv1.MachineManagerSelector, src string) (OptIn, error) {
	mode := string(sel.Mode)
	out := OptIn{Mode: mode, Source: src}
	switch mode {
	case OptInAll, OptInNone:
		return out, nil
	case OptInPartial:
	default:
		return OptIn{}, malformed("MachineConfiguration %s: selection mode %q is not All, Partial or None", src, mode)
	}
	if sel.Partial == nil || sel.Partial.MachineResourceSelector == nil {
		return OptIn{}, malformed("MachineConfiguration %s: Partial without partial.machineResourceSelector", src)
	}
	s, err := metav1.LabelSelectorAsSelector(sel.Partial.MachineResourceSelector)
	if err != nil {
		return OptIn{}, malformed("MachineConfiguration %s: machineResourceSelector: %v", src, err)
	}
	out.Selector = s.String()
	return out, nil
}
