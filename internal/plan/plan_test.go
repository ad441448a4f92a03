package plan

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/kinds/bootimage"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

const sha = "d3982a5654ce3f50b22acfa59dea84af84786f86b84615170c3fba4605a91336"

func TestParseDecodesEachKindAndDurations(t *testing.T) {
	in, err := Parse([]byte(`
name: q3
stages:
- name: sp
  kind: sp-firmware
  concurrency: 2
  exclusive: [[sp/sled/0, sp/sled/1]]
  updates:
  - sp: {type: sled, slot: 0, serial: S0}
    artifact: {version: 1.1.0, sha256: ` + sha + `, path: /a/sp.img}
    timing: {attemptDelay: 2s, pollInterval: 500ms}
  - sp: {type: sled, slot: 1, serial: S1}
    artifact: {version: 1.1.0, sha256: ` + sha + `, path: /a/sp.img}
- name: cluster
  kind: bootimage-bump
  concurrency: 1
  approval: true
  updates:
  - {cluster: prod, settleInterval: 1m}
`))
	require.NoError(t, err)
	require.Len(t, in.Stages, 2)
	sp := in.Stages[0]
	require.Equal(t, "sp/sled/0", sp.Updates[0].Target)
	require.Equal(t, "1.1.0", sp.Updates[0].Artifact)
	var spIn mgsupdate.SPFirmwareInput
	require.NoError(t, json.Unmarshal(sp.Updates[0].Input, &spIn))
	require.Equal(t, 2*time.Second, spIn.Timing.AttemptDelay)
	require.Equal(t, 500*time.Millisecond, spIn.Timing.PollInterval)
	var bi bootimage.BootImageBumpInput
	require.NoError(t, json.Unmarshal(in.Stages[1].Updates[0].Input, &bi))
	require.Equal(t, time.Minute, bi.SettleInterval)
	require.True(t, in.Stages[1].Approval)
}

func TestParseRejectsBadPlansWithOneClearError(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"unknown top field":   {"name: x\nstagez: []\n", `unknown field "stagez"`},
		"unknown kind":        {"name: x\nstages: [{name: s, kind: nope, concurrency: 1, updates: [{}]}]\n", `unknown or unavailable kind "nope"`},
		"unknown input field": {"name: x\nstages: [{name: s, kind: bootimage-bump, concurrency: 1, updates: [{cluster: c, colour: red}]}]\n", `unknown field "colour"`},
		"invalid input":       {"name: x\nstages: [{name: s, kind: sp-firmware, concurrency: 1, updates: [{sp: {type: sled, slot: 1}}]}]\n", "sha256"},
		"bad duration":        {"name: x\nstages: [{name: s, kind: bootimage-bump, concurrency: 1, updates: [{cluster: c, pollInterval: soon}]}]\n", `"soon" is not a duration`},
		"no concurrency":      {"name: x\nstages: [{name: s, kind: bootimage-bump, updates: [{cluster: c}]}]\n", "concurrency must be >= 1"},
		"duplicate target":    {"name: x\nstages: [{name: s, kind: bootimage-bump, concurrency: 1, updates: [{cluster: c}, {cluster: c}]}]\n", "appears twice"},
		"foreign exclusive":   {"name: x\nstages: [{name: s, kind: bootimage-bump, concurrency: 1, exclusive: [[cluster/c, cluster/d]], updates: [{cluster: c}]}]\n", "cluster/d is not a target"},
		"not yaml":            {"name: [\n", "plan:"},
		// approval: gives it; the rollout's own key is not a plan's.
		"approvalPolicy key": {"name: x\nstages: [{name: s, kind: bootimage-bump, concurrency: 1, approvalPolicy: {approvers: 2}, updates: [{cluster: c}]}]\n", `unknown field "approvalPolicy"`},
		"no stages":          {"name: x\n", "no stages"},
		// continue-as-new state is the install's own, never a plan's.
		"carried run state": {"name: x\nstages: [{name: s, kind: agent-install, concurrency: 1, updates: [{agents: [{name: vm-agent}], selection: {all: true}, carry: {runs: 1, plan: {lastSeq: 4}}}]}]\n", "carry"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// Each real error is one line, and an error never brings a wrong follow-on
// (an unknown kind leaves its updates undecoded: that is not "no updates").
func TestParseReportsOneLinePerRealError(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml string
		want []string
	}{
		"unknown kind": {"name: x\nstages: [{name: s, kind: nope, concurrency: 1, updates: [{}]}]\n",
			[]string{`invalid plan: line 2: stage "s" (stages[0]): unknown or unavailable kind "nope"`}},
		"unknown kind with exclusive": {"name: x\nstages: [{name: s, kind: nope, concurrency: 1, exclusive: [[a, b]], updates: [{}]}]\n",
			[]string{`invalid plan: line 2: stage "s" (stages[0]): unknown or unavailable kind "nope"`}},
		"bad input and no concurrency": {"name: x\nstages: [{name: s, kind: bootimage-bump, concurrency: 0, updates: [{cluster: c, colour: red}]}]\n",
			[]string{`invalid plan: line 2: stage "s" (stages[0]) updates[0]: bad input: json: unknown field "colour"`, `line 2: stage "s" (stages[0]): concurrency must be >= 1`}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			require.Error(t, err)
			require.Equal(t, tc.want, strings.Split(err.Error(), "\n"))
		})
	}
}

// A typo in a plan names the file, the line and the stage, where
// it used to read "error unmarshaling JSON" with neither.
func TestParseFileNamesFileLineAndStage(t *testing.T) {
	plan := `name: q3
stages:
- name: sp
  kind: sp-firmware
  concurency: 2
  updates:
  - sp: {type: sled, slot: 0, serial: S0}
    artifact: {version: 1.1.0, sha256: ` + sha + `, path: /a/sp.img}
- name: cluster
  kind: bootimage-bump
  concurrency: 1
  updates:
  - cluster: prod
  - cluster: test
    settleIntervall: 1m
`
	_, err := ParseFile("q3.yaml", []byte(plan))
	require.EqualError(t, err, `invalid plan: q3.yaml:5: stage "sp" (stages[0]): unknown field "concurency"`)

	fixed := strings.Replace(plan, "concurency", "concurrency", 1)
	_, err = ParseFile("q3.yaml", []byte(fixed))
	require.EqualError(t, err, `invalid plan: q3.yaml:15: stage "cluster" (stages[1]) updates[1]: bad input: json: unknown field "settleIntervall"`)

	_, err = ParseFile("q3.yaml", []byte(strings.Replace(fixed, "settleIntervall", "settleInterval", 1)+"- name: empty\n  kind: zone-expunge\n  concurrency: 1\n"))
	require.EqualError(t, err, `invalid plan: q3.yaml:16: stage "empty" (stages[2]): no updates`)
}
