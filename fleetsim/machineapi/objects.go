package machineapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fm "github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// The objects a cluster starts with, built from its spec section. Objects
// are plain JSON maps normalised through encoding/json so they hold only
// the types unstructured.Unstructured supports (int64, not int).

var uidSpace = uuid.MustParse("6f1c4c55-7a43-4b8a-9a57-3f0f9a6c2b10")

func uidFor(parts ...string) string {
	return uuid.NewSHA1(uidSpace, []byte(strings.Join(parts, "/"))).String()
}

// normalize round-trips m through JSON into an Unstructured.
func normalize(m map[string]any) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	return u, nil
}

// coreosArch maps a Kubernetes arch to the CoreOS stream's arch key.
func coreosArch(a string) string {
	switch a {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return a
}

func streamName(release string) string {
	r, _ := spec.ParseRelease(release)
	return fmt.Sprintf("rhcos-%d.%d", r[0], r[1])
}

// streamJSON renders a release's golden images as CoreOS stream metadata.
func streamJSON(b spec.BootImageRelease) string {
	archs := map[string]any{}
	for arch, img := range b.Images {
		ca := coreosArch(arch)
		images := map[string]any{}
		if len(img.AWS) > 0 {
			regions := map[string]any{}
			for r, ami := range img.AWS {
				regions[r] = map[string]any{"release": b.OSVersion, "image": ami}
			}
			images["aws"] = map[string]any{"regions": regions}
		}
		if img.GCP != nil {
			images["gcp"] = map[string]any{"release": b.OSVersion, "project": img.GCP.Project, "name": img.GCP.Name}
		}
		a := map[string]any{
			"artifacts": map[string]any{"vmware": map[string]any{
				"release": b.OSVersion,
				"formats": map[string]any{"ova": map[string]any{"disk": map[string]any{
					"location": fmt.Sprintf("https://rhcos.mirror.openshift.com/art/storage/prod/streams/%s/builds/%s/%s/rhcos-%s-vmware.%s.ova", streamName(b.Release), b.OSVersion, ca, b.OSVersion, ca),
				}}},
			}},
			"images": images,
		}
		if img.Azure != nil {
			az := func(i spec.AzureImage) map[string]any {
				return map[string]any{"publisher": i.Publisher, "offer": i.Offer, "sku": i.SKU, "version": i.Version}
			}
			a["rhel-coreos-extensions"] = map[string]any{"marketplace": map[string]any{"azure": map[string]any{
				"no-purchase-plan": map[string]any{"hyperVGen1": az(img.Azure.Gen1), "hyperVGen2": az(img.Azure.Gen2)},
			}}}
		}
		archs[ca] = a
	}
	out, _ := json.Marshal(map[string]any{
		"stream":        streamName(b.Release),
		"metadata":      map[string]any{"last-modified": "2025-01-01T00:00:00Z", "generator": "fleetsim"},
		"architectures": archs,
	})
	return string(out)
}

func goldenConfigMap(c *spec.Cluster, release string) map[string]any {
	b, _ := c.ReleaseImages(release)
	data := map[string]any{
		fm.KeyStream:          streamJSON(b),
		fm.KeyReleaseVersion:  release,
		fm.KeyMCOReleaseImage: release,
	}
	if b.SkewLimit.OCPVersion != "" {
		data[fm.KeySkewLimitOCPVersion] = b.SkewLimit.OCPVersion
	}
	if b.SkewLimit.RHCOSVersion != "" {
		data[fm.KeySkewLimitRHCOSVersion] = b.SkewLimit.RHCOSVersion
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": fm.GoldenConfigMap, "namespace": fm.NamespaceMCO, "uid": uidFor(c.Name, "cm", fm.GoldenConfigMap)},
		"data":     data,
	}
}

// awsCredentials is the machine API's aws-cloud-credentials Secret
// (static keys fleetsim's EC2 accepts unchecked, or the STS forms the
// spec names), which the MCO reads to ask EC2 who owns an AMI
// (machine-config-operator pkg/controller/bootimage/aws_helpers.go,
// newAWSEC2Client).
func awsCredentials(c *spec.Cluster) map[string]any {
	b64 := func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }
	const role, token = "arn:aws:iam::111122223333:role/fleetsim-machine-api", "/var/run/secrets/openshift/serviceaccount/token"
	data := map[string]any{"aws_access_key_id": b64("AKIAFLEETSIM" + strings.ToUpper(c.Name)), "aws_secret_access_key": b64("fleetsim-not-a-secret")}
	switch c.AWSCredentials {
	case spec.AWSCredentialsSTS:
		data = map[string]any{"role_arn": b64(role), "web_identity_token_file": b64(token)}
	case spec.AWSCredentialsCCOCTL:
		data = map[string]any{"credentials": b64("[default]\nsts_regional_endpoints = regional\nrole_arn = " + role + "\nweb_identity_token_file = " + token + "\n")}
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": fm.AWSCredentialsSecret, "namespace": fm.NamespaceMachineAPI, "uid": uidFor(c.Name, "secret", fm.AWSCredentialsSecret)},
		"data":     data,
	}
}

// userDataSecretName is the Secret every fleetsim MachineSet's
// providerSpec names as its userDataSecret.
const userDataSecretName = "worker-user-data"

// userData is the MachineSets' Ignition stub Secret (the installer's
// worker-user-data: a pointer to the machine config server), whose
// ignition.version the MCO checks before each patch
// (machine-config-operator pkg/controller/bootimage/helpers.go,
// upgradeStubIgnitionIfRequired).
func userData(c *spec.Cluster) map[string]any {
	v := c.StubIgnitionVersion
	if v == "" {
		v = "3.2.0"
	}
	stub := `{"ignition":{"version":"` + v + `","config":{"merge":[{"source":"https://api-int.` + c.Name + `.example:22623/config/worker"}]}}}`
	return map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": userDataSecretName, "namespace": fm.NamespaceMachineAPI, "uid": uidFor(c.Name, "secret", userDataSecretName)},
		"data":     map[string]any{"userData": base64.StdEncoding.EncodeToString([]byte(stub)), "disableTemplating": base64.StdEncoding.EncodeToString([]byte("true"))},
	}
}

func clusterVersion(c *spec.Cluster, install string) map[string]any {
	arch := ""
	if c.MultiArch {
		arch = "Multi"
	}
	image := func(v string) string { return "quay.io/openshift-release-dev/ocp-release:" + v + "-multi" }
	state := "Completed"
	if c.Upgrading {
		state = "Partial"
	}
	history := []any{map[string]any{"state": state, "version": c.Release, "image": image(c.Release), "startedTime": "2025-01-01T00:00:00Z", "verified": true}}
	if install != c.Release {
		history = append(history, map[string]any{"state": "Completed", "version": install, "image": image(install), "startedTime": "2024-06-01T00:00:00Z", "completionTime": "2024-06-01T01:00:00Z", "verified": true})
	}
	progressing := "False"
	if c.Upgrading {
		progressing = "True"
	}
	return map[string]any{
		"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
		"metadata": map[string]any{"name": fm.ClusterVersionName, "uid": uidFor(c.Name, "clusterversion")},
		"spec":     map[string]any{"clusterID": uidFor(c.Name, "clusterid"), "channel": "stable-" + strings.TrimPrefix(streamName(c.Release), "rhcos-")},
		"status": map[string]any{
			"desired":    map[string]any{"version": c.Release, "image": image(c.Release), "architecture": arch},
			"history":    history,
			"conditions": []any{map[string]any{"type": "Progressing", "status": progressing}},
		},
	}
}

func platformType(p string) string {
	switch p {
	case spec.PlatformAWS:
		return "AWS"
	case spec.PlatformGCP:
		return "GCP"
	case spec.PlatformAzure:
		return "Azure"
	case spec.PlatformVSphere:
		return "VSphere"
	}
	return "None"
}

func infrastructure(c *spec.Cluster) map[string]any {
	return map[string]any{
		"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
		"metadata": map[string]any{"name": fm.InfrastructureName, "uid": uidFor(c.Name, "infrastructure")},
		"spec":     map[string]any{"platformSpec": map[string]any{"type": platformType(c.Platform)}},
		"status": map[string]any{
			"infrastructureName": c.Name,
			"platform":           platformType(c.Platform),
			"platformStatus":     map[string]any{"type": platformType(c.Platform)},
		},
	}
}

func machineConfiguration(c *spec.Cluster, install string) map[string]any {
	b, _ := c.ReleaseImages(install)
	mc := map[string]any{
		"apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
		"metadata": map[string]any{"name": fm.MachineConfigurationName, "uid": uidFor(c.Name, "machineconfiguration")},
		"spec": map[string]any{"managementState": "Managed",
			"managedBootImages": map[string]any{"machineManagers": []any{optInEntry(c.ManagedBootImages)}}},
		"status": map[string]any{
			"bootImageSkewEnforcementStatus": map[string]any{
				"mode":      "Automatic",
				"automatic": map[string]any{"ocpVersion": install, "rhcosVersion": b.OSVersion},
			},
			"conditions": []any{map[string]any{
				"type": "Upgradeable", "status": "True", "reason": "AsExpected",
				"message": "", "lastTransitionTime": "2025-01-01T00:00:00Z",
			}},
		},
	}
	if c.MCOOn() {
		// The operator's resolution of the spec (here: the same). Only an
		// MCO whose boot image controller manages the platform writes it;
		// without it (spec mco off) the opt-in is only the admin's spec.
		status := mc["status"].(map[string]any)
		status["managedBootImagesStatus"] = map[string]any{"machineManagers": []any{optInEntry(c.ManagedBootImages)}}
	}
	return mc
}

// optInEntry is the machinesets entry of managedBootImages.machineManagers.
func optInEntry(o *spec.BootImageOptIn) map[string]any {
	sel := map[string]any{"mode": "All"}
	if o != nil {
		sel["mode"] = o.Mode
		if o.Mode == "Partial" {
			labels := map[string]any{}
			for k, v := range o.MatchLabels {
				labels[k] = v
			}
			sel["partial"] = map[string]any{"machineResourceSelector": map[string]any{"matchLabels": labels}}
		}
	}
	return map[string]any{"resource": "machinesets", "apiGroup": fm.GVRMachineSets.Group, "selection": sel}
}

func node(c *spec.Cluster, name, arch string, controlPlane bool, machine string) map[string]any {
	labels := map[string]any{fm.LabelArch: arch, "kubernetes.io/os": "linux", "kubernetes.io/hostname": name}
	if controlPlane {
		labels[fm.LabelControlPlane] = ""
		labels["node-role.kubernetes.io/master"] = ""
	} else {
		labels[fm.LabelWorker] = ""
	}
	md := map[string]any{"name": name, "uid": uidFor(c.Name, "node", name), "labels": labels}
	if machine != "" {
		md["annotations"] = map[string]any{"machine.openshift.io/machine": fm.NamespaceMachineAPI + "/" + machine}
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Node", "metadata": md,
		"status": map[string]any{
			"nodeInfo":   map[string]any{"architecture": arch, "operatingSystem": "linux"},
			"conditions": []any{map[string]any{"type": "Ready", "status": "True"}},
		},
	}
}

// machineSetArch is the arch the spec MachineSet's image is chosen for.
func machineSetArch(c *spec.Cluster, m *spec.MachineSet) string {
	if m.Arch != "" {
		return m.Arch
	}
	if c.ControlPlaneArch != "" {
		return c.ControlPlaneArch
	}
	return "amd64"
}

func providerSpec(c *spec.Cluster, m *spec.MachineSet, install string) map[string]any {
	if m.ProviderSpec != nil {
		return m.ProviderSpec
	}
	platform := m.Platform
	if platform == "" {
		platform = c.Platform
	}
	release := m.BootRelease
	if release == "" {
		release = install
	}
	b, _ := c.ReleaseImages(release)
	img := b.Images[machineSetArch(c, m)]
	region := m.Region
	if region == "" {
		region = spec.DefaultRegion(platform)
	}
	const api = "machine.openshift.io/v1beta1"
	switch platform {
	case spec.PlatformAWS:
		ami := img.AWS[region]
		if m.CustomImage != "" {
			ami = m.CustomImage
		}
		return map[string]any{
			"apiVersion": api, "kind": "AWSMachineProviderConfig",
			"ami":               map[string]any{"id": ami},
			"instanceType":      "m6i.xlarge",
			"placement":         map[string]any{"region": region, "availabilityZone": region + "a"},
			"userDataSecret":    map[string]any{"name": userDataSecretName},
			"credentialsSecret": map[string]any{"name": "aws-cloud-credentials"},
		}
	case spec.PlatformGCP:
		image := ""
		if img.GCP != nil {
			image = "projects/" + img.GCP.Project + "/global/images/" + img.GCP.Name
		}
		if m.CustomImage != "" {
			image = m.CustomImage
		}
		return map[string]any{
			"apiVersion": api, "kind": "GCPMachineProviderSpec",
			"disks":          []any{map[string]any{"autoDelete": true, "boot": true, "image": image, "sizeGb": 128, "type": "pd-ssd"}},
			"machineType":    "n2-standard-4",
			"projectID":      c.Name + "-project",
			"region":         region,
			"zone":           region + "-a",
			"userDataSecret": map[string]any{"name": userDataSecretName},
		}
	case spec.PlatformAzure:
		image := map[string]any{"publisher": "", "offer": "", "sku": "", "version": "", "resourceID": "", "type": "MarketplaceNoPlan"}
		if img.Azure != nil {
			ai := img.Azure.Gen1
			if m.AzureGen2 {
				ai = img.Azure.Gen2
			}
			image = map[string]any{"publisher": ai.Publisher, "offer": ai.Offer, "sku": ai.SKU, "version": ai.Version, "resourceID": "", "type": "MarketplaceNoPlan"}
		}
		if m.CustomImage != "" {
			image = map[string]any{"publisher": "", "offer": "", "sku": "", "version": "", "resourceID": m.CustomImage, "type": "ID"}
		}
		return map[string]any{
			"apiVersion": api, "kind": "AzureMachineProviderSpec",
			"image":          image,
			"location":       region,
			"vmSize":         "Standard_D4s_v3",
			"userDataSecret": map[string]any{"name": userDataSecretName},
		}
	default: // vsphere
		template := spec.VSphereTemplate(b.OSVersion)
		if m.CustomImage != "" {
			template = m.CustomImage
		}
		return map[string]any{
			"apiVersion": api, "kind": "VSphereMachineProviderSpec",
			"template": template,
			"workspace": map[string]any{
				"server": "vcenter.example.com", "datacenter": "dc1", "datastore": "datastore1",
				"folder": "/dc1/vm/" + c.Name, "resourcePool": "/dc1/host/cluster1/Resources",
			},
			"numCPUs": 4, "memoryMiB": 16384, "diskGiB": 120,
			"network":        map[string]any{"devices": []any{map[string]any{"networkName": "VM Network"}}},
			"userDataSecret": map[string]any{"name": userDataSecretName},
		}
	}
}

func machineSet(c *spec.Cluster, m *spec.MachineSet, install string) map[string]any {
	labels := map[string]any{fm.LabelCluster: c.Name}
	for k, v := range m.Labels {
		labels[k] = v
	}
	// The OS stream label is the MachineSet's own (machine-config-operator
	// pkg/controller/bootimage/ms_helpers.go reads machineSet.GetLabels()).
	if m.OSStream != "" {
		labels[fm.LabelOSStream] = m.OSStream
	}
	md := map[string]any{
		"name": m.Name, "namespace": fm.NamespaceMachineAPI, "uid": uidFor(c.Name, "machineset", m.Name),
		"labels": labels, "generation": 1, "creationTimestamp": "2024-06-01T00:00:00Z",
	}
	if m.Arch != "" {
		md["annotations"] = map[string]any{fm.AnnotationCapacityLabels: fm.LabelArch + "=" + m.Arch}
	}
	if len(m.OwnerReferences) > 0 {
		var refs []any
		for _, o := range m.OwnerReferences {
			refs = append(refs, map[string]any{"apiVersion": o.APIVersion, "kind": o.Kind, "name": o.Name, "uid": o.UID})
		}
		md["ownerReferences"] = refs
	}
	tmplLabels := map[string]any{
		fm.LabelCluster: c.Name, fm.LabelMachineSet: m.Name,
		"machine.openshift.io/cluster-api-machine-role": "worker",
		"machine.openshift.io/cluster-api-machine-type": "worker",
	}
	if m.Windows {
		tmplLabels[fm.LabelOSID] = "Windows"
	}
	return map[string]any{
		"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
		"metadata": md,
		"spec": map[string]any{
			"replicas":     m.Replicas,
			"deletePolicy": "Newest",
			"selector":     map[string]any{"matchLabels": map[string]any{fm.LabelCluster: c.Name, fm.LabelMachineSet: m.Name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": tmplLabels},
				"spec":     map[string]any{"providerSpec": map[string]any{"value": providerSpec(c, m, install)}},
			},
		},
		"status": map[string]any{"replicas": 0, "readyReplicas": 0, "availableReplicas": 0, "fullyLabeledReplicas": 0, "observedGeneration": 1},
	}
}

// platformOfKind maps a providerSpec kind to a platform.
func platformOfKind(kind string) string {
	switch kind {
	case "AWSMachineProviderConfig":
		return spec.PlatformAWS
	case "GCPMachineProviderSpec":
		return spec.PlatformGCP
	case "AzureMachineProviderSpec":
		return spec.PlatformAzure
	case "VSphereMachineProviderSpec":
		return spec.PlatformVSphere
	}
	return ""
}

// imageOf reads the boot image out of a providerSpec value: the AMI ID, the
// GCP boot disk image, the Azure resource ID or "publisher:offer:sku:version",
// or the vSphere template.
func imageOf(value map[string]any) (platform, image string) {
	kind, _, _ := unstructured.NestedString(value, "kind")
	platform = platformOfKind(kind)
	switch platform {
	case spec.PlatformAWS:
		image, _, _ = unstructured.NestedString(value, "ami", "id")
	case spec.PlatformGCP:
		disks, _, _ := unstructured.NestedSlice(value, "disks")
		for _, d := range disks {
			if dm, ok := d.(map[string]any); ok {
				if boot, _ := dm["boot"].(bool); boot {
					image, _ = dm["image"].(string)
				}
			}
		}
	case spec.PlatformAzure:
		img, _, _ := unstructured.NestedStringMap(value, "image")
		if img["resourceID"] != "" {
			image = img["resourceID"]
		} else if img["publisher"] != "" {
			image = strings.Join([]string{img["publisher"], img["offer"], img["sku"], img["version"]}, ":")
		}
	case spec.PlatformVSphere:
		image, _, _ = unstructured.NestedString(value, "template")
	}
	return platform, image
}

// knownImages is every official image of the cluster's releases plus the
// custom images its spec declares: the images fleetsim can boot.
func knownImages(c *spec.Cluster) map[string]bool {
	out := officialImages(c)
	for _, m := range c.MachineSets {
		if m.CustomImage != "" {
			out[m.CustomImage] = true
		}
	}
	return out
}

// officialImages is every image of the cluster's releases (Red Hat's).
func officialImages(c *spec.Cluster) map[string]bool {
	out := map[string]bool{}
	for _, b := range c.BootImages {
		out[spec.VSphereTemplate(b.OSVersion)] = true
		for _, img := range b.Images {
			for _, ami := range img.AWS {
				out[ami] = true
			}
			if img.GCP != nil {
				out["projects/"+img.GCP.Project+"/global/images/"+img.GCP.Name] = true
			}
			if img.Azure != nil {
				for _, a := range []spec.AzureImage{img.Azure.Gen1, img.Azure.Gen2} {
					out[strings.Join([]string{a.Publisher, a.Offer, a.SKU, a.Version}, ":")] = true
				}
			}
		}
	}
	return out
}
