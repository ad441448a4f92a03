package machineapi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A MachineSet the MCO manages is planned without fleetsaga's image-origin
// refusals (no EC2 answer, the vSphere OVA import, a Marketplace AMI):
// they are the MCO's to decide, so it is reported as the MCO's, not failed.
func TestPlanMCOManagedSkipsFleetsagasOriginRefusals(t *testing.T) {
	g, amis := testGolden(t)
	cs := ClusterStatus{DesiredVersion: "4.19.2", LatestState: "Completed", ControlPlaneArch: "amd64"}
	vsphere := &MachineSet{Name: "ms", Platform: PlatformVSphere, ProviderSpec: map[string]any{"kind": "VSphereMachineProviderSpec", "template": "rhcos-old"}}
	for name, ms := range map[string]*MachineSet{"vsphere": vsphere, "aws, EC2 not asked": awsMS("ami-old", "us-east-1"), "marketplace": awsMS("ami-market", "us-east-1")} {
		assert.Equal(t, ActionPatch, PlanMCOManaged(ms, g, cs).Action, name)
	}
	assert.Equal(t, ReasonVSphereImport, PlanMachineSet(vsphere, g, amis, cs).Reason, "fleetsaga itself still refuses to import")
	assert.Equal(t, ReasonMarketplaceAMI, PlanMachineSet(awsMS("ami-market", "us-east-1"), g, amis, cs).Reason)
}

// EC2 is asked only about the AMI of a MachineSet that passes the MCO's
// MachineSet checks (owner, OS stream, Windows, arch); an empty region is
// asked about, and the lookup fails it with a reason.
func TestAMIToLookUpFollowsTheMCOsMachineSetChecks(t *testing.T) {
	cs := ClusterStatus{ControlPlaneArch: "amd64"}
	owned := awsMS("ami-old", "us-east-1")
	owned.OwnerReferences = []metav1.OwnerReference{{Kind: "ControlPlaneMachineSet", Name: "cluster"}}
	windows := awsMS("ami-old", "us-east-1")
	windows.TemplateLabels = map[string]string{LabelOSID: "Windows"}
	stream := awsMS("ami-old", "us-east-1")
	stream.Labels = map[string]string{LabelOSStream: "rhel-10"}
	for name, ms := range map[string]*MachineSet{"owned": owned, "windows": windows, "other stream": stream} {
		_, ok := AMIToLookUp(ms, cs)
		assert.False(t, ok, name)
	}
	_, ok := AMIToLookUp(awsMS("ami-old", "us-east-1"), ClusterStatus{MultiArch: true})
	assert.False(t, ok, "multi-arch without an arch annotation")
	img, ok := AMIToLookUp(awsMS("ami-old", ""), cs)
	assert.True(t, ok)
	assert.Equal(t, "ami-old", img.AMI)
	g, _ := testGolden(t)
	p := PlanMachineSet(awsMS("ami-old", ""), g, AMIOrigins{"ami-old": {Failure: "providerSpec placement.region is empty"}}, cs)
	assert.Equal(t, ActionRefuse, p.Action)
	assert.Equal(t, ReasonImageLookup, p.Reason)
	assert.Contains(t, p.Detail, "placement.region is empty")
}
