package bootimage_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/workerapp"
)

// The MCO asks EC2 about an AMI only for a MachineSet it would reconcile:
// the owner reference, OS stream, Windows and arch checks come first
// (machine-config-operator pkg/controller/bootimage/ms_helpers.go,
// syncMAPIMachineSet), and the aws-cloud-credentials Secret and
// DescribeImages are reached only in reconcileAWSProviderSpec
// (platform_helpers.go). A cluster whose AWS MachineSets are all left alone
// for those reasons needs neither: refused EC2 credentials (or STS ones,
// which fleetsaga refuses) must not fail its bump.
func TestBumpAsksEC2OnlyForMachineSetsItWouldReconcile(t *testing.T) {
	c := spec.SampleCluster("c1", spec.PlatformAWS, true)
	var kept []spec.MachineSet
	for _, m := range c.MachineSets {
		if m.Windows || len(m.OwnerReferences) > 0 {
			kept = append(kept, m)
		}
	}
	require.Len(t, kept, 2, "the sample's Windows and owned MachineSets")
	c.MachineSets = kept
	e := setup(t, unmanaged(c))
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`<Response><Errors><Error><Code>AuthFailure</Code><Message>AWS was not able to validate the provided access credentials</Message></Error></Errors><RequestID>r</RequestID></Response>`))
	}))
	defer denied.Close()
	ep := e.Endpoints(e.sim)
	ep.EC2 = denied.URL
	e.StartWorker(workerapp.Deps{Fleet: ep})
	res, err := e.wait(e.start(fastInput()))
	require.NoError(t, err, "%+v", res)
	assert.Len(t, res.Skipped, 2, "Windows and owned: skipped, as the MCO does, without asking EC2")
	assert.Empty(t, res.Failed)
}
