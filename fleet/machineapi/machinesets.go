package machineapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// Platforms.
const (
	PlatformAWS     = "aws"
	PlatformGCP     = "gcp"
	PlatformAzure   = "azure"
	PlatformVSphere = "vsphere"
)

// PlatformOfKind maps a providerSpec kind to its platform ("" if unknown).
func PlatformOfKind(kind string) string {
	switch kind {
	case "AWSMachineProviderConfig":
		return PlatformAWS
	case "GCPMachineProviderSpec":
		return PlatformGCP
	case "AzureMachineProviderSpec":
		return PlatformAzure
	case "VSphereMachineProviderSpec":
		return PlatformVSphere
	}
	return ""
}

// MachineSet is the part of a MachineSet the boot image bump needs.
type MachineSet struct {
	Name            string                  `json:"name"`
	Namespace       string                  `json:"namespace"`
	UID             string                  `json:"uid"`
	ResourceVersion string                  `json:"resourceVersion"`
	Labels          map[string]string       `json:"labels,omitempty"`
	Annotations     map[string]string       `json:"annotations,omitempty"`
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences,omitempty"`
	// TemplateLabels are spec.template.metadata.labels (os-id).
	TemplateLabels map[string]string `json:"templateLabels,omitempty"`
	Replicas       int32             `json:"replicas"`
	ReadyReplicas  int32             `json:"readyReplicas"`
	// Platform from the providerSpec kind; "" when unknown.
	Platform string `json:"platform"`
	// ProviderSpec is spec.template.spec.providerSpec.value.
	ProviderSpec map[string]any `json:"providerSpec"`
}

// validArches are the architectures a MachineSet may name
// (machine-config-operator pkg/controller/bootimage/ms_helpers.go,
// getArchFromMachineSet).
var validArches = map[string]bool{"arm64": true, "s390x": true, "amd64": true, "ppc64le": true}

// Arch is the kubernetes.io/arch of the capacity labels annotation ("" with
// no annotation). An annotation without that label, or with an arch the
// MCO does not know, is an error: the MCO degrades on it rather than
// skipping the MachineSet.
func (m *MachineSet) Arch() (string, error) {
	ann, ok := m.Annotations[AnnotationCapacityLabels]
	if !ok {
		return "", nil
	}
	for _, kv := range strings.Split(ann, ",") {
		if v, found := strings.CutPrefix(strings.TrimSpace(kv), LabelArch+"="); found {
			if !validArches[v] {
				return "", fmt.Errorf("invalid architecture value found in annotation: %s", v)
			}
			return v, nil
		}
	}
	return "", fmt.Errorf("%s label not found in annotation: %s", LabelArch, ann)
}

// AzureSecurityType is providerSpec.securityProfile.settings.securityType
// ("" when unset or unreadable).
func (m *MachineSet) AzureSecurityType() string {
	var ps machinev1beta1.AzureMachineProviderSpec
	if decodeProviderSpec(m.ProviderSpec, &ps) != nil || ps.SecurityProfile == nil {
		return ""
	}
	return string(ps.SecurityProfile.Settings.SecurityType)
}

// Windows reports a Windows template (machine.openshift.io/os-id: Windows).
func (m *MachineSet) Windows() bool { return strings.EqualFold(m.TemplateLabels[LabelOSID], "Windows") }

// OSStream is the MachineSet's own OS stream label (ok false when unset:
// a MachineSet from before dual streams, reconciled as the default).
func (m *MachineSet) OSStream() (stream string, ok bool) {
	stream, ok = m.Labels[LabelOSStream]
	return stream, ok
}

// Image reads the boot image out of the providerSpec.
func (m *MachineSet) Image() (BootImage, error) { return ImageOf(m.ProviderSpec) }

// parseMachineSet decodes a MachineSet (openshift/api machine/v1beta1).
func parseMachineSet(u *unstructured.Unstructured) (*MachineSet, error) {
	var ms machinev1beta1.MachineSet
	if err := fromUnstructured(u, "machineset", &ms); err != nil {
		return nil, err
	}
	value, ok := providerValue(ms.Spec.Template.Spec.ProviderSpec)
	if !ok {
		return nil, malformed("machineset %s: spec.template.spec.providerSpec.value is missing or not an object", ms.Name)
	}
	kind, _ := value["kind"].(string)
	return &MachineSet{
		Name: ms.Name, Namespace: ms.Namespace, UID: string(ms.UID),
		ResourceVersion: ms.ResourceVersion,
		Labels:          ms.Labels, Annotations: ms.Annotations,
		OwnerReferences: ms.OwnerReferences,
		TemplateLabels:  ms.Spec.Template.ObjectMeta.Labels,
		Replicas:        ptr.Deref(ms.Spec.Replicas, 0),
		ReadyReplicas:   ms.Status.ReadyReplicas,
		Platform:        PlatformOfKind(kind),
		ProviderSpec:    value,
	}, nil
}

// ListMachineSets lists the MachineSets in openshift-machine-api matching a
// label selector ("" = all). A MachineSet without a providerSpec is
// returned as an error only for that object: it is reported in bad.
func (c *Client) ListMachineSets(ctx context.Context, selector string) (sets []*MachineSet, bad map[string]error, err error) {
	list, err := c.res(GVRMachineSets, NamespaceMachineAPI).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, nil, fmt.Errorf("cluster %s: list machinesets: %w", c.Cluster, err)
	}
	for i := range list.Items {
		ms, perr := parseMachineSet(&list.Items[i])
		if perr != nil {
			if bad == nil {
				bad = map[string]error{}
			}
			bad[list.Items[i].GetName()] = perr
			continue
		}
		sets = append(sets, ms)
	}
	return sets, bad, nil
}

// GetMachineSet reads one MachineSet.
func (c *Client) GetMachineSet(ctx context.Context, name string) (*MachineSet, error) {
	u, err := c.get(ctx, GVRMachineSets, NamespaceMachineAPI, name)
	if err != nil {
		return nil, err
	}
	return parseMachineSet(u)
}

func (c *Client) mergePatch(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, patch map[string]any, sub ...string) (*unstructured.Unstructured, error) {
	body, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	u, err := c.res(gvr, ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "fleetsaga"}, sub...)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: patch %s %s: %w", c.Cluster, gvr.Resource, name, err)
	}
	return u, nil
}

// PatchImage sets ms's boot image to img with a JSON merge patch that
// carries ms.ResourceVersion: if the MachineSet changed since ms was read,
// the API server refuses it (IsConflict) and the caller re-reads. Only the
// image fields change (the AMI ID; the GCP boot disk's image; the whole
// Azure image struct; the vSphere template).
func (c *Client) PatchImage(ctx context.Context, ms *MachineSet, img BootImage) (*MachineSet, error) {
	value, err := imagePatch(ms, img)
	if err != nil {
		return nil, err
	}
	patch := map[string]any{
		"metadata": map[string]any{"resourceVersion": ms.ResourceVersion},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"providerSpec": map[string]any{"value": value}}}},
	}
	u, err := c.mergePatch(ctx, GVRMachineSets, NamespaceMachineAPI, ms.Name, patch)
	if err != nil {
		return nil, err
	}
	return parseMachineSet(u)
}

// imagePatch is the providerSpec.value fragment that sets img.
func imagePatch(ms *MachineSet, img BootImage) (map[string]any, error) {
	if img.Platform != ms.Platform {
		return nil, malformed("machineset %s is %q, image is for %q", ms.Name, ms.Platform, img.Platform)
	}
	switch img.Platform {
	case PlatformAWS:
		return map[string]any{"ami": machinev1beta1.AWSResourceReference{ID: ptr.To(img.AMI)}}, nil
	case PlatformGCP:
		disks, found, err := unstructured.NestedSlice(ms.ProviderSpec, "disks")
		if err != nil || !found {
			return nil, malformed("machineset %s: providerSpec has no disks", ms.Name)
		}
		set := false
		for _, d := range disks {
			if dm, ok := d.(map[string]any); ok {
				if boot, _ := dm["boot"].(bool); boot {
					dm["image"] = img.GCPImage
					set = true
				}
			}
		}
		if !set {
			return nil, malformed("machineset %s: providerSpec has no boot disk", ms.Name)
		}
		// A merge patch replaces arrays whole: send every disk.
		return map[string]any{"disks": disks}, nil
	case PlatformAzure:
		if img.Azure == nil {
			return nil, malformed("azure image without fields")
		}
		a := img.Azure
		typ := a.Type
		if typ == "" && a.ResourceID != "" {
			typ = azureImageTypeID
		} else if typ == "" {
			typ = azureNoPlan
		}
		return map[string]any{"image": machinev1beta1.Image{
			Publisher: a.Publisher, Offer: a.Offer, SKU: a.SKU, Version: a.Version,
			ResourceID: a.ResourceID, Type: machinev1beta1.AzureImageType(typ),
		}}, nil
	case PlatformVSphere:
		return map[string]any{"template": img.VSphereTemplate}, nil
	}
	// GCP sends the disks it read, untyped: a disk decoded into the pinned
	// type and written back would lose fields newer than the pin.
	return nil, malformed("machineset %s: unsupported platform %q", ms.Name, img.Platform)
}

// SetReplicas sets spec.replicas with ms.ResourceVersion (optimistic
// concurrency, like PatchImage).
func (c *Client) SetReplicas(ctx context.Context, ms *MachineSet, replicas int32) (*MachineSet, error) {
	patch := map[string]any{
		"metadata": map[string]any{"resourceVersion": ms.ResourceVersion},
		"spec":     map[string]any{"replicas": replicas},
	}
	u, err := c.mergePatch(ctx, GVRMachineSets, NamespaceMachineAPI, ms.Name, patch)
	if err != nil {
		return nil, err
	}
	return parseMachineSet(u)
}

// Machine is one Machine of a MachineSet.
type Machine struct {
	Name    string    `json:"name"`
	Phase   string    `json:"phase"`
	NodeRef string    `json:"nodeRef,omitempty"`
	Image   BootImage `json:"image"`
	Created string    `json:"created"`
	Error   string    `json:"error,omitempty"`
}

// Joined: the machine's node joined the cluster.
func (m Machine) Joined() bool { return m.NodeRef != "" }

// Machines lists the machines of MachineSet ms, oldest first.
func (c *Client) Machines(ctx context.Context, ms string) ([]Machine, error) {
	list, err := c.res(GVRMachines, NamespaceMachineAPI).List(ctx, metav1.ListOptions{LabelSelector: LabelMachineSet + "=" + ms})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: list machines of %s: %w", c.Cluster, ms, err)
	}
	out := make([]Machine, 0, len(list.Items))
	for i := range list.Items {
		var mc machinev1beta1.Machine
		if err := fromUnstructured(&list.Items[i], "machine", &mc); err != nil {
			return nil, fmt.Errorf("cluster %s: machines of %s: %w", c.Cluster, ms, err)
		}
		m := Machine{
			Name: mc.Name, Created: mc.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z"),
			Phase: ptr.Deref(mc.Status.Phase, ""), Error: ptr.Deref(mc.Status.ErrorMessage, ""),
		}
		if mc.Status.NodeRef != nil {
			m.NodeRef = mc.Status.NodeRef.Name
		}
		if v, ok := providerValue(mc.Spec.ProviderSpec); ok {
			m.Image, _ = ImageOf(v)
		}
		out = append(out, m)
	}
	return out, nil
}
