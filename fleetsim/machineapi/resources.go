package machineapi

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	fm "github.com/fleetsaga/fleetsaga/fleet/machineapi"
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
	{gvr: fm.GVRConfigMaps, kind: "ConfigMap", namespaced: true, patchable: true},
	{gvr: fm.GVRSecrets, kind: "Secret", namespaced: true},
	{gvr: fm.GVRNodes, kind: "Node", status: true},
	{gvr: fm.GVRMachineSets, kind: "MachineSet", namespaced: true, status: true, patchable: true},
	{gvr: fm.GVRMachines, kind: "Machine", namespaced: true, status: true},
	{gvr: fm.GVRClusterVersions, kind: "ClusterVersion", status: true, patchable: true},
	{gvr: fm.GVRInfrastructures, kind: "Infrastructure", status: true},
	{gvr: fm.GVRMachineConfigurations, kind: "MachineConfiguration", status: true, patchable: true},
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
