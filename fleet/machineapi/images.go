package machineapi

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// BootImage is a MachineSet's boot image on its platform. Two images are
// the same image when they are ==.
type BootImage struct {
	Platform string `json:"platform"`
	// AWS: the AMI ID (and the region it lives in, from placement.region).
	AMI    string `json:"ami,omitempty"`
	Region string `json:"region,omitempty"`
	// GCP: projects/<project>/global/images/<name>.
	GCPImage string `json:"gcpImage,omitempty"`
	// Azure: the image struct, compared whole.
	Azure *AzureImage `json:"azure,omitempty"`
	// vSphere: the template name.
	VSphereTemplate string `json:"vsphereTemplate,omitempty"`
}

// AzureImage is providerSpec.image on Azure: a marketplace image
// (publisher/offer/sku/version) or an image by resource ID (an install-time
// upload), with its type (MarketplaceNoPlan, MarketplaceWithPlan, ID). The
// MCO compares it whole, type included (platform_helpers.go).
type AzureImage struct {
	Publisher  string `json:"publisher,omitempty"`
	Offer      string `json:"offer,omitempty"`
	SKU        string `json:"sku,omitempty"`
	Version    string `json:"version,omitempty"`
	ResourceID string `json:"resourceID,omitempty"`
	Type       string `json:"type,omitempty"`
}

// Equal compares two images (Azure by value).
func (b BootImage) Equal(o BootImage) bool {
	if (b.Azure == nil) != (o.Azure == nil) {
		return false
	}
	if b.Azure != nil && *b.Azure != *o.Azure {
		return false
	}
	return b.Platform == o.Platform && b.AMI == o.AMI && b.GCPImage == o.GCPImage && b.VSphereTemplate == o.VSphereTemplate
}

// Ref is the image's identity as one string: the AMI ID, the GCP image
// path, the Azure resource ID or "publisher:offer:sku:version", or the
// vSphere template.
func (b BootImage) Ref() string {
	switch b.Platform {
	case PlatformAWS:
		return b.AMI
	case PlatformGCP:
		return b.GCPImage
	case PlatformAzure:
		if b.Azure == nil {
			return ""
		}
		if b.Azure.ResourceID != "" {
			return b.Azure.ResourceID
		}
		if b.Azure.Publisher == "" {
			return ""
		}
		return strings.Join([]string{b.Azure.Publisher, b.Azure.Offer, b.Azure.SKU, b.Azure.Version}, ":")
	case PlatformVSphere:
		return b.VSphereTemplate
	}
	return ""
}

func (b BootImage) String() string { return b.Platform + ":" + b.Ref() }

// ImageOf reads the boot image out of a providerSpec value, decoded into
// machine/v1beta1's provider type for its kind.
func ImageOf(value map[string]any) (BootImage, error) {
	kind, _ := value["kind"].(string)
	img := BootImage{Platform: PlatformOfKind(kind)}
	switch img.Platform {
	case PlatformAWS:
		var ps machinev1beta1.AWSMachineProviderConfig
		if err := decodeProviderSpec(value, &ps); err != nil {
			return img, fmt.Errorf("aws %w", err)
		}
		img.AMI, img.Region = ptr.Deref(ps.AMI.ID, ""), ps.Placement.Region
	case PlatformGCP:
		var ps machinev1beta1.GCPMachineProviderSpec
		if err := decodeProviderSpec(value, &ps); err != nil {
			return img, fmt.Errorf("gcp %w", err)
		}
		for _, d := range ps.Disks {
			if d != nil && d.Boot {
				img.GCPImage = d.Image
			}
		}
	case PlatformAzure:
		var ps machinev1beta1.AzureMachineProviderSpec
		if err := decodeProviderSpec(value, &ps); err != nil {
			return img, fmt.Errorf("azure %w", err)
		}
		// Image is a struct, not a pointer, in the type: "no image" is
		// the key's absence.
		if _, found := value["image"]; found {
			a := ps.Image
			img.Azure = &AzureImage{Publisher: a.Publisher, Offer: a.Offer, SKU: a.SKU, Version: a.Version, ResourceID: a.ResourceID, Type: string(a.Type)}
		}
	case PlatformVSphere:
		var ps machinev1beta1.VSphereMachineProviderSpec
		if err := decodeProviderSpec(value, &ps); err != nil {
			return img, fmt.Errorf("vsphere %w", err)
		}
		img.VSphereTemplate = ps.Template
	default:
		return img, malformed("unsupported providerSpec kind %q", kind)
	}
	return img, nil
}

// ParseGCPImage splits projects/<project>/global/images/<name> (an
// optional https://www.googleapis.com/compute/v1/ prefix is accepted).
func ParseGCPImage(path string) (project, name string, ok bool) {
	path = strings.TrimPrefix(path, "https://www.googleapis.com/compute/v1/")
	parts := strings.Split(path, "/")
	if len(parts) != 5 || parts[0] != "projects" || parts[2] != "global" || parts[3] != "images" || parts[1] == "" || parts[4] == "" {
		return "", "", false
	}
	return parts[1], parts[4], true
}

// VSphereTemplate is the template name of an RHCOS build on vSphere.
func VSphereTemplate(osVersion string) string { return "rhcos-" + osVersion }

// --- CoreOS stream metadata ---

// Stream is the CoreOS stream JSON (the subset fleetsaga reads).
type Stream struct {
	Stream        string                `json:"stream"`
	Architectures map[string]StreamArch `json:"architectures"`
}

// StreamArch is one architecture of a stream.
type StreamArch struct {
	Artifacts struct {
		VMware *struct {
			Release string `json:"release"`
		} `json:"vmware,omitempty"`
	} `json:"artifacts"`
	Images struct {
		AWS *struct {
			Regions map[string]struct {
				Release string `json:"release"`
				Image   string `json:"image"`
			} `json:"regions"`
		} `json:"aws,omitempty"`
		GCP *struct {
			Release string `json:"release"`
			Project string `json:"project"`
			Name    string `json:"name"`
		} `json:"gcp,omitempty"`
	} `json:"images"`
	Extensions struct {
		Marketplace struct {
			// Azure's image sets: "no-purchase-plan" and the paid lines
			// (ocp, opp, oke and their -emea twins).
			Azure map[string]AzureImageSet `json:"azure"`
		} `json:"marketplace"`
	} `json:"rhel-coreos-extensions"`
}

// AzureImageSet is one marketplace line's images per Hyper-V generation.
type AzureImageSet struct {
	Gen1 *AzureImage `json:"hyperVGen1,omitempty"`
	Gen2 *AzureImage `json:"hyperVGen2,omitempty"`
}

// azureNoPurchasePlan is the stream's key of the unpaid marketplace set.
const azureNoPurchasePlan = "no-purchase-plan"

// StreamArchName maps a Kubernetes arch to the stream's key.
func StreamArchName(kubeArch string) string {
	switch kubeArch {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return kubeArch
}

// OSVersion is the RHCOS build of the stream for arch (vmware artifact
// release, else the GCP image release), "" if unknown.
func (s *Stream) OSVersion(kubeArch string) string {
	a, ok := s.Architectures[StreamArchName(kubeArch)]
	if !ok {
		return ""
	}
	if a.Artifacts.VMware != nil && a.Artifacts.VMware.Release != "" {
		return a.Artifacts.VMware.Release
	}
	if a.Images.GCP != nil {
		return a.Images.GCP.Release
	}
	if a.Images.AWS != nil {
		for _, r := range a.Images.AWS.Regions {
			return r.Release
		}
	}
	return ""
}

// AnyOSVersion is OSVersion of the first architecture (sorted) that has one.
func (s *Stream) AnyOSVersion() string {
	keys := make([]string, 0, len(s.Architectures))
	for k := range s.Architectures {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a := s.Architectures[k]
		if a.Artifacts.VMware != nil && a.Artifacts.VMware.Release != "" {
			return a.Artifacts.VMware.Release
		}
	}
	return ""
}

// ErrNoGoldenImage: the stream has no image for this platform, arch and
// region.
type ErrNoGoldenImage struct{ Platform, Arch, Region string }

func (e *ErrNoGoldenImage) Error() string {
	return fmt.Sprintf("golden record has no %s image for arch %s%s", e.Platform, e.Arch, map[bool]string{true: " in region " + e.Region, false: ""}[e.Region != ""])
}

// DesiredImage is the golden image for a MachineSet currently on current
// (its region, and on Azure its Hyper-V generation, are kept).
func (s *Stream) DesiredImage(kubeArch string, current BootImage) (BootImage, error) {
	a, ok := s.Architectures[StreamArchName(kubeArch)]
	missing := &ErrNoGoldenImage{Platform: current.Platform, Arch: kubeArch}
	if !ok {
		return BootImage{}, missing
	}
	out := BootImage{Platform: current.Platform}
	switch current.Platform {
	case PlatformAWS:
		missing.Region = current.Region
		if a.Images.AWS == nil {
			return BootImage{}, missing
		}
		r, ok := a.Images.AWS.Regions[current.Region]
		if !ok || r.Image == "" {
			return BootImage{}, missing
		}
		out.AMI, out.Region = r.Image, current.Region
	case PlatformGCP:
		if a.Images.GCP == nil || a.Images.GCP.Name == "" {
			return BootImage{}, missing
		}
		out.GCPImage = "projects/" + a.Images.GCP.Project + "/global/images/" + a.Images.GCP.Name
	case PlatformAzure:
		// the MCO's pkg/controller/bootimage/platform_helpers.go, reconcileAzureProviderSpec and
		// getTargetImageFromStream.
		if current.Azure == nil {
			return BootImage{}, missing
		}
		variant, ok := azureVariant(*current.Azure)
		if !ok {
			return BootImage{}, missing
		}
		key, typ := variant, azureWithPlan
		if variant == "" {
			key, typ = azureNoPurchasePlan, azureNoPlan
		}
		set := a.Extensions.Marketplace.Azure[key]
		img := set.Gen1
		if azureGen2(*current.Azure, StreamArchName(kubeArch)) {
			img = set.Gen2
		}
		if img == nil {
			return BootImage{}, missing
		}
		c := *img
		c.ResourceID, c.Type = "", typ
		out.Azure = &c
	case PlatformVSphere:
		if a.Artifacts.VMware == nil || a.Artifacts.VMware.Release == "" {
			return BootImage{}, missing
		}
		out.VSphereTemplate = VSphereTemplate(a.Artifacts.VMware.Release)
	default:
		return BootImage{}, missing
	}
	return out, nil
}

// The machine-config operator's own skew limits (machine-config-operator
// pkg/controller/common/constants.go at 7ff337a): a real golden record
// states none, so these apply where it does not.
const (
	MCOSkewLimitOCPVersion   = "4.13.0"
	MCOSkewLimitRHCOSVersion = "9.2"
)

// Golden is the golden boot image record.
type Golden struct {
	ReleaseVersion         string `json:"releaseVersion"`
	MCOReleaseImageVersion string `json:"mcoReleaseImageVersion"`
	Stream                 Stream `json:"stream"`
	// SkewLimit is the release's oldest acceptable boot image (empty
	// fields: no limit stated).
	SkewLimitOCPVersion   string `json:"skewLimitOCPVersion,omitempty"`
	SkewLimitRHCOSVersion string `json:"skewLimitRHCOSVersion,omitempty"`
	ResourceVersion       string `json:"resourceVersion"`
}

// StampedFor reports whether the record is stamped for release.
func (g *Golden) StampedFor(release string) bool {
	return g.ReleaseVersion == release && g.MCOReleaseImageVersion == release
}

// GoldenRecord reads the coreos-bootimages ConfigMap.
func (c *Client) GoldenRecord(ctx context.Context) (*Golden, error) {
	u, err := c.get(ctx, GVRConfigMaps, NamespaceMCO, GoldenConfigMap)
	if err != nil {
		return nil, err
	}
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	g := &Golden{
		ReleaseVersion:         data[KeyReleaseVersion],
		MCOReleaseImageVersion: data[KeyMCOReleaseImage],
		SkewLimitOCPVersion:    orDefault(data[KeySkewLimitOCPVersion], MCOSkewLimitOCPVersion),
		SkewLimitRHCOSVersion:  orDefault(data[KeySkewLimitRHCOSVersion], MCOSkewLimitRHCOSVersion),
		ResourceVersion:        u.GetResourceVersion(),
	}
	if data[KeyStream] == "" {
		return nil, malformed("configmap %s/%s has no %q", NamespaceMCO, GoldenConfigMap, KeyStream)
	}
	if err := json.Unmarshal([]byte(data[KeyStream]), &g.Stream); err != nil {
		return nil, malformed("configmap %s/%s: stream JSON: %v", NamespaceMCO, GoldenConfigMap, err)
	}
	return g, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
