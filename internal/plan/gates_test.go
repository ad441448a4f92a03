package plan

import (
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const gatedPlan = `name: gated
calendar:
  windows:
  - {days: [mon, tue, wed, thu, fri], start: "02:00", duration: 4h, timeZone: Europe/Berlin}
  freezes:
  - {from: "2026-12-20T00:00:00Z", to: "2027-01-04T00:00:00Z", reason: year-end freeze}
  endBehavior: cancel
notify:
  webhooks: [ops]
  stallAfter: 10m
stages:
- name: cluster
  kind: bootimage-bump
  concurrency: 4
  ramp: {start: 1, factor: 2}
  thresholds:
  - {class: timeout, percent: 20, minimum: 3}
  health:
    bake: 2m
    interval: 20s
    failuresToAbort: 2
    shadow: true
    checks:
    - {name: healthy, query: 'min(fleetsim_device_healthy)', pass: "== 1"}
    - {name: api, url: "http://127.0.0.1:1/healthz"}
  updates:
  - {cluster: c1}
  - {cluster: c2}
`

func TestParseReadsGatesThresholdsRampsCalendarAndNotify(t *testing.T) {
	in, err := Parse([]byte(gatedPlan))
	require.NoError(t, err)
	require.NotNil(t, in.Calendar)
	require.Equal(t, 4*time.Hour, in.Calendar.Windows[0].Duration)
	require.Equal(t, "Europe/Berlin", in.Calendar.Windows[0].TimeZone)
	require.Equal(t, "year-end freeze", in.Calendar.Freezes[0].Reason)
	require.Equal(t, rollout.WindowEndCancel, in.Calendar.EndBehavior)
	require.Equal(t, []string{"ops"}, in.Notify.Webhooks)
	require.Equal(t, 10*time.Minute, in.Notify.StallAfter)
	st := in.Stages[0]
	require.Equal(t, 2*time.Minute, st.Health.Bake)
	require.Equal(t, 20*time.Second, st.Health.Interval)
	require.Equal(t, 2, st.Health.FailuresToAbort)
	require.True(t, st.Health.Shadow)
	require.Len(t, st.Health.Checks, 2)
	require.Equal(t, rollout.Ramp{Start: 1, Factor: 2}, *st.Ramp)
	require.Equal(t, []rollout.Threshold{{Class: rollout.ClassTimeout, Percent: 20, Minimum: 3}}, st.Thresholds)
}

// Each bad value is one error naming the file, the line of its key and
// the stage, before anything starts.
func TestParseRejectsBadGateValuesWithFileLineAndStage(t *testing.T) {
	for name, tc := range map[string]struct{ from, to, want string }{
		"bad condition":     {`pass: "== 1"`, `pass: "about 1"`, `gated.yaml:18: stage "cluster" (stages[0]): health: checks[0]: health check "healthy": pass: condition "about 1"`},
		"query and url":     {`url: "http://127.0.0.1:1/healthz"`, `url: "http://x/", query: up, pass: "== 1"`, `gated.yaml:18: stage "cluster" (stages[0]): health: checks[1]: health check "api"`},
		"bad duration":      {`bake: 2m`, `bake: soon`, `"soon" is not a duration`},
		"unknown class":     {`class: timeout`, `class: slow`, `gated.yaml:16: stage "cluster" (stages[0]): thresholds[0]: class "slow" is not one of`},
		"percent":           {`percent: 20`, `percent: 120`, `percent must be within [0, 100)`},
		"ramp factor":       {`factor: 2`, `factor: 1`, `gated.yaml:15: stage "cluster" (stages[0]): ramp: factor must be within (1, 10]`},
		"ramp start":        {`start: 1`, `start: 9`, `ramp: start must be within [1, concurrency 4], got 9`},
		"time zone":         {`Europe/Berlin`, `Mars/Olympus`, `calendar: windows[0]: time zone "Mars/Olympus" is not an IANA zone name`},
		"freeze reason":     {`reason: year-end freeze`, `reason: ""`, `calendar: freezes[0]: a freeze needs a reason`},
		"end behaviour":     {`endBehavior: cancel`, `endBehavior: pause`, `calendar: endBehavior "pause" is not stop-starting or cancel`},
		"webhook URL":       {`webhooks: [ops]`, `webhooks: ["https://hooks.example/x"]`, `notify: webhooks[0]: "https://hooks.example/x" is not a webhook name`},
		"stall too short":   {`stallAfter: 10m`, `stallAfter: 1s`, `notify: stallAfter must be 0 (off) or at least 10s`},
		"unknown gate key":  {`shadow: true`, `shadoww: true`, `unknown field "shadoww"`},
		"negative failures": {`failuresToAbort: 2`, `failuresToAbort: -1`, `health: failuresToAbort and inconclusiveToPause must be >= 1`},
	} {
		t.Run(name, func(t *testing.T) {
			require.Contains(t, gatedPlan, tc.from)
			path := filepath.Join(t.TempDir(), "gated.yaml")
			require.NoError(t, os.WriteFile(path, []byte(strings.Replace(gatedPlan, tc.from, tc.to, 1)), 0o644))
			_, err := Load(path)
			require.Error(t, err)
			msg := strings.ReplaceAll(err.Error(), filepath.Dir(path)+"/", "")
			require.Contains(t, msg, tc.want)
			require.Equal(t, 1, strings.Count(msg, "\n")+1, "one error: %s", msg)
		})
	}
}
