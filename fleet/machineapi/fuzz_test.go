package machineapi_test

// Fuzz targets for the machine API decoders (MachineSet objects through
// client-go, the golden stream JSON, providerSpec images) and for the
// bump's decision on what it decodes: whatever the input, a MachineSet is
// patched only from an official image to the golden one, never when another
// controller owns it. Table tests cover bad API replies.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
)

type fzReply struct {
	status   int
	body     []byte
	truncate bool
	hang     bool
}

type fzTransport struct {
	reply fzReply
	calls atomic.Int32
}

type fzTruncated struct{ r io.Reader }

func (t *fzTruncated) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err == io.EOF {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

func (t *fzTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.calls.Add(1)
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	if t.reply.hang {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	var body io.Reader = bytes.NewReader(t.reply.body)
	if t.reply.truncate {
		body = &fzTruncated{bytes.NewReader(t.reply.body[:len(t.reply.body)/2])}
	}
	return &http.Response{StatusCode: t.reply.status, Status: http.StatusText(t.reply.status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(body),
		ContentLength: int64(len(t.reply.body)), Request: req}, nil
}

func fzClient(t testing.TB, r fzReply) (*machineapi.Client, *fzTransport) {
	tr := &fzTransport{reply: r}
	c, err := machineapi.New(&rest.Config{Host: "http://kube.test/clusters/c1", Timeout: 5 * time.Second}, "c1", &http.Client{Transport: tr})
	require.NoError(t, err)
	return c, tr
}

var fzStatuses = []int{200, 200, 200, 201, 400, 404, 409, 429, 500, 503}

func fzStatus(s uint8) int { return fzStatuses[int(s)%len(fzStatuses)] }

// fzStream is a golden stream covering every platform for x86_64.
const fzStream = `{"stream":"rhcos-9.6","architectures":{"x86_64":{
 "artifacts":{"vmware":{"release":"9.6.20250523-0"}},
 "images":{"aws":{"regions":{"us-east-1":{"release":"9.6.20250523-0","image":"ami-0golden"}}},
           "gcp":{"release":"9.6.20250523-0","project":"rhcos-cloud","name":"rhcos-9-6-20250523-0-gcp-x86-64"}},
 "rhel-coreos-extensions":{"marketplace":{"azure":{"no-purchase-plan":{
   "hyperVGen1":{"publisher":"azureopenshift","offer":"aro4","sku":"aro_96","version":"9.6.20250523"},
   "hyperVGen2":{"publisher":"azureopenshift","offer":"aro4","sku":"aro_96-v2","version":"9.6.20250523"}}}}}}}}`

// fzHistory is an older stream whose images are official too.
const fzHistory = `{"stream":"rhcos-9.4","architectures":{"x86_64":{
 "artifacts":{"vmware":{"release":"9.4.20240101-0"}},
 "images":{"aws":{"regions":{"us-east-1":{"release":"9.4.20240101-0","image":"ami-0old"}}},
           "gcp":{"release":"9.4.20240101-0","project":"rhcos-cloud","name":"rhcos-9-4-gcp"}},
 "rhel-coreos-extensions":{"marketplace":{"azure":{"no-purchase-plan":{
   "hyperVGen1":{"publisher":"azureopenshift","offer":"aro4","sku":"aro_94","version":"9.4.20240101"}}}}}}}}`

func fzMachineSet(providerSpec string, extraMeta string) string {
	return `{"apiVersion":"machine.openshift.io/v1beta1","kind":"MachineSet","metadata":{"name":"ms-1","namespace":"openshift-machine-api",
 "resourceVersion":"7","uid":"u1"` + extraMeta + `},"spec":{"replicas":2,"template":{"metadata":{"labels":{"machine.openshift.io/cluster-api-machineset":"ms-1"}},
 "spec":{"providerSpec":{"value":` + providerSpec + `}}}},"status":{"readyReplicas":2}}`
}

var fzProviderSpecs = []string{
	`{"kind":"AWSMachineProviderConfig","ami":{"id":"ami-0old"},"placement":{"region":"us-east-1"}}`,
	`{"kind":"AWSMachineProviderConfig","ami":{"id":"ami-custom"},"placement":{"region":"us-east-1"}}`,
	`{"kind":"AWSMachineProviderConfig","ami":{"id":"ami-0old"},"placement":{"region":"mars-1"}}`,
	`{"kind":"GCPMachineProviderSpec","disks":[{"boot":true,"image":"projects/rhcos-cloud/global/images/rhcos-9-4-gcp"}]}`,
	`{"kind":"GCPMachineProviderSpec","disks":[{"boot":true,"image":"projects/my-project/global/images/custom"}]}`,
	`{"kind":"GCPMachineProviderSpec","disks":"not a list"}`,
	`{"kind":"AzureMachineProviderSpec","image":{"publisher":"azureopenshift","offer":"aro4","sku":"aro_94","version":"9.4.20240101"}}`,
	`{"kind":"AzureMachineProviderSpec","image":{"resourceID":"/subscriptions/x/galleries/g/images/i-gen2"}}`,
	`{"kind":"AzureMachineProviderSpec","image":"flat"}`,
	`{"kind":"VSphereMachineProviderSpec","template":"rhcos-9.4.20240101-0"}`,
	`{"kind":"VSphereMachineProviderSpec","template":"rhcos-9.6.20250523-0"}`,
	`{"kind":"OpenStackProviderSpec"}`, `{}`,
}

func fzGolden(t testing.TB) (*machineapi.Golden, machineapi.AMIOrigins) {
	g := &machineapi.Golden{ReleaseVersion: "4.19.0", MCOReleaseImageVersion: "4.19.0"}
	require.NoError(t, json.Unmarshal([]byte(fzStream), &g.Stream))
	var h machineapi.Stream
	require.NoError(t, json.Unmarshal([]byte(fzHistory), &h))
	return g, fzAMIs(&g.Stream, &h)
}

// fzAMIs says every AMI of the streams is Red Hat's, as EC2 would.
func fzAMIs(streams ...*machineapi.Stream) machineapi.AMIOrigins {
	amis := machineapi.AMIOrigins{}
	for ref := range goldenRefs(streams...) {
		if strings.HasPrefix(ref, "ami-") {
			amis[ref] = machineapi.AMIOrigin{Owner: machineapi.AWSOwnerRHCOS}
		}
	}
	return amis
}

// goldenRefs is every image of the streams, by Ref (Azure without its type).
func goldenRefs(streams ...*machineapi.Stream) map[string]bool {
	out := map[string]bool{}
	for _, s := range streams {
		for _, a := range s.Architectures {
			if a.Images.AWS != nil {
				for _, r := range a.Images.AWS.Regions {
					out[r.Image] = true
				}
			}
			if g := a.Images.GCP; g != nil {
				out["projects/"+g.Project+"/global/images/"+g.Name] = true
			}
			for _, set := range a.Extensions.Marketplace.Azure {
				for _, img := range []*machineapi.AzureImage{set.Gen1, set.Gen2} {
					if img != nil {
						out[machineapi.BootImage{Platform: machineapi.PlatformAzure, Azure: img}.Ref()] = true
					}
				}
			}
		}
	}
	return out
}

// checkPlan is the bump's safety rule, whatever it was fed.
func checkPlan(t *testing.T, ms *machineapi.MachineSet, p machineapi.Plan, golden *machineapi.Golden, amis machineapi.AMIOrigins) {
	t.Helper()
	switch p.Action {
	case machineapi.ActionPatch:
		if len(ms.OwnerReferences) > 0 {
			t.Fatalf("patching %s, which another controller owns", ms.Name)
		}
		if p.Current.Equal(p.Desired) {
			t.Fatalf("patch to the image it already has: %+v", p)
		}
		if p.Desired.Platform != p.Current.Platform || p.Desired.Ref() == "" {
			t.Fatalf("patch across platforms or to nothing: %+v", p)
		}
		if !goldenRefs(&golden.Stream)[p.Desired.Ref()] {
			t.Fatalf("patch to %s, which is not a golden image", p.Desired.Ref())
		}
		switch p.Current.Platform {
		case machineapi.PlatformAWS:
			if amis[p.Current.AMI].Owner != machineapi.AWSOwnerRHCOS {
				t.Fatalf("patching from AMI %s, not Red Hat's", p.Current.AMI)
			}
		case machineapi.PlatformGCP:
			if !strings.HasPrefix(p.Current.GCPImage, machineapi.GCPOfficialPrefix) {
				t.Fatalf("patching from custom image %s", p.Current.GCPImage)
			}
		case machineapi.PlatformVSphere:
			t.Fatalf("patching a vSphere template without the OVA import: %+v", p)
		}
	case machineapi.ActionSkip, machineapi.ActionRefuse:
		if p.Reason == "" {
			t.Fatalf("%s without a reason: %+v", p.Action, p)
		}
	case machineapi.ActionUpToDate:
	default:
		t.Fatalf("unknown action %q", p.Action)
	}
}

func FuzzMachineSetReply(f *testing.F) {
	for _, ps := range fzProviderSpecs {
		f.Add(uint8(0), []byte(fzMachineSet(ps, "")))
		f.Add(uint8(0), []byte(fzMachineSet(ps, `,"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"MachineDeployment","name":"md","uid":"u2"}]`)))
		f.Add(uint8(0), []byte(fzMachineSet(ps, `,"annotations":{"capacity.cluster-autoscaler.kubernetes.io/labels":"kubernetes.io/arch=arm64"}`)))
	}
	f.Add(uint8(0), []byte(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"MachineSet","metadata":{"name":"ms-1"},"spec":{}}`))
	f.Add(uint8(0), []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"conflict","reason":"Conflict","code":409}`))
	f.Add(uint8(6), []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"conflict","reason":"Conflict","code":409}`))
	f.Add(uint8(0), []byte(`not json`))
	f.Fuzz(func(t *testing.T, st uint8, body []byte) {
		status := fzStatus(st)
		c, _ := fzClient(t, fzReply{status: status, body: body})
		ms, err := c.GetMachineSet(context.Background(), "ms-1")
		if err != nil {
			if ms != nil {
				t.Fatalf("error %v with a MachineSet", err)
			}
			if !strings.Contains(err.Error(), "ms-1") && !strings.Contains(err.Error(), "machineset") {
				t.Fatalf("error %q does not say what failed", err)
			}
			return
		}
		if status >= 300 {
			t.Fatalf("HTTP %d accepted", status)
		}
		if ms.ProviderSpec == nil {
			t.Fatal("MachineSet without providerSpec accepted")
		}
		golden, known := fzGolden(t)
		for _, cs := range []machineapi.ClusterStatus{
			{DesiredVersion: "4.19.0", LatestState: "Completed", ControlPlaneArch: "amd64"},
			{DesiredVersion: "4.19.0", LatestState: "Completed", MultiArch: true},
		} {
			checkPlan(t, ms, machineapi.PlanMachineSet(ms, golden, known, cs), golden, known)
		}
	})
}

// FuzzGoldenStreamAndImage fuzzes the stream JSON (the golden record's
// ConfigMap) and a providerSpec together.
func FuzzGoldenStreamAndImage(f *testing.F) {
	for _, ps := range fzProviderSpecs {
		f.Add([]byte(fzStream), []byte(ps), "rhel-9")
		f.Add([]byte(fzHistory), []byte(ps), "rhel-10")
	}
	f.Add([]byte(`{"architectures":{"x86_64":{"images":{"gcp":{"project":"evil","name":"x"}}}}}`), []byte(fzProviderSpecs[3]), "")
	f.Add([]byte(`{"architectures":{"x86_64":{"artifacts":{"vmware":{"release":"418.94.202501"}}}}}`), []byte(fzProviderSpecs[9]), "rhel-9")
	f.Add([]byte(`{"architectures":null}`), []byte(`{"kind":"AWSMachineProviderConfig"}`), "")
	f.Fuzz(func(t *testing.T, stream, providerSpec []byte, osStream string) {
		g := &machineapi.Golden{ReleaseVersion: "4.19.0", MCOReleaseImageVersion: "4.19.0"}
		if json.Unmarshal(stream, &g.Stream) != nil {
			return
		}
		var value map[string]any
		if json.Unmarshal(providerSpec, &value) != nil || value == nil {
			return
		}
		var h machineapi.Stream
		_ = json.Unmarshal([]byte(fzHistory), &h)
		known := fzAMIs(&g.Stream, &h)
		_, _ = machineapi.RHELMajor(g.Stream.OSVersion("amd64"))
		kind, _ := value["kind"].(string)
		ms := &machineapi.MachineSet{Name: "ms-f", Platform: machineapi.PlatformOfKind(kind), ProviderSpec: value}
		if osStream != "" {
			ms.Labels = map[string]string{machineapi.LabelOSStream: osStream}
		}
		if img, err := machineapi.ImageOf(value); err == nil && ms.Platform != "" && img.Platform != ms.Platform {
			t.Fatalf("providerSpec kind %q read as platform %q", kind, img.Platform)
		}
		p := machineapi.PlanMachineSet(ms, g, known, machineapi.ClusterStatus{DesiredVersion: "4.19.0", LatestState: "Completed"})
		checkPlan(t, ms, p, g, known)
	})
}

// TestBadInputMachineAPIReplies: bad API answers are clear errors the bump
// classifies (retry on transient, stop on malformed), with no MachineSet.
func TestBadInputMachineAPIReplies(t *testing.T) {
	cases := []struct {
		name      string
		reply     fzReply
		transient bool
		malformed bool
		conflict  bool
	}{
		{"malformed JSON", fzReply{status: 200, body: []byte(`{"metadata":`)}, false, false, false},
		{"no providerSpec", fzReply{status: 200, body: []byte(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"MachineSet","metadata":{"name":"ms-1"},"spec":{}}`)}, false, true, false},
		{"providerSpec not an object", fzReply{status: 200, body: []byte(fzMachineSet(`"ami-1"`, ""))}, false, true, false},
		{"500", fzReply{status: 500, body: []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"etcd down","reason":"InternalError","code":500}`)}, true, false, false},
		{"503 plain text", fzReply{status: 503, body: []byte(`upstream unavailable`)}, true, false, false},
		{"429", fzReply{status: 429, body: []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"slow down","reason":"TooManyRequests","code":429}`)}, true, false, false},
		{"409", fzReply{status: 409, body: []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"changed","reason":"Conflict","code":409}`)}, false, false, true},
		{"truncated body", fzReply{status: 200, body: []byte(fzMachineSet(fzProviderSpecs[0], "")), truncate: true}, true, false, false},
		{"timeout", fzReply{hang: true}, true, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := fzClient(t, tc.reply)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			ms, err := c.GetMachineSet(ctx, "ms-1")
			require.Error(t, err)
			assert.Nil(t, ms)
			assert.Contains(t, err.Error(), "ms-1")
			assert.Equal(t, tc.transient, machineapi.IsTransient(err), "transient: %v", err)
			assert.Equal(t, tc.malformed, machineapi.IsMalformed(err), "malformed: %v", err)
			assert.Equal(t, tc.conflict, machineapi.IsConflict(err), "conflict: %v", err)
		})
	}
	t.Run("golden record with broken stream JSON", func(t *testing.T) {
		c, _ := fzClient(t, fzReply{status: 200, body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"coreos-bootimages"},
			"data":{"releaseVersion":"4.19.0","MCOReleaseImageVersion":"4.19.0","stream":"{\"architectures\":"}}`)})
		g, err := c.GoldenRecord(context.Background())
		require.Error(t, err)
		assert.Nil(t, g)
		assert.True(t, machineapi.IsMalformed(err))
		assert.Contains(t, err.Error(), "stream JSON")
	})
}
