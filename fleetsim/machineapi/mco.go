package machineapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fm "github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// The machine-config operator's boot image controller, when the cluster's
// spec turns it on (spec.Cluster.MCO; openshift/machine-config-operator
// pkg/controller/bootimage, ms_helpers.go): it reconciles every MachineSet
// opted in by MachineConfiguration status.managedBootImagesStatus, skipping
// those with an owner reference, a non-default OS stream label or the
// Windows OS label, and patches its providerSpec's boot image to the golden
// record's (coreos-bootimages). It reacts to MachineSet changes, so a
// MachineSet someone else changes is patched back. Its hot-loop guard
// refuses a fourth consecutive patch to the same providerSpec
// (HotLoopLimit = 3) and degrades (condition BootImageUpdateDegraded).

const (
	// mcoReactTime is how soon after a change the controller reconciles
	// (informer event to work queue; real time, scaled).
	mcoReactTime = 2 * time.Second
	// mcoHotLoopLimit is the MCO's HotLoopLimit.
	mcoHotLoopLimit = 3
	// mcoDegraded is the MachineConfiguration condition the guard sets.
	mcoDegraded = "BootImageUpdateDegraded"
	// mcoSupportedStream is the OS stream label value the MCO reconciles.
	mcoSupportedStream = "rhel-9"
)

// mcoState is the controller's memory of one cluster.
type mcoState struct {
	pending bool
	// hot is the last patched providerSpec per MachineSet and how many
	// consecutive patches produced it.
	hot map[string]hotLoop
	// Patches counts the controller's patches per MachineSet.
	Patches map[string]int `json:"patches"`
	// Refused is the hot-loop refusal per MachineSet, if any.
	Refused map[string]string `json:"refused,omitempty"`
}

type hotLoop struct {
	value string
	count int
}

// mcoSoon schedules a reconcile of c. Caller holds s.mu (or constructs).
func (s *Sim) mcoSoon(c *cluster) {
	if !c.spec.MCOOn() || c.mco.pending {
		return
	}
	c.mco.pending = true
	s.after(mcoReactTime, func() {
		c.mco.pending = false
		s.mcoReconcile(c)
	})
}

// mcoReconcile is one pass of the boot image controller over c's
// MachineSets. Called with s.mu held.
func (s *Sim) mcoReconcile(c *cluster) {
	mc := c.get(gvKey(fm.GVRMachineConfigurations), "", fm.MachineConfigurationName)
	cm := c.get(gvKey(fm.GVRConfigMaps), fm.NamespaceMCO, fm.GoldenConfigMap)
	if mc == nil || cm == nil {
		return
	}
	golden, _, _ := unstructured.NestedString(cm.Object, "data", fm.KeyReleaseVersion)
	for _, ms := range c.list(gvKey(fm.GVRMachineSets)) {
		if !mcoEnrolled(mc, ms) {
			delete(c.mco.hot, ms.GetName())
			continue
		}
		next, ok := c.goldenMachineSet(ms, golden)
		if !ok {
			continue
		}
		value, _ := json.Marshal(next.Object["spec"])
		h := c.mco.hot[ms.GetName()]
		if h.value == string(value) && h.count >= mcoHotLoopLimit {
			msg := fmt.Sprintf("refusing to reconcile machineset %s, hot loop detected. Please opt-out of boot image updates, adjust your machine provisioning workflow to prevent hot loops and opt back in to resume boot image updates", ms.GetName())
			if c.mco.Refused[ms.GetName()] == "" {
				c.event("mco: " + msg)
			}
			c.mco.Refused[ms.GetName()] = msg
			c.setMCODegraded(msg)
			continue
		}
		old := ms
		next.SetGeneration(ms.GetGeneration() + 1)
		c.bump(next)
		c.put(gvKey(fm.GVRMachineSets), next)
		if h.value == string(value) {
			h.count++
		} else {
			h = hotLoop{value: string(value), count: 1}
		}
		c.mco.hot[ms.GetName()] = h
		c.mco.Patches[ms.GetName()]++
		_, from := imageOf(providerSpecValue(old))
		_, to := imageOf(providerSpecValue(next))
		c.event(fmt.Sprintf("mco: machineset %s: image %s -> %s (golden %s)", ms.GetName(), from, to, golden))
	}
}

// mcoEnrolled: opted in by managedBootImagesStatus and not skipped.
func mcoEnrolled(mc, ms *unstructured.Unstructured) bool {
	managers, _, _ := unstructured.NestedSlice(mc.Object, "status", "managedBootImagesStatus", "machineManagers")
	enrolled := false
	for _, m := range managers {
		mm := asMap(m)
		if mm["resource"] != "machinesets" || mm["apiGroup"] != fm.GVRMachineSets.Group {
			continue
		}
		switch mode, _, _ := unstructured.NestedString(mm, "selection", "mode"); mode {
		case "All":
			enrolled = true
		case "Partial":
			want, _, _ := unstructured.NestedStringMap(mm, "selection", "partial", "machineResourceSelector", "matchLabels")
			have := ms.GetLabels()
			enrolled = true
			for k, v := range want {
				if have[k] != v {
					enrolled = false
				}
			}
		}
	}
	if !enrolled || len(ms.GetOwnerReferences()) > 0 {
		return false
	}
	// The stream label is the MachineSet's own (machine-config-operator
	// pkg/controller/bootimage/ms_helpers.go, syncMAPIMachineSet).
	if st, ok := ms.GetLabels()[fm.LabelOSStream]; ok && st != mcoSupportedStream {
		return false
	}
	tmpl, _, _ := unstructured.NestedStringMap(ms.Object, "spec", "template", "metadata", "labels")
	return tmpl[fm.LabelOSID] != "Windows"
}

// goldenMachineSet is ms with its boot image set to the golden release's
// (ok false when nothing changes or fleetsim cannot tell the golden image:
// a MachineSet whose spec gives a whole providerSpec).
func (c *cluster) goldenMachineSet(ms *unstructured.Unstructured, golden string) (*unstructured.Unstructured, bool) {
	var m *spec.MachineSet
	for i := range c.spec.MachineSets {
		if c.spec.MachineSets[i].Name == ms.GetName() {
			m = &c.spec.MachineSets[i]
		}
	}
	if m == nil || m.ProviderSpec != nil {
		return nil, false
	}
	g := *m
	g.BootRelease, g.CustomImage = golden, ""
	// Through JSON: providerSpec builds Go ints, which unstructured's
	// helpers cannot copy (they panic).
	want := jsonValue(providerSpec(c.spec, &g, c.install))
	cur := providerSpecValue(ms)
	if p, img := imageOf(cur); (p == spec.PlatformAWS || p == spec.PlatformGCP) && !officialImages(c.spec)[img] {
		// A custom image is left alone: on AWS an AMI of an unknown owner
		// (machine-config-operator pkg/controller/bootimage/aws_helpers.go,
		// detectAMIKind), on GCP one outside projects/rhcos-cloud
		// (the MCO's pkg/controller/bootimage/platform_helpers.go, reconcileGCPProviderSpec).
		return nil, false
	}
	next := ms.DeepCopy()
	value := providerSpecValue(next)
	switch p, _ := imageOf(cur); p {
	case spec.PlatformAWS:
		value["ami"] = want["ami"]
	case spec.PlatformAzure:
		value["image"] = want["image"]
	case spec.PlatformVSphere:
		value["template"] = want["template"]
	case spec.PlatformGCP:
		_, img := imageOf(want)
		disks, _, _ := unstructured.NestedSlice(value, "disks")
		for _, d := range disks {
			if dm, ok := d.(map[string]any); ok && dm["boot"] == true {
				dm["image"] = img
			}
		}
		value["disks"] = disks
	default:
		return nil, false
	}
	if reflect.DeepEqual(cur, value) {
		return nil, false
	}
	_ = unstructured.SetNestedMap(next.Object, value, "spec", "template", "spec", "providerSpec", "value")
	return next, true
}

func providerSpecValue(ms *unstructured.Unstructured) map[string]any {
	v, _, _ := unstructured.NestedMap(ms.Object, "spec", "template", "spec", "providerSpec", "value")
	return v
}

// setMCODegraded sets MachineConfiguration's BootImageUpdateDegraded condition.
func (c *cluster) setMCODegraded(msg string) {
	mc := c.get(gvKey(fm.GVRMachineConfigurations), "", fm.MachineConfigurationName).DeepCopy()
	conds, _, _ := unstructured.NestedSlice(mc.Object, "status", "conditions")
	cond := map[string]any{"type": mcoDegraded, "status": "True", "reason": "BootImageUpdateDegraded", "message": msg,
		"lastTransitionTime": "2025-01-01T00:00:00Z"}
	replaced := false
	for i, cd := range conds {
		if asMap(cd)["type"] == mcoDegraded {
			conds[i], replaced = cond, true
		}
	}
	if !replaced {
		conds = append(conds, cond)
	}
	_ = unstructured.SetNestedSlice(mc.Object, conds, "status", "conditions")
	c.bump(mc)
	c.put(gvKey(fm.GVRMachineConfigurations), mc)
}

// jsonValue is v as JSON decodes it (numbers int64 or float64, as
// unstructured expects).
func jsonValue(v map[string]any) map[string]any {
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return v
	}
	return out
}
