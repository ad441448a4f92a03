package machineapi

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Action is what the boot image bump does with one MachineSet.
type Action string

const (
	// ActionSkip: leave it alone and count it as skipped (not an error).
	ActionSkip Action = "Skip"
	// ActionUpToDate: it already boots the golden image.
	ActionUpToDate Action = "UpToDate"
	// ActionPatch: patch it to Plan.Desired.
	ActionPatch Action = "Patch"
	// ActionRefuse: it must not be patched and that is an error (e.g. the
	// golden image is for another RHEL major than its OS stream).
	ActionRefuse Action = "Refuse"
)

// Reason names why a MachineSet is skipped or refused.
type Reason string

const (
	ReasonOwned               Reason = "OwnedByAnotherController"
	ReasonWindows             Reason = "WindowsTemplate"
	ReasonUnsupportedOSStream Reason = "UnsupportedOSStream"
	ReasonNoArch              Reason = "NoArchOnMultiArchCluster"
	ReasonUnsupportedPlatform Reason = "UnsupportedPlatform"
	ReasonNoImage             Reason = "NoBootImage"
	ReasonCustomImage         Reason = "CustomImage"
	ReasonNoGoldenImage       Reason = "NoGoldenImage"
	ReasonRHELMajorMismatch   Reason = "RHELMajorMismatch"
	ReasonMalformed           Reason = "MalformedProviderSpec"
	ReasonUnsupportedArch     Reason = "UnsupportedArch"
	ReasonInvalidArch         Reason = "InvalidArch"
	ReasonImageLookup         Reason = "ImageLookupFailed"
	ReasonMarketplaceAMI      Reason = "MarketplaceAMI"
	ReasonAzureSecurityType   Reason = "AzureSecurityType"
	ReasonAzureVariant        Reason = "UnknownAzureVariant"
	ReasonVSphereImport       Reason = "VSphereNeedsOVAImport"
	// ReasonIgnitionStub: the user-data stub is older than Ignition spec 3
	// (userdata.go); the MCO converts it before it patches, fleetsaga does not.
	ReasonIgnitionStub Reason = "IgnitionStubNotSpec3"
	// ReasonManagedByMCO: the MCO's boot image controller owns the
	// MachineSet (the cluster opted it in, and the operator resolved the
	// opt-in in MachineConfiguration status.managedBootImagesStatus); it
	// patches it itself, and a second writer's patches are undone.
	ReasonManagedByMCO Reason = "ManagedByMCO"
)

// GoldenGCPProject is the project official RHCOS GCP images live in.
const GoldenGCPProject = "rhcos-cloud"

// SupportedOSStream is the one OS stream the MCO's boot image controller
// reconciles (machine-config-operator
// pkg/controller/bootimage/boot_image_controller.go, SupportedOSStream); a
// MachineSet labelled with any other is left alone.
const SupportedOSStream = "rhel-9"

// supportedRHELMajor is SupportedOSStream's RHEL major.
const supportedRHELMajor = 9

// Plan is the decision for one MachineSet.
type Plan struct {
	MachineSet string    `json:"machineSet"`
	Action     Action    `json:"action"`
	Reason     Reason    `json:"reason,omitempty"`
	Detail     string    `json:"detail,omitempty"`
	Arch       string    `json:"arch,omitempty"`
	Current    BootImage `json:"current"`
	Desired    BootImage `json:"desired"`
}

// PlanMachineSet decides what to do with ms given the golden record, what
// EC2 said of its AMI (AWS) and the cluster. Checks follow the MCO's
// order: owner reference, OS stream, Windows, architecture, then the
// platform's image.
func PlanMachineSet(ms *MachineSet, golden *Golden, amis AMIOrigins, cs ClusterStatus) Plan {
	return plan(ms, golden, amis, cs, false)
}

// PlanMCOManaged decides ms for a cluster whose MCO manages it: the same
// checks, but the platform's image-origin rule (EC2's AMI owner, the vSphere
// OVA import, the Azure variant) is the MCO's to apply, so no refusal of it
// fails the MachineSet and EC2 is not asked.
func PlanMCOManaged(ms *MachineSet, golden *Golden, cs ClusterStatus) Plan {
	return plan(ms, golden, nil, cs, true)
}

// AMIToLookUp is the AWS image EC2 must be asked about before ms is
// planned: ok only when ms passes the MCO's MachineSet checks
// (machine-config-operator pkg/controller/bootimage/ms_helpers.go,
// syncMAPIMachineSet), which come before the MCO reads the credentials and
// asks EC2 (platform_helpers.go, reconcileAWSProviderSpec).
func AMIToLookUp(ms *MachineSet, cs ClusterStatus) (BootImage, bool) {
	p, ok := precheck(ms, cs)
	if !ok || p.Current.Platform != PlatformAWS {
		return BootImage{}, false
	}
	return p.Current, true
}

func plan(ms *MachineSet, golden *Golden, amis AMIOrigins, cs ClusterStatus, mco bool) Plan {
	p, ok := precheck(ms, cs)
	if !ok {
		return p
	}
	if out, ok := originRule(p, ms, amis); !ok && !(mco && out.Action == ActionRefuse) {
		return out
	}
	cur := p.Current
	desired, err := golden.Stream.DesiredImage(p.Arch, cur)
	if err != nil {
		var ng *ErrNoGoldenImage
		if errors.As(err, &ng) {
			p.Action, p.Reason, p.Detail = ActionSkip, ReasonNoGoldenImage, err.Error()
			return p
		}
		p.Action, p.Reason, p.Detail = ActionRefuse, ReasonMalformed, err.Error()
		return p
	}
	p.Desired = desired
	if _, labelled := ms.OSStream(); labelled {
		if gm, err := RHELMajor(golden.Stream.OSVersion(p.Arch)); err == nil && gm != supportedRHELMajor {
			p.Action, p.Reason = ActionRefuse, ReasonRHELMajorMismatch
			p.Detail = fmt.Sprintf("golden image is RHEL %d, MachineSet OS stream is %s", gm, SupportedOSStream)
			return p
		}
	}
	if cur.Equal(desired) {
		p.Action = ActionUpToDate
		return p
	}
	p.Action = ActionPatch
	return p
}

// precheck runs the MCO's MachineSet checks, in its order, up to the
// platform's image; ok false returns the plan as it is.
func precheck(ms *MachineSet, cs ClusterStatus) (Plan, bool) {
	p := Plan{MachineSet: ms.Name}
	skip := func(r Reason, format string, args ...any) (Plan, bool) {
		p.Action, p.Reason, p.Detail = ActionSkip, r, fmt.Sprintf(format, args...)
		return p, false
	}
	refuse := func(r Reason, err error) (Plan, bool) {
		p.Action, p.Reason, p.Detail = ActionRefuse, r, err.Error()
		return p, false
	}
	if len(ms.OwnerReferences) > 0 {
		o := ms.OwnerReferences[0]
		return skip(ReasonOwned, "owned by %s %s", o.Kind, o.Name)
	}
	if s, labelled := ms.OSStream(); labelled && s != SupportedOSStream {
		return skip(ReasonUnsupportedOSStream, "OS stream %q is not supported (only %s)", s, SupportedOSStream)
	}
	if ms.Windows() {
		return skip(ReasonWindows, "Windows template")
	}
	arch, err := ms.Arch()
	if err != nil {
		return refuse(ReasonInvalidArch, err)
	}
	p.Arch = arch
	if p.Arch == "" {
		if cs.MultiArch {
			return skip(ReasonNoArch, "multi-arch cluster and no %s annotation", AnnotationCapacityLabels)
		}
		p.Arch = cs.ControlPlaneArch
		if p.Arch == "" {
			p.Arch = "amd64"
		}
	}
	if ms.Platform == "" {
		kind, _ := ms.ProviderSpec["kind"].(string)
		return skip(ReasonUnsupportedPlatform, "providerSpec kind %q", kind)
	}
	cur, err := ms.Image()
	if err != nil {
		return refuse(ReasonMalformed, err)
	}
	p.Current = cur
	if cur.Ref() == "" {
		return skip(ReasonNoImage, "no boot image set")
	}
	return p, true
}

// RHELMajor is the RHEL major of an RHCOS build ("9.6.20250523-0" → 9;
// old-style "418.94.2025..." → 9: the digits after the OCP x.y).
func RHELMajor(osVersion string) (int, error) {
	head, rest, ok := strings.Cut(osVersion, ".")
	n, err := strconv.Atoi(head)
	if !ok || err != nil || n <= 0 {
		return 0, fmt.Errorf("OS version %q is not <rhel major>.<minor>.<build>", osVersion)
	}
	if n >= 100 { // old scheme: <ocp x><ocp y>.<rhel x><rhel y>.<build>
		mid, _, _ := strings.Cut(rest, ".")
		if len(mid) < 2 {
			return 0, fmt.Errorf("OS version %q is not <ocp>.<rhel>.<build>", osVersion)
		}
		return strconv.Atoi(mid[:len(mid)-1])
	}
	return n, nil
}
