package machineapi

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Namespaces and names an OpenShift operator would recognise.
const (
	NamespaceMachineAPI = "openshift-machine-api"
	NamespaceMCO        = "openshift-machine-config-operator"
	// GoldenConfigMap is the golden boot image record (CoreOS stream JSON,
	// releaseVersion, MCOReleaseImageVersion), written by the MCO.
	GoldenConfigMap = "coreos-bootimages"
	// HistoryConfigMap (fleetsaga convention) holds the CoreOS streams of
	// earlier releases, one data key per release version. An image in any of
	// them, or in the golden record, is an official boot image; anything else
	// is custom.
	HistoryConfigMap = "coreos-bootimages-history"
	// MachineConfigurationName is the cluster-scoped MachineConfiguration
	// (operator.openshift.io/v1) whose status records the cluster's boot image
	// version (status.bootImageSkewEnforcementStatus) and the Upgradeable
	// condition set by skew enforcement.
	MachineConfigurationName = "cluster"
	ClusterVersionName       = "version"
	InfrastructureName       = "cluster"

	// Keys of the golden ConfigMap. The skew limit keys are a fleetsaga
	// addition: the release's oldest acceptable boot image.
	KeyStream                = "stream"
	KeyReleaseVersion        = "releaseVersion"
	KeyMCOReleaseImage       = "MCOReleaseImageVersion"
	KeySkewLimitOCPVersion   = "bootImageSkewLimitOCPVersion"
	KeySkewLimitRHCOSVersion = "bootImageSkewLimitRHCOSVersion"

	// Labels and annotations on MachineSets.
	AnnotationCapacityLabels = "capacity.cluster-autoscaler.kubernetes.io/labels"
	LabelOSID                = "machine.openshift.io/os-id"
	LabelOSStream            = "machineconfiguration.openshift.io/os-stream"
	LabelMachineSet          = "machine.openshift.io/cluster-api-machineset"
	LabelCluster             = "machine.openshift.io/cluster-api-cluster"
	LabelArch                = "kubernetes.io/arch"
	LabelControlPlane        = "node-role.kubernetes.io/control-plane"
	LabelWorker              = "node-role.kubernetes.io/worker"
)

// GVRs of the served resources.
var (
	GVRConfigMaps            = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	GVRNodes                 = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	GVRMachineSets           = schema.GroupVersionResource{Group: "machine.openshift.io", Version: "v1beta1", Resource: "machinesets"}
	GVRMachines              = schema.GroupVersionResource{Group: "machine.openshift.io", Version: "v1beta1", Resource: "machines"}
	GVRClusterVersions       = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}
	GVRInfrastructures       = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "infrastructures"}
	GVRMachineConfigurations = schema.GroupVersionResource{Group: "operator.openshift.io", Version: "v1", Resource: "machineconfigurations"}
)

// resource describes one served resource type.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	// status: has a status subresource (main-resource patches keep status,
	// status patches keep everything else).
	status bool
	// patchable: PATCH is allowed (main resource and, with status, /status).
	patchable bool
}

var resources = []resource{
	{gvr: GVRConfigMaps, kind: "ConfigMap", namespaced: true, patchable: true},
	{gvr: GVRNodes, kind: "Node", status: true},
	{gvr: GVRMachineSets, kind: "MachineSet", namespaced: true, status: true, patchable: true},
	{gvr: GVRMachines, kind: "Machine", namespaced: true, status: true},
	{gvr: GVRClusterVersions, kind: "ClusterVersion", status: true, patchable: true},
	{gvr: GVRInfrastructures, kind: "Infrastructure", status: true},
	{gvr: GVRMachineConfigurations, kind: "MachineConfiguration", status: true, patchable: true},
}

func findResource(group, version, name string) (resource, bool) {
	for _, r := range resources {
		if r.gvr.Group == group && r.gvr.Version == version && r.gvr.Resource == name {
			return r, true
		}
	}
	return resource{}, false
}

func gvKey(gvr schema.GroupVersionResource) string { return gvr.String() }

func apiVersion(gvr schema.GroupVersionResource) string {
	return gvr.GroupVersion().String()
}
