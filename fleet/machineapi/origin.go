package machineapi

import (
	"fmt"
	"strings"
)

// Whether a MachineSet's current image is one the MCO would bump is
// decided per platform, from the image itself (machine-config-operator
// pkg/controller/bootimage/platform_helpers.go, aws_helpers.go); there is
// no list of official images on the cluster.

// AWS AMI owner accounts (machine-config-operator
// pkg/controller/bootimage/aws_helpers.go).
const (
	AWSOwnerRHCOS       = "531415883065"
	AWSOwnerMarketplace = "679593333241"
)

// GCPOfficialPrefix: a GCP boot image outside it is custom
// (the MCO's pkg/controller/bootimage/platform_helpers.go, reconcileGCPProviderSpec).
const GCPOfficialPrefix = "projects/" + GoldenGCPProject + "/global/images"

// AMIOrigin is what EC2 answered for an AMI (DescribeImages).
type AMIOrigin struct {
	Owner string `json:"owner,omitempty"`
	Name  string `json:"name,omitempty"`
	// Missing: EC2 has no such AMI in the MachineSet's region.
	Missing bool `json:"missing,omitempty"`
	// Failure: why EC2 could not be asked (credentials, region); it fails
	// the MachineSets of this AMI only.
	Failure string `json:"failure,omitempty"`
}

// AMIOrigins maps an AMI ID to its origin; the activity asks EC2 before
// planning, PlanMachineSet only reads it.
type AMIOrigins map[string]AMIOrigin

// Azure marketplace variants (the MCO's pkg/controller/bootimage/platform_helpers.go, AzureVariant).
const (
	azureNoPlan        = "MarketplaceNoPlan"
	azureImageTypeID   = "ID"
	azureWithPlan      = "MarketplaceWithPlan"
	azureUnpaidPublish = "azureopenshift"
)

// azurePaidVariants are the paid product lines by publisher and offer, as
// the stream names their image sets (the MCO's pkg/controller/bootimage/platform_helpers.go,
// determineAzureVariant; stream-metadata-go stream/rhcos).
var azurePaidVariants = map[[2]string]string{
	{"redhat", "rh-ocp-worker"}:         "ocp",
	{"redhat", "rh-opp-worker"}:         "opp",
	{"redhat", "rh-oke-worker"}:         "oke",
	{"redhat-limited", "rh-ocp-worker"}: "ocp-emea",
	{"redhat-limited", "rh-opp-worker"}: "opp-emea",
	{"redhat-limited", "rh-oke-worker"}: "oke-emea",
}

// azureVariant is the stream image set a current Azure image moves to:
// "" for the unpaid marketplace (an install-time upload by resource ID,
// or publisher azureopenshift), else the paid line's key.
func azureVariant(a AzureImage) (string, bool) {
	if a.ResourceID != "" || a.Publisher == azureUnpaidPublish {
		return "", true
	}
	v, ok := azurePaidVariants[[2]string{a.Publisher, a.Offer}]
	return v, ok
}

// azureGen2 (streamArch: the stream's name, aarch64) is the MCO's Hyper-V generation rule: an upload names gen2 in
// its resource ID; an unpaid marketplace image has v2 in its SKU, and on
// aarch64 is always Gen2; a paid image is Gen2 unless its SKU says gen1.
func azureGen2(a AzureImage, streamArch string) bool {
	switch {
	case a.ResourceID != "":
		return strings.Contains(a.ResourceID, "gen2")
	case a.Type == azureNoPlan:
		return strings.Contains(a.SKU, "v2") || streamArch == "aarch64"
	}
	return !strings.Contains(a.SKU, "gen1")
}

// originRule applies the platform's rule before the golden image is
// looked up; ok false returns the plan as it is.
func originRule(p Plan, ms *MachineSet, amis AMIOrigins) (Plan, bool) {
	cur := p.Current
	stop := func(a Action, r Reason, format string, args ...any) (Plan, bool) {
		p.Action, p.Reason, p.Detail = a, r, fmt.Sprintf(format, args...)
		return p, false
	}
	switch cur.Platform {
	case PlatformAWS:
		o, ok := amis[cur.AMI]
		switch {
		case !ok:
			return stop(ActionRefuse, ReasonImageLookup, "AMI %s was not looked up in EC2", cur.AMI)
		case o.Failure != "":
			return stop(ActionRefuse, ReasonImageLookup, "AMI %s: %s", cur.AMI, o.Failure)
		case o.Missing:
			return stop(ActionRefuse, ReasonImageLookup, "EC2 has no AMI %s in %s", cur.AMI, cur.Region)
		case o.Owner == AWSOwnerRHCOS:
		case o.Owner == AWSOwnerMarketplace:
			return stop(ActionRefuse, ReasonMarketplaceAMI, "AMI %s is an AWS Marketplace image (%s): the MCO picks its successor from the product's AMIs; fleetsaga does not", cur.AMI, o.Name)
		default:
			return stop(ActionSkip, ReasonCustomImage, "AMI %s is owned by account %s, not Red Hat's %s", cur.AMI, o.Owner, AWSOwnerRHCOS)
		}
	case PlatformGCP:
		if !strings.HasPrefix(cur.GCPImage, GCPOfficialPrefix) {
			return stop(ActionSkip, ReasonCustomImage, "image %s is not in %s", cur.GCPImage, GCPOfficialPrefix)
		}
	case PlatformAzure:
		if p.Arch == "ppc64le" || p.Arch == "s390x" {
			return stop(ActionSkip, ReasonUnsupportedArch, "arch %s is not supported on Azure", p.Arch)
		}
		if st := ms.AzureSecurityType(); st != "" {
			return stop(ActionSkip, ReasonAzureSecurityType, "securityProfile.settings.securityType %s is not supported", st)
		}
		if _, ok := azureVariant(*cur.Azure); !ok {
			return stop(ActionRefuse, ReasonAzureVariant, "could not determine the Azure marketplace variant of publisher %q offer %q", cur.Azure.Publisher, cur.Azure.Offer)
		}
	case PlatformVSphere:
		return stop(ActionRefuse, ReasonVSphereImport, "the MCO imports the release's OVA into the template of each failure domain and compares the template's product version (vsphere_helpers.go); fleetsaga does not: let the MCO manage this MachineSet or import the template by hand")
	}
	return p, true
}
