package machineapi

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fm "github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
)

// Machine phases (machine.openshift.io): a new machine is Provisioning, then
// Provisioned once its instance exists, Running once its node joined, or
// Failed when the instance cannot be created (unknown image).
const (
	PhaseProvisioning = "Provisioning"
	PhaseProvisioned  = "Provisioned"
	PhaseRunning      = "Running"
	PhaseFailed       = "Failed"
)

// newMachine creates a Machine for ms with the template's providerSpec at
// this moment. Caller holds s.mu.
func (c *cluster) newMachine(ms *unstructured.Unstructured) *unstructured.Unstructured {
	c.seq++
	name := fmt.Sprintf("%s-%05d", ms.GetName(), c.seq)
	value, _, _ := unstructured.NestedMap(ms.Object, "spec", "template", "spec", "providerSpec", "value")
	labels, _, _ := unstructured.NestedStringMap(ms.Object, "spec", "template", "metadata", "labels")
	lm := map[string]any{}
	for k, v := range labels {
		lm[k] = v
	}
	lm[fm.LabelMachineSet] = ms.GetName()
	lm[fm.LabelCluster] = c.name
	m := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
		"metadata": map[string]any{
			"name": name, "namespace": fm.NamespaceMachineAPI, "uid": uidFor(c.name, "machine", name),
			"labels":            lm,
			"creationTimestamp": time.Now().UTC().Format(time.RFC3339),
			"ownerReferences": []any{map[string]any{
				"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
				"name": ms.GetName(), "uid": string(ms.GetUID()), "controller": true, "blockOwnerDeletion": true,
			}},
		},
		"spec":   map[string]any{"providerSpec": map[string]any{"value": value}},
		"status": map[string]any{"phase": PhaseProvisioning},
	}}
	c.put(gvKey(fm.GVRMachines), m)
	return m
}

// machineArch is the arch a machine of ms runs (annotation, else control plane).
func (c *cluster) machineSetArch(ms *unstructured.Unstructured) string {
	if a := archAnnotation(ms.GetAnnotations()[fm.AnnotationCapacityLabels]); a != "" {
		return a
	}
	if c.spec.ControlPlaneArch != "" {
		return c.spec.ControlPlaneArch
	}
	return "amd64"
}

// join finishes a machine's boot: it joins as a node (Running) when its
// image is bootable and no machine_boot_failure fires; else it stays
// Provisioned (boot failure) or Failed (unknown image). Caller holds s.mu.
func (c *cluster) join(m *unstructured.Unstructured, reg *faults.Registry) {
	msName := m.GetLabels()[fm.LabelMachineSet]
	value, _, _ := unstructured.NestedMap(m.Object, "spec", "providerSpec", "value")
	_, image := imageOf(value)
	switch {
	case !c.known[image]:
		_ = unstructured.SetNestedField(m.Object, PhaseFailed, "status", "phase")
		_ = unstructured.SetNestedField(m.Object, "InvalidConfiguration", "status", "errorReason")
		_ = unstructured.SetNestedField(m.Object, fmt.Sprintf("boot image %q not found", image), "status", "errorMessage")
		c.event(fmt.Sprintf("machine %s: image %q not found", m.GetName(), image))
	case firedBootFailure(reg, c.name, msName):
		_ = unstructured.SetNestedField(m.Object, PhaseProvisioned, "status", "phase")
		c.event(fmt.Sprintf("machine %s: instance up but never joined (machine_boot_failure)", m.GetName()))
	default:
		ms := c.get(gvKey(fm.GVRMachineSets), fm.NamespaceMachineAPI, msName)
		arch := "amd64"
		if ms != nil {
			arch = c.machineSetArch(ms)
		}
		n, err := normalize(node(c.spec, m.GetName(), arch, false, m.GetName()))
		if err == nil {
			c.put(gvKey(fm.GVRNodes), n)
		}
		_ = unstructured.SetNestedField(m.Object, PhaseRunning, "status", "phase")
		_ = unstructured.SetNestedMap(m.Object, map[string]any{"kind": "Node", "name": m.GetName()}, "status", "nodeRef")
	}
	c.bump(m)
}

func firedBootFailure(reg *faults.Registry, cluster, ms string) bool {
	if reg == nil {
		return false
	}
	_, ok := reg.Fire(faults.MachineBootFailure, faultTarget(cluster, ms))
	return ok
}

// machinesOf lists ms's machines, oldest first.
func (c *cluster) machinesOf(ms string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, m := range c.list(gvKey(fm.GVRMachines)) {
		if m.GetLabels()[fm.LabelMachineSet] == ms {
			out = append(out, m)
		}
	}
	// names carry a global sequence number, so name order is creation order.
	return out
}

// updateMachineSetStatus recomputes status replica counts; it bumps the
// resourceVersion when they changed. Caller holds s.mu.
func (c *cluster) updateMachineSetStatus(ms *unstructured.Unstructured) {
	machines := c.machinesOf(ms.GetName())
	ready := int64(0)
	for _, m := range machines {
		if p, _, _ := unstructured.NestedString(m.Object, "status", "phase"); p == PhaseRunning {
			ready++
		}
	}
	want := map[string]any{
		"replicas": int64(len(machines)), "fullyLabeledReplicas": int64(len(machines)),
		"readyReplicas": ready, "availableReplicas": ready,
		"observedGeneration": ms.GetGeneration(),
	}
	old, _, _ := unstructured.NestedMap(ms.Object, "status")
	same := len(old) == len(want)
	for k, v := range want {
		if old[k] != v {
			same = false
		}
	}
	if same {
		return
	}
	_ = unstructured.SetNestedMap(ms.Object, want, "status")
	c.bump(ms)
}

// reconcileReplicas creates or deletes machines to match spec.replicas;
// new machines finish booting after MachineBootTime. Caller holds s.mu.
func (s *Sim) reconcileReplicas(c *cluster, ms *unstructured.Unstructured) {
	want, _, _ := unstructured.NestedInt64(ms.Object, "spec", "replicas")
	machines := c.machinesOf(ms.GetName())
	for i := int64(len(machines)); i < want; i++ {
		m := c.newMachine(ms)
		c.event(fmt.Sprintf("machineset %s: created machine %s", ms.GetName(), m.GetName()))
		name := m.GetName()
		s.after(s.env.Spec.Timings.MachineBootTime.Duration, func() {
			cur := c.get(gvKey(fm.GVRMachines), fm.NamespaceMachineAPI, name)
			if cur == nil {
				return // deleted before it booted
			}
			c.join(cur, s.env.Faults)
			if ms := c.get(gvKey(fm.GVRMachineSets), fm.NamespaceMachineAPI, cur.GetLabels()[fm.LabelMachineSet]); ms != nil {
				c.updateMachineSetStatus(ms)
			}
		})
	}
	for i := len(machines) - 1; i >= 0 && int64(i) >= want; i-- {
		m := machines[i]
		c.del(gvKey(fm.GVRMachines), fm.NamespaceMachineAPI, m.GetName())
		c.del(gvKey(fm.GVRNodes), "", m.GetName())
		c.event(fmt.Sprintf("machineset %s: deleted machine %s", ms.GetName(), m.GetName()))
	}
	c.updateMachineSetStatus(ms)
}
