package bootimage_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/workerapp"
)

// authFailure is EC2's answer to credentials it does not accept.
const authFailure = `<Response><Errors><Error><Code>AuthFailure</Code><Message>AWS was not able to validate the provided access credentials</Message></Error></Errors><RequestID>r</RequestID></Response>`

// deniedEC2 answers AuthFailure to DescribeImages requests that name an
// AMI of deny (all when deny is empty) and passes the others to fleetsim's
// EC2 at upstream.
func deniedEC2(t *testing.T, upstream string, deny ...string) string {
	u, err := url.Parse(upstream)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		refused := len(deny) == 0
		for _, ami := range deny {
			refused = refused || strings.Contains(string(body), ami)
		}
		if !refused {
			proxy.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(authFailure))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The MCO asks EC2 about an AMI only for a MachineSet it would reconcile:
// the owner reference, OS stream, Windows and arch checks come first
// (machine-config-operator pkg/controller/bootimage/ms_helpers.go,
// syncMAPIMachineSet), and the aws-cloud-credentials Secret and
// DescribeImages are reached only in reconcileAWSProviderSpec
// (pkg/controller/bootimage/platform_helpers.go). A cluster whose AWS MachineSets are all left alone
// for those reasons needs neither: refused EC2 credentials must not fail
// its bump.
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
	ep := e.Endpoints(e.sim)
	ep.EC2 = deniedEC2(t, ep.EC2)
	e.StartWorker(workerapp.Deps{Fleet: ep})
	res, err := e.wait(e.start(fastInput()))
	require.NoError(t, err, "%+v", res)
	assert.Len(t, res.Skipped, 2, "Windows and owned: skipped, as the MCO does, without asking EC2")
	assert.Empty(t, res.Failed)
}

// EC2 refusing one AMI (AuthFailure, as while aws-cloud-credentials is
// rotated) fails that AMI's MachineSet with a reason the operator can act
// on; the others are still bumped.
func TestBumpFailsOnlyTheMachineSetWhoseAMIEC2Refuses(t *testing.T) {
	c := unmanaged(spec.SampleCluster("c1", spec.PlatformAWS, true))
	var custom string
	for _, m := range c.MachineSets {
		if m.Name == "c1-custom" {
			custom = m.CustomImage
		}
	}
	require.NotEmpty(t, custom)
	e := setup(t, c)
	ep := e.Endpoints(e.sim)
	ep.EC2 = deniedEC2(t, ep.EC2, custom)
	e.StartWorker(workerapp.Deps{Fleet: ep})
	res, err := e.wait(e.start(fastInput()))
	require.Error(t, err, "a failed MachineSet fails the bump")
	assert.ElementsMatch(t, []string{"c1-arm64", "c1-worker-a", "c1-worker-b"}, res.Patched)
	require.Len(t, res.Failed, 1, "%+v", res.Failed)
	assert.Equal(t, "c1-custom", res.Failed[0].MachineSet)
	assert.Equal(t, string(machineapi.ReasonImageLookup), res.Failed[0].Reason)
	assert.Contains(t, res.Failed[0].Detail, "EC2 refused the credentials")
	assert.Contains(t, res.Failed[0].Detail, "run the bump again")
}

// fleetsaga cannot present an STS token from outside the cluster: each
// MachineSet it would bump is failed with a reason that says so and what
// it needs, and none is patched; the Secret's keys are named, never its
// values.
func TestBumpOfAnSTSClusterSaysItNeedsStaticKeys(t *testing.T) {
	for _, form := range []string{spec.AWSCredentialsSTS, spec.AWSCredentialsCCOCTL} {
		t.Run(form, func(t *testing.T) {
			c := unmanaged(spec.SampleCluster("c1", spec.PlatformAWS, true))
			c.AWSCredentials = form
			e := setup(t, c)
			e.worker()
			res, err := e.wait(e.start(fastInput()))
			require.Error(t, err)
			assert.Empty(t, res.Patched)
			require.NotEmpty(t, res.Failed)
			for _, f := range res.Failed {
				assert.Equal(t, string(machineapi.ReasonImageLookup), f.Reason, f.MachineSet)
				assert.Contains(t, f.Detail, "the cluster uses AWS STS", f.MachineSet)
				assert.Contains(t, f.Detail, "static keys (aws_access_key_id, aws_secret_access_key) in aws-cloud-credentials", f.MachineSet)
				assert.NotContains(t, f.Detail, "arn:aws:iam", f.MachineSet)
			}
			assert.Len(t, res.Skipped, 2, "Windows and owned are skipped, not failed")
		})
	}
}
