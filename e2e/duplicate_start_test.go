package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// The precheck once spaced concurrent identical starts apart: two
// operators give the same command at once; the first update runs and ends
// while the second starter is still in its precheck. The second must
// attach to (report) that run, not start a second one that finds nothing
// to do. The second starter's precheck is held by one slow fleetsim answer
// (a latency fault that fires once) while the first update runs.
func TestConcurrentIdenticalStartsMakeOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	s, err := spec.Generate(spec.GenerateOptions{Sleds: 4, Servers: 1, Seed: 11, SpeedUp: 30})
	require.NoError(t, err)
	stack := startStackOn(t, devstack.TemporalDev, s, 1, 0)
	op := operator{t, stack}
	sled := s.Racks[0].Sleds[2]
	// The SP already runs this version: the update is a quick "no change
	// needed", so it ends well inside the second starter's precheck.
	img := spImage(t, spec.GeneratedSPActive)
	args := []string{"sp-firmware", "--sled", "2", "--serial", sled.Serial, "--artifact", img, "--version", spec.GeneratedSPActive, "--json"}

	op.arm(faults.Fault{Kind: faults.Latency, Target: "*", Latency: "8s", Times: 1})
	second := make(chan cliResult, 1)
	go func() { second <- op.run(args...) }()
	require.Eventually(t, func() bool { return latencyFired(t, stack.FleetsimURL) }, time.Minute, 100*time.Millisecond,
		"the second starter's precheck reached fleetsim")

	first := op.run(append(args, "--wait")...)
	require.Equal(t, 0, first.code, "first: %s%s", first.stdout, first.stderr)
	r := <-second
	require.Equal(t, 0, r.code, "second: %s%s", r.stdout, r.stderr)
	var st started
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st), r.stdout)
	require.True(t, st.Attached, "the second starter reports the first's run: %s", r.stdout)

	c, err := client.Dial(client.Options{HostPort: stack.Temporal.FrontendHostPort()})
	require.NoError(t, err)
	defer c.Close()
	query := fmt.Sprintf(`WorkflowId = %q`, st.WorkflowID)
	var runs int
	require.Eventually(t, func() bool {
		resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		runs = len(resp.GetExecutions())
		return err == nil && runs > 0
	}, 30*time.Second, 200*time.Millisecond)
	time.Sleep(time.Second) // visibility of a second run, were there one
	resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
	require.NoError(t, err)
	require.Len(t, resp.GetExecutions(), 1, "two identical starts at once make one workflow run")
}

// latencyFired reports whether the armed latency fault has fired.
func latencyFired(t *testing.T, base string) bool {
	resp, err := http.Get(base + "/faults/fired")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var fired []faults.Fault
	if json.NewDecoder(resp.Body).Decode(&fired) != nil {
		return false
	}
	for _, f := range fired {
		if f.Kind == faults.Latency && f.Fired > 0 {
			return true
		}
	}
	return false
}
