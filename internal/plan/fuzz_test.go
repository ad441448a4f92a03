package plan_test

// Fuzz target for plan parsing, and table tests of bad plans: a plan is
// either rejected with one clear message naming where it is wrong, or
// accepted fully valid (every update decoded strictly into its kind's input,
// validated, its target and artifact derived from that input) and stable
// when written back and read again.

import (
	"bytes"
	"encoding/json"
	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/fleetsaga/fleetsaga/internal/plan"
	"github.com/fleetsaga/fleetsaga/workflows"
)

const fzSHA = "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"

// fzUpdates are one valid update per kind (when the kind exists).
var fzUpdates = map[workflows.Kind]string{
	workflows.KindSPFirmware: `{"sp":{"type":"sled","slot":14,"serial":"BRM42220014"},"artifact":{"version":"1.0.40","sha256":"` + fzSHA + `","path":"/var/fleetsaga/sp-1.0.40.zip"}}`,
	workflows.KindHostFlash: `{"sled":{"type":"sled","slot":14,"serial":"BRM42220014"},"phase1":{"version":"17.0.0","sha256":"` + fzSHA + `","url":"http://artifacts/p1"},` +
		`"phase2":{"version":"17.0.0","sha256":"` + fzSHA + `","url":"http://artifacts/p2"}}`,
	workflows.KindAgentInstall:  `{"agents":[{"name":"cn-agent"}],"selection":{"all":true},"concurrency":20,"maxFailures":2}`,
	workflows.KindAgentDrift:    `{"agents":["config-agent"],"selection":{"servers":["44454c4c-3000-1039-8058-b2c04f4e3232"]}}`,
	workflows.KindBootImageBump: `{"cluster":"prod-east","selection":"All","skew":"Automatic"}`,
	workflows.KindZoneExpunge:   `{"sled":"0c6bd4b4-0d6e-4b6b-9b7d-1a4e0b2f6a11","zone":"5d0b0f8e-8d0a-4d8e-9a60-3f2b1c0e9a77"}`,
}

// fzPlan is a plan with one stage per existing kind.
func fzPlan() string {
	var b strings.Builder
	b.WriteString("name: fuzz-plan\nstages:\n")
	for _, k := range []workflows.Kind{workflows.KindSPFirmware, workflows.KindHostFlash, workflows.KindAgentInstall,
		workflows.KindAgentDrift, workflows.KindBootImageBump, workflows.KindZoneExpunge} {
		if _, ok := kinds.Kinds[k]; !ok {
			continue
		}
		b.WriteString("- name: " + string(k) + "\n  kind: " + string(k) + "\n  concurrency: 2\n  failureBudget: 1\n  updates:\n  - " + fzUpdates[k] + "\n")
	}
	return b.String()
}

func FuzzParsePlan(f *testing.F) {
	f.Add([]byte(fzPlan()))
	f.Add([]byte("name: p\nstages:\n- name: a\n  kind: sp-firmware\n  concurrency: 1\n  approval: true\n  exclusive: [[sp/sled/14, sp/sled/15]]\n  updates:\n  - " +
		fzUpdates[workflows.KindSPFirmware] + "\n  - " + strings.Replace(fzUpdates[workflows.KindSPFirmware], `"slot":14`, `"slot":15`, 1) + "\n"))
	f.Add([]byte("name: p\nstages:\n- name: a\n  kind: sp-firmware\n  concurrency: 1\n  updates:\n  - " +
		fzUpdates[workflows.KindSPFirmware] + "\n  - " + fzUpdates[workflows.KindSPFirmware] + "\n"))
	f.Add([]byte("name: p\nstages:\n- name: a\n  kind: nope\n  concurrency: 1\n  updates: [{}]\n"))
	f.Add([]byte("name: BAD NAME\nstages: []\n"))
	f.Add([]byte("name: p\nstages:\n- name: a\n  kind: zone-expunge\n  concurrency: 0\n  failureBudget: -1\n  updates:\n  - {\"sled\":\"x\",\"zone\":\"y\"}\n"))
	f.Add([]byte("name: p\nstages:\n- name: a\n  kind: bootimage-bump\n  concurrency: 1\n  updates:\n  - {\"cluster\":\"c\",\"bogus\":1}\n"))
	f.Add([]byte("name: p\nunknown: 1\n"))
	f.Add([]byte("{\"name\":\"p\",\"stages\":[{\"name\":\"a\",\"kind\":\"agent-install\",\"concurrency\":1,\"updates\":[" + fzUpdates[workflows.KindAgentInstall] + "]}]}"))
	f.Add([]byte("- not\n- a map\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := plan.Parse(b)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "plan: ") && !strings.HasPrefix(msg, "invalid plan: ") {
				t.Fatalf("error %q does not say it is about the plan", msg)
			}
			return
		}
		checkPlan(t, in)
		// Written back and read again, a plan is the same plan.
		again, err := plan.Parse(render(t, in))
		if err != nil {
			t.Fatalf("accepted plan does not parse after rendering: %v\n%s", err, render(t, in))
		}
		if !reflect.DeepEqual(in, again) {
			t.Fatalf("plan changed in a round trip:\n%+v\n%+v", in, again)
		}
	})
}

// checkPlan: what a valid plan guarantees to the rollout workflow.
func checkPlan(t *testing.T, in rollout.RolloutInput) {
	t.Helper()
	if err := in.Validate(); err != nil {
		t.Fatalf("accepted plan does not validate: %v", err)
	}
	total := 0
	for _, st := range in.Stages {
		info, ok := kinds.Kinds[st.Kind]
		if !ok {
			t.Fatalf("stage %s has unknown kind %q", st.Name, st.Kind)
		}
		for _, u := range st.Updates {
			total++
			input := info.NewInput()
			dec := json.NewDecoder(bytes.NewReader(u.Input))
			dec.DisallowUnknownFields()
			if err := dec.Decode(input); err != nil {
				t.Fatalf("stored input of %s does not decode strictly: %v", u.Target, err)
			}
			if err := input.Validate(); err != nil {
				t.Fatalf("stored input of %s does not validate: %v", u.Target, err)
			}
			if input.Target() != u.Target || input.ArtifactVersion() != u.Artifact {
				t.Fatalf("target/artifact %s/%s do not come from the input (%s/%s)", u.Target, u.Artifact, input.Target(), input.ArtifactVersion())
			}
		}
	}
	if total == 0 {
		t.Fatal("a plan without updates was accepted")
	}
}

// render writes a parsed plan back in the file shape.
func render(t *testing.T, in rollout.RolloutInput) []byte {
	t.Helper()
	f := plan.File{Name: in.Name}
	for _, st := range in.Stages {
		s := plan.Stage{Stage: rollout.Stage{Name: st.Name, Kind: st.Kind, Concurrency: st.Concurrency,
			FailureBudget: st.FailureBudget, Exclusive: st.Exclusive}, Approval: plan.ApprovalSpec{Gate: st.Approval}}
		for _, u := range st.Updates {
			s.Updates = append(s.Updates, u.Input)
		}
		f.Stages = append(f.Stages, s)
	}
	b, err := yaml.Marshal(f)
	require.NoError(t, err)
	return b
}

// TestBadInputPlans: every bad plan is refused with a message that names
// the field and where it is; nothing is half-accepted.
func TestBadInputPlans(t *testing.T) {
	good := fzPlan()
	in, err := plan.Parse([]byte(good))
	require.NoError(t, err, good)
	checkPlan(t, in)

	sp := fzUpdates[workflows.KindSPFirmware]
	stage := func(kind, extra, updates string) string {
		return "name: p\nstages:\n- name: s1\n  kind: " + kind + "\n  concurrency: 1\n" + extra + "  updates:\n" + updates
	}
	item := func(s string) string { return "  - " + s + "\n" }
	cases := []struct {
		name string
		yaml string
		want []string
	}{
		{"not YAML", "name: [", []string{"plan: "}},
		{"unknown top-level field", "name: p\nstagez: []\n", []string{`unknown field "stagez"`}},
		{"bad plan name", strings.Replace(good, "fuzz-plan", "Fuzz Plan!", 1), []string{`plan name "Fuzz Plan!"`}},
		{"no stages", "name: p\nstages: []\n", []string{"plan has no stages"}},
		{"unknown kind", stage("sp-firmwear", "", item(sp)), []string{`unknown or unavailable kind "sp-firmwear"`}},
		{"zero concurrency", strings.Replace(stage("sp-firmware", "", item(sp)), "concurrency: 1", "concurrency: 0", 1), []string{"concurrency must be >= 1"}},
		{"negative budget", stage("sp-firmware", "  failureBudget: -2\n", item(sp)), []string{"failureBudget must be >= 0"}},
		{"no updates", strings.TrimSuffix(stage("sp-firmware", "", ""), "\n") + " []\n", []string{"no updates"}},
		{"duplicate target", stage("sp-firmware", "", item(sp)+item(sp)), []string{"target sp/sled/14 appears twice"}},
		{"unknown input field", stage("sp-firmware", "", item(strings.Replace(sp, `"sp":`, `"spp":`, 1))), []string{"updates[0]", `unknown field "spp"`}},
		{"bad SP type", stage("sp-firmware", "", item(strings.Replace(sp, `"type":"sled"`, `"type":"toaster"`, 1))), []string{"updates[0]", `type "toaster"`}},
		{"bad digest", stage("sp-firmware", "", item(strings.Replace(sp, fzSHA, "abc", 1))), []string{"sha256 must be 64 hex digits"}},
		{"exclusive group outside the stage", stage("sp-firmware", "  exclusive: [[sp/sled/14, sp/sled/99]]\n", item(sp)), []string{"sp/sled/99 is not a target of this stage"}},
		{"exclusive group of one", stage("sp-firmware", "  exclusive: [[sp/sled/14]]\n", item(sp)), []string{"a group needs at least two targets"}},
		{"bad zone UUID", stage("zone-expunge", "", item(`{"sled":"not-a-uuid","zone":"5d0b0f8e-8d0a-4d8e-9a60-3f2b1c0e9a77"}`)), []string{"updates[0]", "bad input"}},
		{"missing zone", stage("zone-expunge", "", item(`{"sled":"0c6bd4b4-0d6e-4b6b-9b7d-1a4e0b2f6a11"}`)), []string{"zone-expunge: zone is required"}},
		{"cluster with a slash", stage("bootimage-bump", "", item(`{"cluster":"a/b"}`)), []string{"cluster is required and must not contain"}},
		{"agent install without agents", stage("agent-install", "", item(`{"selection":{"all":true}}`)), []string{"name at least one agent"}},
		{"too many updates", manySP(401), []string{"at most 400 per rollout"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := plan.Parse([]byte(c.yaml))
			require.Error(t, err, c.yaml)
			msg := err.Error()
			assert.True(t, strings.HasPrefix(msg, "plan: ") || strings.HasPrefix(msg, "invalid plan: "), msg)
			for _, w := range c.want {
				assert.Contains(t, msg, w)
			}
		})
	}
}

func manySP(n int) string {
	var b strings.Builder
	b.WriteString("name: big\nstages:\n- name: s1\n  kind: sp-firmware\n  concurrency: 8\n  updates:\n")
	for i := range n {
		b.WriteString("  - " + strings.Replace(fzUpdates[workflows.KindSPFirmware], `"slot":14`, `"slot":`+itoa(i), 1) + "\n")
	}
	return b.String()
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
