package spec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Cluster is one OpenShift-style cluster with MachineSets and the golden boot
// images per release. The machine API simulator (fleetsim/machineapi) owns
// this section.
type Cluster struct {
	Name string `json:"name"`
	// Platform is the cluster's infrastructure platform: aws, gcp, azure or
	// vsphere. MachineSets default to it.
	Platform string `json:"platform"`
	// ControlPlaneArch is the Kubernetes arch of the control plane nodes
	// (amd64, arm64, ppc64le, s390x); default amd64.
	ControlPlaneArch string `json:"controlPlaneArch,omitempty"`
	// MultiArch marks a multi-architecture payload (ClusterVersion
	// status.desired.architecture "Multi").
	MultiArch bool `json:"multiArch,omitempty"`
	// Release is the current (desired) release, x.y.z.
	Release string `json:"release"`
	// InstallRelease is the release the cluster was installed with; it is
	// the cluster's recorded boot image version until a bump records a newer
	// one. Default: the oldest release in BootImages.
	InstallRelease string `json:"installRelease,omitempty"`
	// Upgrading: the latest ClusterVersion history entry is Partial.
	Upgrading bool `json:"upgrading,omitempty"`
	// UpgradeCompletesAfter: when Upgrading, the upgrade completes after this
	// (scaled) time; 0 = it stays in progress until changed through the API.
	UpgradeCompletesAfter Duration `json:"upgradeCompletesAfter,omitempty"`
	// GoldenStampedRelease is the release the coreos-bootimages ConfigMap is
	// stamped for at start; default Release.
	GoldenStampedRelease string `json:"goldenStampedRelease,omitempty"`
	// GoldenStampAfter: when GoldenStampedRelease differs from Release, the
	// operator re-stamps the record for Release after this (scaled) time;
	// 0 = never by itself.
	GoldenStampAfter Duration `json:"goldenStampAfter,omitempty"`
	// BootImages are the golden boot images of each release this cluster
	// knows (the current release's are the golden record; older ones are
	// the history of official images).
	BootImages  []BootImageRelease `json:"bootImages"`
	MachineSets []MachineSet       `json:"machineSets"`
	// ManagedBootImages is the cluster admin's opt-in for MachineSets
	// (MachineConfiguration spec.managedBootImages); nil means All, which
	// the operator resolves by default on the platforms fleetsim serves.
	ManagedBootImages *BootImageOptIn `json:"managedBootImages,omitempty"`
	// MCO is the machine-config operator's boot image controller
	// (docs/CONFORMANCE.md §I): it patches every opted-in MachineSet to the golden
	// image and keeps it there. On unless false (fleetsim/DEVIATIONS.md):
	// off, no operator writes MachineSets and none is managed.
	MCO *bool `json:"mco,omitempty"`
	// AWSCredentials is the form of the aws-cloud-credentials Secret:
	// "" static keys, AWSCredentialsSTS role_arn and
	// web_identity_token_file, AWSCredentialsCCOCTL only a credentials INI.
	AWSCredentials string `json:"awsCredentials,omitempty"`
	// StubIgnitionVersion is the Ignition spec version of the
	// worker-user-data stub every MachineSet boots with; default 3.2.0.
	StubIgnitionVersion string `json:"stubIgnitionVersion,omitempty"`
}

// Forms of the aws-cloud-credentials Secret (machine-config-operator
// pkg/controller/bootimage/aws_helpers.go, newAWSEC2Client, reads the
// first two; ccoctl writes the third).
const (
	AWSCredentialsSTS    = "sts"
	AWSCredentialsCCOCTL = "ccoctl"
)

// MCOOn says whether the MCO's boot image controller runs.
func (c Cluster) MCOOn() bool { return on(c.MCO) }

// BootImageOptIn is the MachineSet entry of spec.managedBootImages.
type BootImageOptIn struct {
	// Mode is All, Partial or None.
	Mode string `json:"mode"`
	// MatchLabels is Partial's machineResourceSelector.
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// BootImageRelease is one release's golden boot images (its CoreOS stream).
type BootImageRelease struct {
	Release string `json:"release"` // x.y.z
	// OSVersion is the RHCOS build, e.g. "9.6.20250523-0"; its leading
	// number is the RHEL major.
	OSVersion string `json:"osVersion"`
	// SkewLimit is the oldest boot image this release accepts.
	SkewLimit SkewLimit `json:"skewLimit,omitempty"`
	// Images per Kubernetes arch (amd64, arm64, ...).
	Images map[string]ArchImages `json:"images"`
}

// SkewLimit is a release's boot image skew limit.
type SkewLimit struct {
	OCPVersion   string `json:"ocpVersion,omitempty"`   // x.y.z
	RHCOSVersion string `json:"rhcosVersion,omitempty"` // major.minor, e.g. "9.2"
}

// ArchImages are the golden images of one architecture per platform. The
// vSphere template name is derived from OSVersion (see VSphereTemplate).
type ArchImages struct {
	// AWS maps region → AMI ID.
	AWS   map[string]string `json:"aws,omitempty"`
	GCP   *GCPImage         `json:"gcp,omitempty"`
	Azure *AzureImages      `json:"azure,omitempty"`
}

// GCPImage is a GCP image (path projects/<project>/global/images/<name>).
type GCPImage struct {
	Project string `json:"project"`
	Name    string `json:"name"`
}

// AzureImages are the marketplace images for Hyper-V generation 1 and 2.
type AzureImages struct {
	Gen1 AzureImage `json:"gen1"`
	Gen2 AzureImage `json:"gen2"`
}

// AzureImage is a marketplace image.
type AzureImage struct {
	Publisher string `json:"publisher"`
	Offer     string `json:"offer"`
	SKU       string `json:"sku"`
	Version   string `json:"version"`
}

// VSphereTemplate is the template name fleetsim (and the boot image bump)
// use for an RHCOS build on vSphere.
func VSphereTemplate(osVersion string) string { return "rhcos-" + osVersion }

// MachineSet is one MachineSet in openshift-machine-api.
type MachineSet struct {
	Name string `json:"name"`
	// Platform defaults to the cluster's.
	Platform string `json:"platform,omitempty"`
	// Arch, when set, is written as the
	// capacity.cluster-autoscaler.kubernetes.io/labels annotation
	// ("kubernetes.io/arch=<arch>"); empty = no annotation.
	Arch     string `json:"arch,omitempty"`
	Replicas int32  `json:"replicas,omitempty"`
	// Labels are the MachineSet's metadata labels.
	Labels map[string]string `json:"labels,omitempty"`
	// OwnerReferences, when set, mean another controller owns it.
	OwnerReferences []OwnerReference `json:"ownerReferences,omitempty"`
	// Windows marks a Windows template (machine.openshift.io/os-id: Windows).
	Windows bool `json:"windows,omitempty"`
	// OSStream is the MachineSet's own OS stream label
	// (machineconfiguration.openshift.io/osstream), e.g. rhel-9; empty = none.
	OSStream string `json:"osStream,omitempty"`
	// BootRelease is the release whose golden image the MachineSet boots
	// (default InstallRelease of the cluster). Ignored with ProviderSpec.
	BootRelease string `json:"bootRelease,omitempty"`
	// CustomImage replaces the official image with a custom one (AMI ID,
	// GCP image path, Azure resource ID or vSphere template name). fleetsim
	// boots it too.
	CustomImage string `json:"customImage,omitempty"`
	// Region (AWS/GCP/Azure location); default per platform.
	Region string `json:"region,omitempty"`
	// AzureGen2 chooses the Hyper-V gen 2 image on Azure.
	AzureGen2 bool `json:"azureGen2,omitempty"`
	// ProviderSpec, when set, is used verbatim as
	// spec.template.spec.providerSpec.value.
	ProviderSpec map[string]any `json:"providerSpec,omitempty"`
}

// OwnerReference is a metadata.ownerReferences entry.
type OwnerReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
}

// Platforms fleetsim serves.
const (
	PlatformAWS     = "aws"
	PlatformGCP     = "gcp"
	PlatformAzure   = "azure"
	PlatformVSphere = "vsphere"
)

var platforms = map[string]bool{PlatformAWS: true, PlatformGCP: true, PlatformAzure: true, PlatformVSphere: true}

var arches = map[string]bool{"amd64": true, "arm64": true, "ppc64le": true, "s390x": true}

// DefaultRegion is the region a MachineSet of platform p lives in by default.
func DefaultRegion(p string) string {
	switch p {
	case PlatformAWS:
		return "us-east-1"
	case PlatformGCP:
		return "us-central1"
	case PlatformAzure:
		return "eastus"
	}
	return ""
}

// ReleaseImages finds a release's boot images.
func (c *Cluster) ReleaseImages(release string) (BootImageRelease, bool) {
	for _, b := range c.BootImages {
		if b.Release == release {
			return b, true
		}
	}
	return BootImageRelease{}, false
}

// ParseRelease parses an x.y.z release version (an optional "-suffix" is
// ignored) into its three numbers.
func ParseRelease(v string) ([3]int, error) {
	var out [3]int
	core, _, _ := strings.Cut(v, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return out, fmt.Errorf("release version %q is not x.y.z", v)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, fmt.Errorf("release version %q is not x.y.z", v)
		}
		out[i] = n
	}
	return out, nil
}

func validateClusters(cs []Cluster) error {
	var errs []error
	names := map[string]bool{}
	for ci := range cs {
		c := &cs[ci]
		where := fmt.Sprintf("clusters[%d] %q", ci, c.Name)
		if c.Name == "" || strings.ContainsAny(c.Name, "/ ") {
			errs = append(errs, fmt.Errorf("%s: name is required and must not contain '/' or spaces", where))
		}
		if names[c.Name] {
			errs = append(errs, fmt.Errorf("%s: duplicate cluster name", where))
		}
		names[c.Name] = true
		if !platforms[c.Platform] {
			errs = append(errs, fmt.Errorf("%s: platform must be aws, gcp, azure or vsphere", where))
		}
		if c.ControlPlaneArch != "" && !arches[c.ControlPlaneArch] {
			errs = append(errs, fmt.Errorf("%s: unknown controlPlaneArch %q", where, c.ControlPlaneArch))
		}
		if _, err := ParseRelease(c.Release); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
		if o := c.ManagedBootImages; o != nil {
			switch {
			case o.Mode != "All" && o.Mode != "Partial" && o.Mode != "None":
				errs = append(errs, fmt.Errorf("%s: managedBootImages.mode must be All, Partial or None", where))
			case (o.Mode == "Partial") != (len(o.MatchLabels) > 0):
				errs = append(errs, fmt.Errorf("%s: managedBootImages.matchLabels go with mode Partial only", where))
			}
		}
		seen := map[string]bool{}
		for bi, b := range c.BootImages {
			if _, err := ParseRelease(b.Release); err != nil {
				errs = append(errs, fmt.Errorf("%s bootImages[%d]: %w", where, bi, err))
			}
			if seen[b.Release] {
				errs = append(errs, fmt.Errorf("%s bootImages[%d]: duplicate release %s", where, bi, b.Release))
			}
			seen[b.Release] = true
			if _, err := RHELMajor(b.OSVersion); err != nil {
				errs = append(errs, fmt.Errorf("%s bootImages[%d]: %w", where, bi, err))
			}
			if l := b.SkewLimit.OCPVersion; l != "" {
				if _, err := ParseRelease(l); err != nil {
					errs = append(errs, fmt.Errorf("%s bootImages[%d] skewLimit: %w", where, bi, err))
				}
			}
			for a := range b.Images {
				if !arches[a] {
					errs = append(errs, fmt.Errorf("%s bootImages[%d]: unknown arch %q", where, bi, a))
				}
			}
		}
		if !seen[c.Release] {
			errs = append(errs, fmt.Errorf("%s: bootImages has no entry for the current release %s", where, c.Release))
		}
		if c.InstallRelease != "" && !seen[c.InstallRelease] {
			errs = append(errs, fmt.Errorf("%s: installRelease %s has no bootImages entry", where, c.InstallRelease))
		}
		if c.GoldenStampedRelease != "" && !seen[c.GoldenStampedRelease] {
			errs = append(errs, fmt.Errorf("%s: goldenStampedRelease %s has no bootImages entry", where, c.GoldenStampedRelease))
		}
		switch c.AWSCredentials {
		case "", AWSCredentialsSTS, AWSCredentialsCCOCTL:
		default:
			errs = append(errs, fmt.Errorf("%s: unknown awsCredentials %q (want empty, %s or %s)", where, c.AWSCredentials, AWSCredentialsSTS, AWSCredentialsCCOCTL))
		}
		msNames := map[string]bool{}
		for mi, m := range c.MachineSets {
			mw := fmt.Sprintf("%s machineSets[%d] %q", where, mi, m.Name)
			if m.Name == "" || strings.ContainsAny(m.Name, "/ ") {
				errs = append(errs, fmt.Errorf("%s: name is required and must not contain '/' or spaces", mw))
			}
			if msNames[m.Name] {
				errs = append(errs, fmt.Errorf("%s: duplicate MachineSet name", mw))
			}
			msNames[m.Name] = true
			if m.Platform != "" && !platforms[m.Platform] {
				errs = append(errs, fmt.Errorf("%s: unknown platform %q", mw, m.Platform))
			}
			if m.Arch != "" && !arches[m.Arch] {
				errs = append(errs, fmt.Errorf("%s: unknown arch %q", mw, m.Arch))
			}
			if m.Replicas < 0 {
				errs = append(errs, fmt.Errorf("%s: replicas must be >= 0", mw))
			}
			if m.BootRelease != "" && !seen[m.BootRelease] {
				errs = append(errs, fmt.Errorf("%s: bootRelease %s has no bootImages entry", mw, m.BootRelease))
			}
		}
	}
	return errors.Join(errs...)
}

// RHELMajor is the RHEL major of an RHCOS build string like
// "9.6.20250523-0" (the number before the first dot).
func RHELMajor(osVersion string) (int, error) {
	head, _, ok := strings.Cut(osVersion, ".")
	n, err := strconv.Atoi(head)
	if !ok || err != nil || n <= 0 {
		return 0, fmt.Errorf("OS version %q is not <rhel major>.<minor>.<build>", osVersion)
	}
	return n, nil
}
