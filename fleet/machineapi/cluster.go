package machineapi

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ClusterStatus is what the bump needs to know about the cluster.
type ClusterStatus struct {
	// DesiredVersion is ClusterVersion status.desired.version.
	DesiredVersion string `json:"desiredVersion"`
	// LatestState is status.history[0].state (Completed | Partial).
	LatestState string `json:"latestState"`
	// MultiArch: the payload is multi-arch (status.desired.architecture Multi).
	MultiArch bool `json:"multiArch"`
	// Platform from Infrastructure status.platformStatus.type, lower-cased
	// to the MachineSet platform names (aws, gcp, azure, vsphere).
	Platform string `json:"platform"`
	// ControlPlaneArch is the kubernetes.io/arch of the control plane nodes.
	ControlPlaneArch string `json:"controlPlaneArch"`
}

// Upgrading: the latest history entry is not Completed (installing or
// upgrading).
func (s ClusterStatus) Upgrading() bool { return s.LatestState != "Completed" }

// ClusterStatus reads ClusterVersion, Infrastructure and the control plane
// nodes.
func (c *Client) ClusterStatus(ctx context.Context) (ClusterStatus, error) {
	var st ClusterStatus
	cv, err := c.get(ctx, GVRClusterVersions, "", ClusterVersionName)
	if err != nil {
		return st, err
	}
	st.DesiredVersion, _, _ = unstructured.NestedString(cv.Object, "status", "desired", "version")
	arch, _, _ := unstructured.NestedString(cv.Object, "status", "desired", "architecture")
	st.MultiArch = arch == "Multi"
	hist, _, _ := unstructured.NestedSlice(cv.Object, "status", "history")
	if len(hist) > 0 {
		if h, ok := hist[0].(map[string]any); ok {
			st.LatestState, _ = h["state"].(string)
		}
	}
	if st.DesiredVersion == "" {
		return st, malformed("clusterversion %s has no status.desired.version", ClusterVersionName)
	}
	infra, err := c.get(ctx, GVRInfrastructures, "", InfrastructureName)
	if err != nil {
		return st, err
	}
	pt, _, _ := unstructured.NestedString(infra.Object, "status", "platformStatus", "type")
	st.Platform = strings.ToLower(pt)
	nodes, err := c.res(GVRNodes, "").List(ctx, metav1.ListOptions{LabelSelector: LabelControlPlane})
	if err != nil {
		return st, fmt.Errorf("cluster %s: list control plane nodes: %w", c.Cluster, err)
	}
	for _, n := range nodes.Items {
		if a := n.GetLabels()[LabelArch]; a != "" {
			st.ControlPlaneArch = a
			break
		}
	}
	return st, nil
}

// Skew enforcement modes (MachineConfiguration
// spec.bootImageSkewEnforcement.mode).
const (
	SkewAutomatic = "Automatic"
	SkewManual    = "Manual"
	SkewNone      = "None"
)

// BootImageRecord is MachineConfiguration "cluster"
// status.bootImageSkewEnforcementStatus plus the Upgradeable condition.
type BootImageRecord struct {
	Mode         string `json:"mode"`
	OCPVersion   string `json:"ocpVersion"`
	RHCOSVersion string `json:"rhcosVersion"`
	// Upgradeable condition ("" status when absent).
	UpgradeableStatus  string `json:"upgradeableStatus"`
	UpgradeableReason  string `json:"upgradeableReason,omitempty"`
	UpgradeableMessage string `json:"upgradeableMessage,omitempty"`
	ResourceVersion    string `json:"resourceVersion"`
}

// BootImageRecord reads the cluster's boot image record.
func (c *Client) BootImageRecord(ctx context.Context) (BootImageRecord, error) {
	var r BootImageRecord
	u, err := c.get(ctx, GVRMachineConfigurations, "", MachineConfigurationName)
	if err != nil {
		return r, err
	}
	r.ResourceVersion = u.GetResourceVersion()
	st, _, _ := unstructured.NestedMap(u.Object, "status", "bootImageSkewEnforcementStatus")
	r.Mode, _, _ = unstructured.NestedString(st, "mode")
	sub := "automatic"
	if r.Mode == SkewManual {
		sub = "manual"
	}
	r.OCPVersion, _, _ = unstructured.NestedString(st, sub, "ocpVersion")
	r.RHCOSVersion, _, _ = unstructured.NestedString(st, sub, "rhcosVersion")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, cd := range conds {
		m, _ := cd.(map[string]any)
		if m["type"] == "Upgradeable" {
			r.UpgradeableStatus, _ = m["status"].(string)
			r.UpgradeableReason, _ = m["reason"].(string)
			r.UpgradeableMessage, _ = m["message"].(string)
		}
	}
	return r, nil
}
