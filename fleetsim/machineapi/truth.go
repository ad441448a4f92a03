package machineapi

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fm "github.com/fleetsaga/fleetsaga/fleet/machineapi"
)

// Truth is GET /truth/machineapi: the simulated clusters' real state.
type Truth struct {
	Clusters map[string]ClusterTruth `json:"clusters"`
}

// ClusterTruth is one cluster.
type ClusterTruth struct {
	Release string `json:"release"`
	// UpgradeState is ClusterVersion status.history[0].state.
	UpgradeState string `json:"upgradeState"`
	// GoldenRelease is the release the coreos-bootimages record is stamped for.
	GoldenRelease string `json:"goldenRelease"`
	// BootImage is MachineConfiguration status.bootImageSkewEnforcementStatus.
	BootImage BootImageRecord `json:"bootImage"`
	// Upgradeable is the MachineConfiguration Upgradeable condition.
	Upgradeable Condition                  `json:"upgradeable"`
	MachineSets map[string]MachineSetTruth `json:"machineSets"`
	// Events is a short log of what happened (newest last).
	Events []string `json:"events,omitempty"`
	// MCO is the boot image controller's work (when the spec turns it on).
	MCO *MCOTruth `json:"mco,omitempty"`
}

// MCOTruth is what the MCO's boot image controller did.
type MCOTruth struct {
	// Patches counts its patches per MachineSet.
	Patches map[string]int `json:"patches"`
	// Refused holds its hot-loop refusal per MachineSet.
	Refused map[string]string `json:"refused,omitempty"`
}

// BootImageRecord is the recorded boot image version.
type BootImageRecord struct {
	Mode         string `json:"mode"`
	OCPVersion   string `json:"ocpVersion"`
	RHCOSVersion string `json:"rhcosVersion"`
}

// Condition is a status condition.
type Condition struct {
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// MachineSetTruth is one MachineSet.
type MachineSetTruth struct {
	Platform        string `json:"platform"`
	Arch            string `json:"arch"`
	Image           string `json:"image"`
	ResourceVersion string `json:"resourceVersion"`
	Replicas        int64  `json:"replicas"`
	MachineSetStats
	Machines []MachineTruth `json:"machines"`
	Joined   int            `json:"joined"`
}

// MachineTruth is one Machine.
type MachineTruth struct {
	Name   string `json:"name"`
	Image  string `json:"image"`
	Phase  string `json:"phase"`
	Joined bool   `json:"joined"`
}

// Truth implements domain.Domain.
func (s *Sim) Truth() any { return s.Snapshot() }

// Snapshot returns the truth as a typed value.
func (s *Sim) Snapshot() Truth {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Truth{Clusters: map[string]ClusterTruth{}}
	for _, name := range s.order {
		c := s.clusters[name]
		ct := ClusterTruth{Release: c.spec.Release, MachineSets: map[string]MachineSetTruth{}}
		ct.Events = append([]string(nil), c.events...)
		if c.spec.MCOOn() {
			mt := &MCOTruth{Patches: map[string]int{}, Refused: map[string]string{}}
			for k, v := range c.mco.Patches {
				mt.Patches[k] = v
			}
			for k, v := range c.mco.Refused {
				mt.Refused[k] = v
			}
			ct.MCO = mt
		}
		if cv := c.get(gvKey(fm.GVRClusterVersions), "", fm.ClusterVersionName); cv != nil {
			hist, _, _ := unstructured.NestedSlice(cv.Object, "status", "history")
			if len(hist) > 0 {
				ct.UpgradeState, _, _ = unstructured.NestedString(asMap(hist[0]), "state")
			}
		}
		if cm := c.get(gvKey(fm.GVRConfigMaps), fm.NamespaceMCO, fm.GoldenConfigMap); cm != nil {
			ct.GoldenRelease, _, _ = unstructured.NestedString(cm.Object, "data", fm.KeyReleaseVersion)
		}
		if mc := c.get(gvKey(fm.GVRMachineConfigurations), "", fm.MachineConfigurationName); mc != nil {
			st, _, _ := unstructured.NestedMap(mc.Object, "status", "bootImageSkewEnforcementStatus")
			ct.BootImage.Mode, _, _ = unstructured.NestedString(st, "mode")
			sub := "automatic"
			if ct.BootImage.Mode == "Manual" {
				sub = "manual"
			}
			ct.BootImage.OCPVersion, _, _ = unstructured.NestedString(st, sub, "ocpVersion")
			ct.BootImage.RHCOSVersion, _, _ = unstructured.NestedString(st, sub, "rhcosVersion")
			conds, _, _ := unstructured.NestedSlice(mc.Object, "status", "conditions")
			for _, cd := range conds {
				m := asMap(cd)
				if m["type"] == "Upgradeable" {
					ct.Upgradeable.Status, _ = m["status"].(string)
					ct.Upgradeable.Reason, _ = m["reason"].(string)
					ct.Upgradeable.Message, _ = m["message"].(string)
				}
			}
		}
		for _, ms := range c.list(gvKey(fm.GVRMachineSets)) {
			value, _, _ := unstructured.NestedMap(ms.Object, "spec", "template", "spec", "providerSpec", "value")
			platform, image := imageOf(value)
			replicas, _, _ := unstructured.NestedInt64(ms.Object, "spec", "replicas")
			mt := MachineSetTruth{
				Platform: platform, Arch: c.machineSetArch(ms), Image: image,
				ResourceVersion: ms.GetResourceVersion(), Replicas: replicas,
				Machines: []MachineTruth{},
			}
			if st := c.stats[ms.GetName()]; st != nil {
				mt.MachineSetStats = *st
			}
			for _, m := range c.machinesOf(ms.GetName()) {
				mv, _, _ := unstructured.NestedMap(m.Object, "spec", "providerSpec", "value")
				_, img := imageOf(mv)
				phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
				joined := phase == PhaseRunning
				if joined {
					mt.Joined++
				}
				mt.Machines = append(mt.Machines, MachineTruth{Name: m.GetName(), Image: img, Phase: phase, Joined: joined})
			}
			ct.MachineSets[ms.GetName()] = mt
		}
		out.Clusters[name] = ct
	}
	return out
}

// archAnnotation reads kubernetes.io/arch out of the cluster-autoscaler
// capacity labels annotation ("kubernetes.io/arch=arm64,foo=bar").
func archAnnotation(v string) string {
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if ok && k == fm.LabelArch {
			return strings.TrimSpace(val)
		}
	}
	return ""
}
