package chaos

import (
	"fmt"
	"math/rand"
	"strings"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Aiming: a fault only proves something when it fires.
// An API fault is armed for the stage running, on an API that stage uses;
// one that has not fired when its stage ends is taken back and armed again
// in the stage running then (reaim); and no attack on a child takes away
// a device fault's only chance to fire (faultScope).

// apiFaultKinds are the API-level faults the run arms while it runs, each
// at least once. (A lost reset reply is armed before the run, on an SP
// whose update is sure to reset it: plan.go.)
var apiFaultKinds = []faults.Kind{faults.MGSDown, faults.Latency, faults.ErrorRate}

// stageAPIs are the fleetsim APIs (target "api/<name>") a stage's updates
// call.
func stageAPIs(stage string) []string {
	switch {
	case strings.Contains(stage, "sp-firmware"), strings.Contains(stage, "host-flash"):
		return []string{"mgs/0", "mgs/1"}
	case strings.Contains(stage, "zone"):
		return []string{"sled-agent"}
	case strings.Contains(stage, "drift"):
		return []string{"cnapi", "sapi"}
	case strings.Contains(stage, "agent"):
		return []string{"cnapi", "sapi", "imgapi"}
	case strings.Contains(stage, "bootimage"):
		return []string{"kube"}
	}
	return nil
}

// canBite says whether an API fault of kind k armed during stage can fire
// there: mgs_down only while MGS is asked (the SP stages).
func canBite(k faults.Kind, stage string) bool {
	if k == faults.MGSDown {
		return (strings.Contains(stage, "sp-firmware") || strings.Contains(stage, "host-flash"))
	}
	return len(stageAPIs(stage)) > 0
}

// spOnly: a kind that can bite only while an SP stage runs.
func spOnly(k faults.Kind) bool { return k == faults.MGSDown }

// apiFault makes a fault of kind k aimed at stage. mgsIndex picks the MGS
// instance for mgs_down (a fresh worker asks mgs/0 first, so the first one
// goes there).
func apiFault(k faults.Kind, stage string, mgsIndex int, rng *rand.Rand) faults.Fault {
	apis := stageAPIs(stage)
	if len(apis) == 0 {
		apis = []string{"mgs/0", "sled-agent", "cnapi", "kube"}
	}
	api := apis[rng.Intn(len(apis))]
	switch k {
	case faults.MGSDown:
		return faults.Fault{Kind: faults.MGSDown, Target: fmt.Sprintf("mgs/%d", mgsIndex%2), Times: 10 + rng.Intn(40)}
	case faults.Latency:
		return faults.Fault{Kind: faults.Latency, Target: "api/" + api, Times: 20 + rng.Intn(80),
			Latency: fmt.Sprintf("%dms", 50+rng.Intn(250))}
	default:
		return faults.Fault{Kind: faults.ErrorRate, Target: "api/" + api, Times: 5 + rng.Intn(10),
			Rate: 0.05 + 0.2*rng.Float64()}
	}
}

// faultScope is the fault target (or target prefix, ending in "/") of
// the device faults that a child of kind k on target can make fire.
func faultScope(k workflows.Kind, target string) string {
	switch k {
	case workflows.KindBootImageBump:
		return "machineset/" + strings.TrimPrefix(target, "cluster/") + "/"
	case workflows.KindAgentInstall, workflows.KindAgentDrift:
		return "server/"
	}
	return target
}

// unfiredFaultOn: a fault still armed within scope has not fired yet.
func unfiredFaultOn(armed []faults.Fault, scope string) bool {
	for _, f := range armed {
		if f.Fired > 0 {
			continue
		}
		if f.Target == scope || (strings.HasSuffix(scope, "/") && strings.HasPrefix(f.Target, scope)) {
			return true
		}
	}
	return false
}
