package machineapi

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const testStream = `{
 "stream": "rhcos-4.19",
 "architectures": {
  "x86_64": {
   "artifacts": {"vmware": {"release": "9.6.20250523-0"}},
   "images": {
    "aws": {"regions": {"us-east-1": {"release": "9.6.20250523-0", "image": "ami-new"}}},
    "gcp": {"release": "9.6.20250523-0", "project": "rhcos-cloud", "name": "rhcos-9-6-new"}
   },
   "rhel-coreos-extensions": {"marketplace": {"azure": {"no-purchase-plan": {
     "hyperVGen1": {"publisher": "azureopenshift", "offer": "aro4", "sku": "aro_419", "version": "419.6.20250523"},
     "hyperVGen2": {"publisher": "azureopenshift", "offer": "aro4", "sku": "419-v2", "version": "419.6.20250523"}}}}}
  }
 }
}`

func testGolden(t *testing.T) (*Golden, map[string]bool) {
	g := &Golden{ReleaseVersion: "4.19.2", MCOReleaseImageVersion: "4.19.2"}
	require.NoError(t, json.Unmarshal([]byte(testStream), &g.Stream))
	known := map[string]bool{"ami-old": true, "rhcos-9.4.20240715-0": true, "azureopenshift:aro4:aro_416:416.94.20240715": true,
		"azureopenshift:aro4:416-v2:416.94.20240715": true}
	g.Stream.AddTo(known)
	return g, known
}

func awsMS(ami, region string) *MachineSet {
	return &MachineSet{Name: "ms", Platform: PlatformAWS, ProviderSpec: map[string]any{
		"kind": "AWSMachineProviderConfig", "ami": map[string]any{"id": ami}, "placement": map[string]any{"region": region}}}
}

func TestPlanPerPlatformComparison(t *testing.T) {
	g, known := testGolden(t)
	cs := ClusterStatus{DesiredVersion: "4.19.2", LatestState: "Completed", ControlPlaneArch: "amd64"}
	azure := func(img map[string]any) *MachineSet {
		return &MachineSet{Name: "ms", Platform: PlatformAzure, ProviderSpec: map[string]any{"kind": "AzureMachineProviderSpec", "image": img}}
	}
	gcp := func(image string) *MachineSet {
		return &MachineSet{Name: "ms", Platform: PlatformGCP, ProviderSpec: map[string]any{"kind": "GCPMachineProviderSpec",
			"disks": []any{map[string]any{"boot": false, "image": "x"}, map[string]any{"boot": true, "image": image}}}}
	}
	vsphere := func(tmpl string) *MachineSet {
		return &MachineSet{Name: "ms", Platform: PlatformVSphere, ProviderSpec: map[string]any{"kind": "VSphereMachineProviderSpec", "template": tmpl}}
	}
	cases := []struct {
		name    string
		ms      *MachineSet
		action  Action
		reason  Reason
		desired string
	}{
		{"aws outdated", awsMS("ami-old", "us-east-1"), ActionPatch, "", "ami-new"},
		{"aws current", awsMS("ami-new", "us-east-1"), ActionUpToDate, "", "ami-new"},
		{"aws no AMI", awsMS("", "us-east-1"), ActionSkip, ReasonNoImage, ""},
		{"aws unknown owner", awsMS("ami-someoneelse", "us-east-1"), ActionSkip, ReasonCustomImage, ""},
		{"aws region without golden", awsMS("ami-old", "ap-south-2"), ActionSkip, ReasonNoGoldenImage, ""},
		{"gcp outdated", gcp("projects/rhcos-cloud/global/images/rhcos-9-4-old"), ActionPatch, "", "projects/rhcos-cloud/global/images/rhcos-9-6-new"},
		{"gcp custom project", gcp("projects/acme/global/images/rhcos-9-4-old"), ActionSkip, ReasonCustomImage, ""},
		{"gcp bad path", gcp("rhcos-9-4"), ActionSkip, ReasonCustomImage, ""},
		{"azure gen1 outdated", azure(map[string]any{"publisher": "azureopenshift", "offer": "aro4", "sku": "aro_416", "version": "416.94.20240715"}), ActionPatch, "", "azureopenshift:aro4:aro_419:419.6.20250523"},
		{"azure gen2 stays gen2", azure(map[string]any{"publisher": "azureopenshift", "offer": "aro4", "sku": "416-v2", "version": "416.94.20240715"}), ActionPatch, "", "azureopenshift:aro4:419-v2:419.6.20250523"},
		{"azure compared whole", azure(map[string]any{"publisher": "azureopenshift", "offer": "aro4", "sku": "aro_419", "version": "419.6.20250523"}), ActionUpToDate, "", "azureopenshift:aro4:aro_419:419.6.20250523"},
		{"azure gallery image", azure(map[string]any{"resourceID": "/resourceGroups/rg/providers/Microsoft.Compute/galleries/g/images/x-gen2/versions/latest"}), ActionSkip, ReasonCustomImage, ""},
		{"azure unknown marketplace", azure(map[string]any{"publisher": "acme", "offer": "os", "sku": "1", "version": "1"}), ActionSkip, ReasonCustomImage, ""},
		{"vsphere outdated", vsphere("rhcos-9.4.20240715-0"), ActionPatch, "", "rhcos-9.6.20250523-0"},
		{"vsphere current", vsphere("rhcos-9.6.20250523-0"), ActionUpToDate, "", "rhcos-9.6.20250523-0"},
		{"vsphere custom template", vsphere("golden-template"), ActionSkip, ReasonCustomImage, ""},
	}
	for _, c := range cases {
		p := PlanMachineSet(c.ms, g, known, cs)
		assert.Equal(t, c.action, p.Action, "%s: %+v", c.name, p)
		assert.Equal(t, c.reason, p.Reason, "%s: %+v", c.name, p)
		if c.desired != "" {
			assert.Equal(t, c.desired, p.Desired.Ref(), c.name)
		}
	}
}

func TestPlanSkipOrderAndArch(t *testing.T) {
	g, known := testGolden(t)
	cs := ClusterStatus{DesiredVersion: "4.19.2", LatestState: "Completed", ControlPlaneArch: "amd64"}
	ms := awsMS("ami-old", "us-east-1")
	ms.OwnerReferences = []metav1.OwnerReference{{Kind: "MachineDeployment", Name: "md"}}
	ms.TemplateLabels = map[string]string{LabelOSID: "Windows"}
	ms.Labels = map[string]string{LabelOSStream: "rhel-8"}
	assert.Equal(t, ReasonOwned, PlanMachineSet(ms, g, known, cs).Reason, "owner reference first")
	ms.OwnerReferences = nil
	assert.Equal(t, ReasonUnsupportedOSStream, PlanMachineSet(ms, g, known, cs).Reason)
	ms.Labels[LabelOSStream] = "rhel-10"
	assert.Equal(t, ReasonUnsupportedOSStream, PlanMachineSet(ms, g, known, cs).Reason, "the MCO supports rhel-9 only")
	ms.Labels = map[string]string{"machineconfiguration.openshift.io/os-stream": "rhel-10"}
	ms.TemplateLabels[LabelOSStream] = "rhel-10"
	assert.Equal(t, ReasonWindows, PlanMachineSet(ms, g, known, cs).Reason, "neither the hyphenated key nor the template's label is the stream")
	ms.Labels = map[string]string{LabelOSStream: "rhel-9"}
	assert.Equal(t, ReasonWindows, PlanMachineSet(ms, g, known, cs).Reason)
	ms.TemplateLabels = nil

	cs.MultiArch = true
	assert.Equal(t, ReasonNoArch, PlanMachineSet(ms, g, known, cs).Reason)
	ms.Annotations = map[string]string{AnnotationCapacityLabels: "kubernetes.io/arch=arm64"}
	p := PlanMachineSet(ms, g, known, cs)
	assert.Equal(t, ReasonNoGoldenImage, p.Reason, "the stream has no aarch64")
	ms.Annotations[AnnotationCapacityLabels] = "foo=bar, kubernetes.io/arch=amd64"
	assert.Equal(t, ActionPatch, PlanMachineSet(ms, g, known, cs).Action)
}

func TestImagePatchShapes(t *testing.T) {
	ms := &MachineSet{Name: "ms", Platform: PlatformGCP, ProviderSpec: map[string]any{"kind": "GCPMachineProviderSpec",
		"disks": []any{map[string]any{"boot": true, "image": "old", "sizeGb": int64(128)}, map[string]any{"boot": false, "image": "data"}}}}
	v, err := imagePatch(ms, BootImage{Platform: PlatformGCP, GCPImage: "new"})
	require.NoError(t, err)
	disks := v["disks"].([]any)
	require.Len(t, disks, 2, "a merge patch replaces arrays whole: every disk is sent")
	assert.Equal(t, "new", disks[0].(map[string]any)["image"])
	assert.Equal(t, int64(128), disks[0].(map[string]any)["sizeGb"])
	assert.Equal(t, "data", disks[1].(map[string]any)["image"])
	assert.Equal(t, "old", ms.ProviderSpec["disks"].([]any)[0].(map[string]any)["image"], "the read object is not modified")

	_, err = imagePatch(ms, BootImage{Platform: PlatformAWS, AMI: "x"})
	assert.True(t, IsMalformed(err))
	az := &MachineSet{Name: "ms", Platform: PlatformAzure}
	v, err = imagePatch(az, BootImage{Platform: PlatformAzure, Azure: &AzureImage{Publisher: "p", Offer: "o", SKU: "s", Version: "v"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"publisher": "p", "offer": "o", "sku": "s", "version": "v", "resourceID": "", "type": "MarketplaceNoPlan"}, v["image"])
}
