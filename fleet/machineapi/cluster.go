package machineapi

import (
	"context"
	"fmt"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// machineConfiguration reads MachineConfiguration "cluster".
func (c *Client) machineConfiguration(ctx context.Context) (*operatorv1.MachineConfiguration, error) {
	return getTyped[operatorv1.MachineConfiguration](ctx, c, GVRMachineConfigurations, "machineconfiguration", MachineConfigurationName)
}

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
	cv, err := getTyped[configv1.ClusterVersion](ctx, c, GVRClusterVersions, "clusterversion", ClusterVersionName)
	if err != nil {
		return st, err
	}
	st.DesiredVersion = cv.Status.Desired.Version
	st.MultiArch = cv.Status.Desired.Architecture == configv1.ClusterVersionArchitectureMulti
	if len(cv.Status.History) > 0 {
		st.LatestState = string(cv.Status.History[0].State)
	}
	if st.DesiredVersion == "" {
		return st, malformed("clusterversion %s has no status.desired.version", ClusterVersionName)
	}
	infra, err := getTyped[configv1.Infrastructure](ctx, c, GVRInfrastructures, "infrastructure", InfrastructureName)
	if err != nil {
		return st, err
	}
	if ps := infra.Status.PlatformStatus; ps != nil {
		st.Platform = strings.ToLower(string(ps.Type))
	}
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
	mc, err := c.machineConfiguration(ctx)
	if err != nil {
		return r, err
	}
	r.ResourceVersion = mc.ResourceVersion
	st := mc.Status.BootImageSkewEnforcementStatus
	r.Mode = string(st.Mode)
	r.OCPVersion, r.RHCOSVersion = st.Automatic.OCPVersion, st.Automatic.RHCOSVersion
	if r.Mode == SkewManual {
		r.OCPVersion, r.RHCOSVersion = st.Manual.OCPVersion, st.Manual.RHCOSVersion
	}
	for _, cd := range mc.Status.Conditions {
		if cd.Type == "Upgradeable" {
			r.UpgradeableStatus, r.UpgradeableReason, r.UpgradeableMessage = string(cd.Status), cd.Reason, cd.Message
		}
	}
	return r, nil
}
