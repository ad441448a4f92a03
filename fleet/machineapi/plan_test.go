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
     "hyperVGen2": {"publisher": "azureopenshift", "offer": "aro4", "sku": "419-v2", "version": "419.6.20250523"}},
     "ocp": {
     "hyperVGen1": {"publisher": "redhat", "offer": "rh-ocp-worker", "sku": "rh-ocp-worker-gen1", "version": "419.6.20250523"},
     "hyperVGen2": {"publisher": "redhat", "offer": "rh-ocp-worker", "sku": "rh-ocp-worker", "version": "419.6.20250523"}}}}}
  },
  "aarch64": {
   "rhel-coreos-extensions": {"marketplace": {"azure": {"no-purchase-plan": {
     "hyperVGen2": {"publisher": "azureopenshift", "offer": "aro4", "sku": "419-arm", "version": "419.6.20250523"}}}}}
  }
 }
}`

// testGolden is the golden record and what EC2 says of the test's AMIs.
func testGolden(t *testing.T) (*Golden, AMIOrigins) {
	g := &Golden{ReleaseVersion: "4.19.2", MCOReleaseImageVersion: "4.19.2"}
	require.NoError(t, json.Unmarshal([]byte(testStream), &g.Stream))
	amis := AMIOrigins{
		"ami-old": {Owner: AWSOwnerRHCOS}, "ami-new": {Owner: AWSOwnerRHCOS},
		"ami-someoneelse": {Owner: "111122223333"},
		"ami-market":      {Owner: AWSOwnerMarketplace, Name: "rhcos-x86_64-prod-abc"},
		"ami-gone":        {Missing: true},
	}
	return g, amis
}

func awsMS(ami, region string) *MachineSet {
	return &MachineSet{Name: "ms", Platform: PlatformAWS, ProviderSpec: map[string]any{
		"kind": "AWSMachineProviderConfig", "ami": map[string]any{"id": ami}, "placement": map[string]any{"region": region}}}
}

func TestPlanPerPlatformComparison(t *testing.T) {
	g, amis := testGolden(t)
	cs := ClusterStatus{DesiredVersion: "4.19.2", LatestState: "Completed", ControlPlaneArch: "amd64"}
	azure := func(img map[string]any) *MachineSet {
		return &MachineSet{Name: "ms", Platform: PlatformAzure, ProviderSpec: map[string]any{"kind": "AzureMachineProviderSpec", "image": img}}
	}
	noPlan := func(sku, version string) map[string]any {
		return map[string]any{"publisher": "azureopenshift", "offer": "aro4", "sku": sku, "version": version, "type": "MarketplaceNoPlan"}
	}
	trusted := azure(noPlan("aro_416", "416.94.20240715"))
	trusted.ProviderSpec["securityProfile"] = map[string]any{"settings": map[string]any{"securityType": "TrustedLaunch"}}
	armAzure := azure(noPlan("aro_416", "416.94.20240715"))
	armAzure.Annotations = map[string]string{AnnotationCapacityLabels: "kubernetes.io/arch=arm64"}
	emptySecurity := azure(noPlan("aro_416", "416.94.20240715"))
	emptySecurity.ProviderSpec["securityProfile"] = map[string]any{"settings": map[string]any{"securityType": ""}}
	paid := func(sku string) *MachineSet {
		return azure(map[string]any{"publisher": "redhat", "offer": "rh-ocp-worker", "sku": sku, "version": "416.94.20240715", "type": "MarketplaceWithPlan"})
	}
	ppcAzure := azure(noPlan("aro_416", "416.94.20240715"))
	ppcAzure.Annotations = map[string]string{AnnotationCapacityLabels: "kubernetes.io/arch=ppc64le"}
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
		{"aws marketplace", awsMS("ami-market", "us-east-1"), ActionRefuse, ReasonMarketplaceAMI, ""},
		{"aws AMI EC2 does not have", awsMS("ami-gone", "us-east-1"), ActionRefuse, ReasonImageLookup, ""},
		{"aws AMI not looked up", awsMS("ami-unasked", "us-east-1"), ActionRefuse, ReasonImageLookup, ""},
		{"aws region without golden", awsMS("ami-old", "ap-south-2"), ActionSkip, ReasonNoGoldenImage, ""},
		{"gcp outdated", gcp("projects/rhcos-cloud/global/images/rhcos-9-4-old"), ActionPatch, "", "projects/rhcos-cloud/global/images/rhcos-9-6-new"},
		{"gcp custom project", gcp("projects/acme/global/images/rhcos-9-4-old"), ActionSkip, ReasonCustomImage, ""},
		{"gcp bad path", gcp("rhcos-9-4"), ActionSkip, ReasonCustomImage, ""},
		{"gcp full URL is not the prefix", gcp("https://www.googleapis.com/compute/v1/projects/rhcos-cloud/global/images/rhcos-9-4-old"), ActionSkip, ReasonCustomImage, ""},
		{"azure gen1 outdated", azure(noPlan("aro_416", "416.94.20240715")), ActionPatch, "", "azureopenshift:aro4:aro_419:419.6.20250523"},
		{"azure gen2 stays gen2", azure(noPlan("416-v2", "416.94.20240715")), ActionPatch, "", "azureopenshift:aro4:419-v2:419.6.20250523"},
		{"azure compared whole", azure(noPlan("aro_419", "419.6.20250523")), ActionUpToDate, "", "azureopenshift:aro4:aro_419:419.6.20250523"},
		{"azure same image, type unset", azure(map[string]any{"publisher": "azureopenshift", "offer": "aro4", "sku": "aro_419", "version": "419.6.20250523"}), ActionPatch, "", "azureopenshift:aro4:419-v2:419.6.20250523"},
		{"azure install-time upload moves to the marketplace", azure(map[string]any{"resourceID": "/resourceGroups/rg/providers/Microsoft.Compute/galleries/g/images/x-gen2/versions/latest", "type": "ID"}), ActionPatch, "", "azureopenshift:aro4:419-v2:419.6.20250523"},
		{"azure unknown marketplace", azure(map[string]any{"publisher": "acme", "offer": "os", "sku": "1", "version": "1"}), ActionRefuse, ReasonAzureVariant, ""},
		{"azure TrustedLaunch", trusted, ActionSkip, ReasonAzureSecurityType, ""},
		{"azure aarch64 is always Gen2", armAzure, ActionPatch, "", "azureopenshift:aro4:419-arm:419.6.20250523"},
		{"azure ppc64le", ppcAzure, ActionSkip, ReasonUnsupportedArch, ""},
		{"azure empty securityType is processed", emptySecurity, ActionPatch, "", "azureopenshift:aro4:aro_419:419.6.20250523"},
		{"azure paid OCP Gen1", paid("rh-ocp-worker-gen1"), ActionPatch, "", "redhat:rh-ocp-worker:rh-ocp-worker-gen1:419.6.20250523"},
		{"azure paid OCP Gen2", paid("rh-ocp-worker"), ActionPatch, "", "redhat:rh-ocp-worker:rh-ocp-worker:419.6.20250523"},
		{"azure paid OKE EMEA without a stream set", azure(map[string]any{"publisher": "redhat-limited", "offer": "rh-oke-worker", "sku": "rh-oke-worker", "version": "1", "type": "MarketplaceWithPlan"}), ActionSkip, ReasonNoGoldenImage, ""},
		{"vsphere needs the OVA import", vsphere("rhcos-9.4.20240715-0"), ActionRefuse, ReasonVSphereImport, ""},
		{"vsphere even when current", vsphere("rhcos-9.6.20250523-0"), ActionRefuse, ReasonVSphereImport, ""},
	}
	for _, c := range cases {
		p := PlanMachineSet(c.ms, g, amis, cs)
		assert.Equal(t, c.action, p.Action, "%s: %+v", c.name, p)
		assert.Equal(t, c.reason, p.Reason, "%s: %+v", c.name, p)
		if c.desired != "" {
			assert.Equal(t, c.desired, p.Desired.Ref(), c.name)
		}
	}
}

func TestPlanSkipOrderAndArch(t *testing.T) {
	g, amis := testGolden(t)
	cs := ClusterStatus{DesiredVersion: "4.19.2", LatestState: "Completed", ControlPlaneArch: "amd64"}
	ms := awsMS("ami-old", "us-east-1")
	ms.OwnerReferences = []metav1.OwnerReference{{Kind: "MachineDeployment", Name: "md"}}
	ms.TemplateLabels = map[string]string{LabelOSID: "Windows"}
	ms.Labels = map[string]string{LabelOSStream: "rhel-8"}
	assert.Equal(t, ReasonOwned, PlanMachineSet(ms, g, amis, cs).Reason, "owner reference first")
	ms.OwnerReferences = nil
	assert.Equal(t, ReasonUnsupportedOSStream, PlanMachineSet(ms, g, amis, cs).Reason)
	ms.Labels[LabelOSStream] = "rhel-10"
	assert.Equal(t, ReasonUnsupportedOSStream, PlanMachineSet(ms, g, amis, cs).Reason, "the MCO supports rhel-9 only")
	ms.Labels = map[string]string{"machineconfiguration.openshift.io/os-stream": "rhel-10"}
	ms.TemplateLabels[LabelOSStream] = "rhel-10"
	assert.Equal(t, ReasonWindows, PlanMachineSet(ms, g, amis, cs).Reason, "neither the hyphenated key nor the template's label is the stream")
	ms.Labels = map[string]string{LabelOSStream: "rhel-9"}
	assert.Equal(t, ReasonWindows, PlanMachineSet(ms, g, amis, cs).Reason)
	ms.TemplateLabels = nil

	cs.MultiArch = true
	assert.Equal(t, ReasonNoArch, PlanMachineSet(ms, g, amis, cs).Reason)
	ms.Annotations = map[string]string{AnnotationCapacityLabels: "kubernetes.io/arch=arm64"}
	p := PlanMachineSet(ms, g, amis, cs)
	assert.Equal(t, ReasonNoGoldenImage, p.Reason, "the stream has no aarch64")
	ms.Annotations[AnnotationCapacityLabels] = "foo=bar, kubernetes.io/arch=amd64"
	assert.Equal(t, ActionPatch, PlanMachineSet(ms, g, amis, cs).Action)
	// The MCO degrades on an arch it does not know, or an annotation
	// without one (ms_helpers.go, getArchFromMachineSet): refused, not skipped.
	for _, bad := range []string{"kubernetes.io/arch=riscv64", "foo=bar"} {
		ms.Annotations[AnnotationCapacityLabels] = bad
		p = PlanMachineSet(ms, g, amis, cs)
		assert.Equal(t, ActionRefuse, p.Action, bad)
		assert.Equal(t, ReasonInvalidArch, p.Reason, bad)
	}
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
	b, err := json.Marshal(v["image"])
	require.NoError(t, err)
	assert.JSONEq(t, `{"publisher": "p", "offer": "o", "sku": "s", "version": "v", "resourceID": "", "type": "MarketplaceNoPlan"}`, string(b))
}
