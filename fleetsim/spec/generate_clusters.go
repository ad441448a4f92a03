package spec

import (
	"fmt"
	"math/rand"
	"strings"
)

// Sample releases used by SampleBootImages: an install release, an
// intermediate one, and the current one (the newest is the golden record).
const (
	SampleInstallRelease = "4.16.8"
	SampleMidRelease     = "4.18.3"
	SampleCurrentRelease = "4.19.2"
)

// SampleBootImages returns golden boot images for three releases, for amd64
// and arm64 on every platform, with the current release's skew limit at
// 4.16.0 / RHCOS 9.4. Deterministic, so tests and the demo can share it.
func SampleBootImages() []BootImageRelease {
	mk := func(release, osVersion string, limit SkewLimit) BootImageRelease {
		compact := strings.ReplaceAll(osVersion, ".", "-")
		rel := strings.ReplaceAll(release, ".", "")
		img := map[string]ArchImages{}
		for i, arch := range []string{"amd64", "arm64"} {
			a := fmt.Sprintf("%s%d", rel, i)
			img[arch] = ArchImages{
				AWS: map[string]string{
					"us-east-1": fmt.Sprintf("ami-0%s%07d", a, 1),
					"us-west-2": fmt.Sprintf("ami-0%s%07d", a, 2),
					"eu-west-1": fmt.Sprintf("ami-0%s%07d", a, 3),
				},
				GCP: &GCPImage{Project: "rhcos-cloud", Name: fmt.Sprintf("rhcos-%s-%s", compact, coreosArch(arch))},
				Azure: &AzureImages{
					Gen1: AzureImage{Publisher: "azureopenshift", Offer: "aro4", SKU: "aro_" + rel[:3], Version: azureVersion(release, osVersion)},
					Gen2: AzureImage{Publisher: "azureopenshift", Offer: "aro4", SKU: rel[:3] + "-v2", Version: azureVersion(release, osVersion)},
				},
			}
		}
		return BootImageRelease{Release: release, OSVersion: osVersion, SkewLimit: limit, Images: img}
	}
	return []BootImageRelease{
		mk(SampleInstallRelease, "9.4.20240715-0", SkewLimit{OCPVersion: "4.12.0", RHCOSVersion: "9.2"}),
		mk(SampleMidRelease, "9.4.20250121-0", SkewLimit{OCPVersion: "4.14.0", RHCOSVersion: "9.2"}),
		mk(SampleCurrentRelease, "9.6.20250523-0", SkewLimit{OCPVersion: "4.16.0", RHCOSVersion: "9.4"}),
	}
}

// azureVersion is the marketplace version string, e.g. "419.6.20250523".
func azureVersion(release, osVersion string) string {
	r, _ := ParseRelease(release)
	parts := strings.SplitN(osVersion, ".", 3)
	build := strings.TrimSuffix(parts[len(parts)-1], "-0")
	return fmt.Sprintf("%d%d.%s.%s", r[0], r[1], parts[1], build)
}

// coreosArch is the CoreOS stream name of a Kubernetes arch.
func coreosArch(a string) string {
	switch a {
	case "amd64":
		return "x86-64"
	case "arm64":
		return "aarch64"
	}
	return a
}

// GenerateClusters makes clusters holding nMachineSets MachineSets in all
// (up to 100 per cluster), for the benchmark and large tests. Platforms
// rotate per cluster. Most MachineSets boot the install release's official
// image (so a bump patches them); a deterministic minority (given seed) are
// already current, custom, owned by another controller, Windows, or arm64 by
// annotation, so every skip path is exercised at scale.
func GenerateClusters(nMachineSets int, seed int64) []Cluster {
	rng := rand.New(rand.NewSource(seed))
	const perCluster = 100
	plats := []string{PlatformAWS, PlatformGCP, PlatformAzure, PlatformVSphere}
	var out []Cluster
	for ci := 0; nMachineSets > 0; ci++ {
		n := min(nMachineSets, perCluster)
		nMachineSets -= n
		c := Cluster{
			Name:             fmt.Sprintf("cluster-%03d", ci),
			Platform:         plats[ci%len(plats)],
			ControlPlaneArch: "amd64",
			Release:          SampleCurrentRelease,
			InstallRelease:   SampleInstallRelease,
			BootImages:       SampleBootImages(),
		}
		regions := []string{DefaultRegion(c.Platform)}
		if c.Platform == PlatformAWS {
			regions = []string{"us-east-1", "us-west-2", "eu-west-1"}
		}
		for mi := range n {
			m := MachineSet{
				Name:     fmt.Sprintf("%s-worker-%03d", c.Name, mi),
				Replicas: 1,
				Labels:   map[string]string{"machine.openshift.io/cluster-api-cluster": c.Name, "fleetsaga.io/pool": []string{"a", "b"}[mi%2]},
				Region:   regions[mi%len(regions)],
				OSStream: "rhel-9",
			}
			switch p := rng.Intn(100); {
			case p < 80:
				// outdated official image: the common case
			case p < 88:
				m.BootRelease = SampleCurrentRelease
			case p < 92:
				m.CustomImage = customImage(c.Platform, mi)
			case p < 96:
				m.OwnerReferences = []OwnerReference{{APIVersion: "cluster.x-k8s.io/v1beta1", Kind: "MachineDeployment", Name: m.Name, UID: fmt.Sprintf("00000000-0000-4000-8000-%012d", mi)}}
			case p < 98:
				m.Windows = true
			default:
				m.Arch = "arm64"
			}
			if c.Platform == PlatformAzure && mi%2 == 1 {
				m.AzureGen2 = true
			}
			c.MachineSets = append(c.MachineSets, m)
		}
		out = append(out, c)
	}
	return out
}

func customImage(platform string, i int) string {
	switch platform {
	case PlatformAWS:
		return fmt.Sprintf("ami-0c0ffee%09d", i)
	case PlatformGCP:
		return fmt.Sprintf("projects/acme-images/global/images/acme-rhcos-%d", i)
	case PlatformAzure:
		return fmt.Sprintf("/subscriptions/0000/resourceGroups/acme/providers/Microsoft.Compute/images/acme-rhcos-%d", i)
	}
	return fmt.Sprintf("acme-golden-template-%d", i)
}

// SampleCluster is a small cluster on platform, installed at
// SampleInstallRelease and now at SampleCurrentRelease, with two outdated
// MachineSets "<name>-worker-a" (label fleetsaga.io/pool=a, 1 replica) and
// "<name>-worker-b" (pool=b, 0 replicas). With skips it also has one
// MachineSet per skip reason: "-current" (already on the golden image),
// "-custom" (custom image), "-owned" (owner reference), "-windows"
// (Windows template) and "-arm64" (arm64 by annotation, outdated).
func SampleCluster(name, platform string, skips bool) Cluster {
	c := Cluster{
		Name:             name,
		Platform:         platform,
		ControlPlaneArch: "amd64",
		Release:          SampleCurrentRelease,
		InstallRelease:   SampleInstallRelease,
		BootImages:       SampleBootImages(),
	}
	ms := func(suffix, pool string, replicas int32) MachineSet {
		return MachineSet{
			Name:     name + "-" + suffix,
			Replicas: replicas,
			Labels:   map[string]string{"fleetsaga.io/pool": pool},
			OSStream: "rhel-9",
		}
	}
	c.MachineSets = []MachineSet{ms("worker-a", "a", 1), ms("worker-b", "b", 0)}
	if platform == PlatformAzure {
		c.MachineSets[1].AzureGen2 = true
	}
	if !skips {
		return c
	}
	cur := ms("current", "a", 0)
	cur.BootRelease = SampleCurrentRelease
	custom := ms("custom", "a", 0)
	custom.CustomImage = customImage(platform, 1)
	owned := ms("owned", "a", 0)
	owned.OwnerReferences = []OwnerReference{{APIVersion: "cluster.x-k8s.io/v1beta1", Kind: "MachineDeployment", Name: name + "-md", UID: "00000000-0000-4000-8000-000000000001"}}
	win := ms("windows", "a", 0)
	win.Windows = true
	win.OSStream = ""
	arm := ms("arm64", "a", 0)
	arm.Arch = "arm64"
	c.MachineSets = append(c.MachineSets, cur, custom, owned, win, arm)
	return c
}
