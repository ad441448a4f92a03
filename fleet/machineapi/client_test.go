package machineapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/fleetsaga/fleetsaga/fleet/ec2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	simapi "github.com/fleetsaga/fleetsaga/fleetsim/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

type harness struct {
	t   *testing.T
	srv *fleetsim.Server
}

// start runs fleetsim with clusters; MachineBootTime is 4 min scaled to 100 ms.
func start(t *testing.T, clusters ...spec.Cluster) *harness {
	t.Helper()
	for i := range clusters {
		// These tests patch MachineSets themselves: the MCO, on by
		// default, is off unless a test turns it on.
		if clusters[i].MCO == nil {
			clusters[i].MCO = spec.Off()
		}
	}
	s := &spec.Spec{Seed: 1, SpeedUp: 2400, Timings: spec.DefaultTimings(), Clusters: clusters}
	require.NoError(t, s.Validate())
	srv, err := fleetsim.Start(context.Background(), fleetsim.Env{Spec: s, Faults: faults.NewRegistry(1), Log: zerolog.Nop()}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return &harness{t: t, srv: srv}
}

func (h *harness) client(cluster string) *machineapi.Client {
	c, err := machineapi.ForCluster(h.srv.URL+"/kube", cluster, nil)
	require.NoError(h.t, err)
	return c
}

func (h *harness) arm(kind faults.Kind, target string, times int, rate float64) {
	b, _ := json.Marshal(faults.Fault{Kind: kind, Target: target, Times: times, Rate: rate})
	resp, err := http.Post(h.srv.URL+"/faults", "application/json", bytes.NewReader(b))
	require.NoError(h.t, err)
	resp.Body.Close()
	require.Equal(h.t, http.StatusCreated, resp.StatusCode)
}

func (h *harness) truth() simapi.Truth {
	resp, err := http.Get(h.srv.URL + "/truth/machineapi")
	require.NoError(h.t, err)
	defer resp.Body.Close()
	var tr simapi.Truth
	require.NoError(h.t, json.NewDecoder(resp.Body).Decode(&tr))
	return tr
}

// prepared reads what PlanMachineSet needs: the golden record, the
// cluster status and what fleetsim's EC2 says of every AWS MachineSet's
// AMI (as the bump's activity asks it).
func (h *harness) prepared(c *machineapi.Client) (*machineapi.Golden, machineapi.AMIOrigins, machineapi.ClusterStatus) {
	t := h.t
	ctx := context.Background()
	g, err := c.GoldenRecord(ctx)
	require.NoError(t, err)
	cs, err := c.ClusterStatus(ctx)
	require.NoError(t, err)
	sets, _, err := c.ListMachineSets(ctx, "")
	require.NoError(t, err)
	amis := machineapi.AMIOrigins{}
	for _, ms := range sets {
		img, err := ms.Image()
		if err != nil || img.AMI == "" {
			continue
		}
		creds, err := c.AWSCredentials(ctx)
		require.NoError(t, err)
		cl, err := ec2.New(img.Region, h.srv.URL+"/ec2", creds.AccessKeyID, creds.SecretAccessKey, nil)
		require.NoError(t, err)
		got, err := cl.DescribeImage(ctx, img.AMI)
		if ec2.IsNotFound(err) {
			amis[img.AMI] = machineapi.AMIOrigin{Missing: true}
			continue
		}
		require.NoError(t, err)
		amis[img.AMI] = machineapi.AMIOrigin{Owner: got.OwnerID, Name: got.Name}
	}
	return g, amis, cs
}

func TestListGetAndSelector(t *testing.T) {
	h := start(t, spec.SampleCluster("c1", spec.PlatformAWS, true))
	c := h.client("c1")
	ctx := context.Background()
	all, bad, err := c.ListMachineSets(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, bad)
	assert.Len(t, all, 7)
	poolB, _, err := c.ListMachineSets(ctx, "fleetsaga.io/pool=b")
	require.NoError(t, err)
	require.Len(t, poolB, 1)
	assert.Equal(t, "c1-worker-b", poolB[0].Name)

	ms, err := c.GetMachineSet(ctx, "c1-worker-a")
	require.NoError(t, err)
	assert.Equal(t, machineapi.PlatformAWS, ms.Platform)
	assert.Equal(t, int32(1), ms.Replicas)
	assert.NotEmpty(t, ms.ResourceVersion)
	img, err := ms.Image()
	require.NoError(t, err)
	assert.Equal(t, "us-east-1", img.Region)
	assert.Equal(t, spec.SampleBootImages()[0].Images["amd64"].AWS["us-east-1"], img.AMI)

	arm, err := c.GetMachineSet(ctx, "c1-arm64")
	require.NoError(t, err)
	arch, err := arm.Arch()
	require.NoError(t, err)
	assert.Equal(t, "arm64", arch)
	win, err := c.GetMachineSet(ctx, "c1-windows")
	require.NoError(t, err)
	assert.True(t, win.Windows())
}

func TestErrorsAreClassified(t *testing.T) {
	bad := spec.SampleCluster("c1", spec.PlatformAWS, false)
	bad.MachineSets = append(bad.MachineSets, spec.MachineSet{Name: "c1-odd", ProviderSpec: map[string]any{"kind": "OpenStackProviderSpec", "image": "x"}})
	h := start(t, bad)
	c := h.client("c1")
	ctx := context.Background()

	_, err := c.GetMachineSet(ctx, "nope")
	require.Error(t, err)
	assert.True(t, machineapi.IsNotFound(err), "%v", err)
	assert.False(t, machineapi.IsConflict(err))

	// An unknown cluster is a 404 from the API root as well.
	_, err = h.client("no-such-cluster").GetMachineSet(ctx, "x")
	assert.True(t, machineapi.IsNotFound(err), "%v", err)

	odd, err := c.GetMachineSet(ctx, "c1-odd")
	require.NoError(t, err)
	_, err = odd.Image()
	assert.True(t, machineapi.IsMalformed(err), "%v", err)
	g, amis, cs := h.prepared(c)
	p := machineapi.PlanMachineSet(odd, g, amis, cs)
	assert.Equal(t, machineapi.ActionSkip, p.Action)
	assert.Equal(t, machineapi.ReasonUnsupportedPlatform, p.Reason)

	h.arm(faults.ErrorRate, "api/kube", 0, 1)
	_, err = c.GetMachineSet(ctx, "c1-worker-a")
	require.Error(t, err)
	assert.True(t, machineapi.IsTransient(err), "%v", err)
}

func TestGoldenRecordAMIOwnersAndClusterStatus(t *testing.T) {
	up := spec.SampleCluster("up", spec.PlatformGCP, false)
	up.Upgrading = true
	up.MultiArch = true
	up.GoldenStampedRelease = spec.SampleMidRelease
	h := start(t, spec.SampleCluster("c1", spec.PlatformAWS, false), up)
	ctx := context.Background()

	g, amis, cs := h.prepared(h.client("c1"))
	assert.True(t, g.StampedFor(spec.SampleCurrentRelease))
	assert.Equal(t, "4.16.0", g.SkewLimitOCPVersion)
	assert.Equal(t, "9.6.20250523-0", g.Stream.OSVersion("amd64"))
	for _, b := range spec.SampleBootImages() {
		ami := b.Images["amd64"].AWS["us-west-2"]
		if o, ok := amis[ami]; ok {
			assert.Equal(t, machineapi.AWSOwnerRHCOS, o.Owner, "the AMI of %s is Red Hat's", b.Release)
		}
	}
	assert.NotEmpty(t, amis, "EC2 answered for the MachineSets' AMIs")
	assert.Equal(t, machineapi.ClusterStatus{DesiredVersion: spec.SampleCurrentRelease, LatestState: "Completed", Platform: "aws", ControlPlaneArch: "amd64"}, cs)
	assert.False(t, cs.Upgrading())

	g2, _, cs2 := h.prepared(h.client("up"))
	assert.False(t, g2.StampedFor(spec.SampleCurrentRelease))
	assert.Equal(t, spec.SampleMidRelease, g2.ReleaseVersion)
	assert.True(t, cs2.Upgrading())
	assert.True(t, cs2.MultiArch)
	assert.Equal(t, "gcp", cs2.Platform)

	rec, err := h.client("c1").BootImageRecord(ctx)
	require.NoError(t, err)
	assert.Equal(t, machineapi.SkewAutomatic, rec.Mode)
	assert.Equal(t, spec.SampleInstallRelease, rec.OCPVersion)
	assert.Equal(t, "True", rec.UpgradeableStatus)
}

func TestUpgradeAndGoldenStampCompleteByThemselves(t *testing.T) {
	up := spec.SampleCluster("up", spec.PlatformVSphere, false)
	up.Upgrading = true
	up.UpgradeCompletesAfter = spec.Duration{Duration: 10 * time.Minute} // 250 ms scaled
	up.GoldenStampedRelease = spec.SampleMidRelease
	up.GoldenStampAfter = spec.Duration{Duration: 10 * time.Minute}
	h := start(t, up)
	c := h.client("up")
	require.Eventually(t, func() bool {
		g, _, cs := h.prepared(c)
		return !cs.Upgrading() && g.StampedFor(spec.SampleCurrentRelease)
	}, 5*time.Second, 20*time.Millisecond)
}

func TestPlanAndPatchEachPlatform(t *testing.T) {
	for _, platform := range []string{spec.PlatformAWS, spec.PlatformGCP, spec.PlatformAzure, spec.PlatformVSphere} {
		t.Run(platform, func(t *testing.T) {
			h := start(t, spec.SampleCluster("c1", platform, false))
			c := h.client("c1")
			ctx := context.Background()
			g, amis, cs := h.prepared(c)
			current := spec.SampleBootImages()[2]
			for _, name := range []string{"c1-worker-a", "c1-worker-b"} {
				ms, err := c.GetMachineSet(ctx, name)
				require.NoError(t, err)
				p := machineapi.PlanMachineSet(ms, g, amis, cs)
				if platform == spec.PlatformVSphere {
					// The MCO's pkg/controller/bootimage/vsphere_helpers.go: the MCO imports the OVA; fleetsaga refuses.
					assert.Equal(t, machineapi.ActionRefuse, p.Action, "%+v", p)
					assert.Equal(t, machineapi.ReasonVSphereImport, p.Reason)
					continue
				}
				require.Equal(t, machineapi.ActionPatch, p.Action, "%+v", p)
				patched, err := c.PatchImage(ctx, ms, p.Desired)
				require.NoError(t, err)
				img, err := patched.Image()
				require.NoError(t, err)
				assert.True(t, img.Equal(p.Desired), "%v vs %v", img, p.Desired)
				_, amis, _ := h.prepared(c) // EC2 is asked about the new AMI too
				again := machineapi.PlanMachineSet(patched, g, amis, cs)
				assert.Equal(t, machineapi.ActionUpToDate, again.Action)

				// The image the truth sees is the golden one of the platform.
				tr := h.truth().Clusters["c1"].MachineSets[name]
				assert.Equal(t, 1, tr.ImagePatches)
				switch platform {
				case spec.PlatformAWS:
					assert.Equal(t, current.Images["amd64"].AWS["us-east-1"], tr.Image)
				case spec.PlatformGCP:
					assert.Equal(t, "projects/rhcos-cloud/global/images/"+current.Images["amd64"].GCP.Name, tr.Image)
				case spec.PlatformAzure:
					want := current.Images["amd64"].Azure.Gen1
					if name == "c1-worker-b" { // gen2 stays gen2
						want = current.Images["amd64"].Azure.Gen2
					}
					assert.Equal(t, want.Publisher+":"+want.Offer+":"+want.SKU+":"+want.Version, tr.Image)
				}
			}
			if platform == spec.PlatformGCP {
				// Only the boot disk's image changed; other disk fields kept.
				ms, err := c.GetMachineSet(ctx, "c1-worker-a")
				require.NoError(t, err)
				disk := ms.ProviderSpec["disks"].([]any)[0].(map[string]any)
				assert.Equal(t, int64(128), disk["sizeGb"])
				assert.Equal(t, "pd-ssd", disk["type"])
			}
		})
	}
}

func TestPlanSkipReasons(t *testing.T) {
	multi := spec.SampleCluster("multi", spec.PlatformAWS, false)
	multi.MultiArch = true
	odd := spec.SampleCluster("c1", spec.PlatformGCP, true)
	rhel10 := spec.MachineSet{Name: "c1-rhel10", OSStream: "rhel-10"}
	rhel8 := spec.MachineSet{Name: "c1-rhel8", OSStream: "rhel-8"}
	odd.MachineSets = append(odd.MachineSets, rhel10, rhel8)
	h := start(t, odd, multi)
	ctx := context.Background()

	c := h.client("c1")
	g, amis, cs := h.prepared(c)
	sets, _, err := c.ListMachineSets(ctx, "")
	require.NoError(t, err)
	got := map[string]machineapi.Plan{}
	for _, ms := range sets {
		got[ms.Name] = machineapi.PlanMachineSet(ms, g, amis, cs)
	}
	want := map[string]struct {
		a machineapi.Action
		r machineapi.Reason
	}{
		"c1-worker-a": {machineapi.ActionPatch, ""},
		"c1-worker-b": {machineapi.ActionPatch, ""},
		"c1-arm64":    {machineapi.ActionPatch, ""},
		"c1-current":  {machineapi.ActionUpToDate, ""},
		"c1-custom":   {machineapi.ActionSkip, machineapi.ReasonCustomImage},
		"c1-owned":    {machineapi.ActionSkip, machineapi.ReasonOwned},
		"c1-windows":  {machineapi.ActionSkip, machineapi.ReasonWindows},
		"c1-rhel10":   {machineapi.ActionSkip, machineapi.ReasonUnsupportedOSStream},
		"c1-rhel8":    {machineapi.ActionSkip, machineapi.ReasonUnsupportedOSStream},
	}
	require.Len(t, got, len(want))
	for name, w := range want {
		assert.Equal(t, w.a, got[name].Action, "%s: %+v", name, got[name])
		assert.Equal(t, w.r, got[name].Reason, "%s: %+v", name, got[name])
	}
	assert.Equal(t, "arm64", got["c1-arm64"].Arch)
	assert.Contains(t, got["c1-arm64"].Desired.GCPImage, "aarch64")

	// Multi-arch cluster: no arch annotation → skip.
	mc := h.client("multi")
	g, amis, cs = h.prepared(mc)
	ms, err := mc.GetMachineSet(ctx, "multi-worker-a")
	require.NoError(t, err)
	p := machineapi.PlanMachineSet(ms, g, amis, cs)
	assert.Equal(t, machineapi.ReasonNoArch, p.Reason)
}

func TestPatchWithStaleResourceVersionConflicts(t *testing.T) {
	h := start(t, spec.SampleCluster("c1", spec.PlatformAWS, false))
	c := h.client("c1")
	ctx := context.Background()
	g, amis, cs := h.prepared(c)
	ms, err := c.GetMachineSet(ctx, "c1-worker-b")
	require.NoError(t, err)
	p := machineapi.PlanMachineSet(ms, g, amis, cs)

	// Someone else changes it first (a replicas bump): our read is stale.
	_, err = c.SetReplicas(ctx, ms, 0)
	require.NoError(t, err) // same value: no-op, resourceVersion unchanged
	fresh, err := c.GetMachineSet(ctx, "c1-worker-b")
	require.NoError(t, err)
	require.Equal(t, ms.ResourceVersion, fresh.ResourceVersion)
	_, err = c.SetReplicas(ctx, fresh, 1)
	require.NoError(t, err)

	_, err = c.PatchImage(ctx, ms, p.Desired)
	require.Error(t, err)
	assert.True(t, machineapi.IsConflict(err), "%v", err)
	assert.False(t, machineapi.IsTransient(err))

	// Retry on a fresh read succeeds.
	fresh, err = c.GetMachineSet(ctx, "c1-worker-b")
	require.NoError(t, err)
	_, err = c.PatchImage(ctx, fresh, p.Desired)
	require.NoError(t, err)
	tr := h.truth().Clusters["c1"].MachineSets["c1-worker-b"]
	assert.Equal(t, 1, tr.Conflicts)
	assert.Equal(t, p.Desired.AMI, tr.Image)
}

func TestPatchConflictFault(t *testing.T) {
	h := start(t, spec.SampleCluster("c1", spec.PlatformAWS, false))
	h.arm(faults.PatchConflict, "machineset/c1/c1-worker-a", 1, 0)
	c := h.client("c1")
	ctx := context.Background()
	g, amis, cs := h.prepared(c)
	ms, err := c.GetMachineSet(ctx, "c1-worker-a")
	require.NoError(t, err)
	p := machineapi.PlanMachineSet(ms, g, amis, cs)

	_, err = c.PatchImage(ctx, ms, p.Desired)
	assert.True(t, machineapi.IsConflict(err), "%v", err)
	// The object changed underneath: the old resourceVersion stays stale.
	_, err = c.PatchImage(ctx, ms, p.Desired)
	assert.True(t, machineapi.IsConflict(err), "%v", err)
	fresh, err := c.GetMachineSet(ctx, "c1-worker-a")
	require.NoError(t, err)
	assert.NotEqual(t, ms.ResourceVersion, fresh.ResourceVersion)
	_, err = c.PatchImage(ctx, fresh, p.Desired)
	require.NoError(t, err)
	tr := h.truth().Clusters["c1"].MachineSets["c1-worker-a"]
	assert.Equal(t, 2, tr.Conflicts)
	assert.Equal(t, p.Desired.AMI, tr.Image)
}

func TestMachineSetRevertFault(t *testing.T) {
	h := start(t, spec.SampleCluster("c1", spec.PlatformGCP, false))
	h.arm(faults.MachineSetRevert, "machineset/c1/c1-worker-a", 0, 0)
	c := h.client("c1")
	ctx := context.Background()
	g, amis, cs := h.prepared(c)
	for i := 1; i <= 3; i++ {
		ms, err := c.GetMachineSet(ctx, "c1-worker-a")
		require.NoError(t, err)
		p := machineapi.PlanMachineSet(ms, g, amis, cs)
		require.Equal(t, machineapi.ActionPatch, p.Action, "attempt %d: reverted, so it needs the same patch again", i)
		patched, err := c.PatchImage(ctx, ms, p.Desired)
		require.NoError(t, err)
		img, _ := patched.Image()
		assert.True(t, img.Equal(p.Desired), "the patch response shows our image")
	}
	tr := h.truth().Clusters["c1"].MachineSets["c1-worker-a"]
	assert.Equal(t, 3, tr.Reverts)
	assert.Equal(t, 3, tr.ImagePatches)
	assert.Equal(t, "projects/rhcos-cloud/global/images/"+spec.SampleBootImages()[0].Images["amd64"].GCP.Name, tr.Image, "reverted to the install image")
	// Other MachineSets are not affected.
	ms, err := c.GetMachineSet(ctx, "c1-worker-b")
	require.NoError(t, err)
	p := machineapi.PlanMachineSet(ms, g, amis, cs)
	_, err = c.PatchImage(ctx, ms, p.Desired)
	require.NoError(t, err)
	assert.Equal(t, 0, h.truth().Clusters["c1"].MachineSets["c1-worker-b"].Reverts)
}

func waitMachines(t *testing.T, c *machineapi.Client, ms string, ok func([]machineapi.Machine) bool) []machineapi.Machine {
	t.Helper()
	var got []machineapi.Machine
	require.Eventually(t, func() bool {
		var err error
		got, err = c.Machines(context.Background(), ms)
		return err == nil && ok(got)
	}, 5*time.Second, 10*time.Millisecond)
	return got
}

func TestScaleUpJoinsAfterBootTimeAndScaleDownRemovesNewest(t *testing.T) {
	h := start(t, spec.SampleCluster("c1", spec.PlatformAWS, false))
	c := h.client("c1")
	ctx := context.Background()
	g, amis, cs := h.prepared(c)
	ms, err := c.GetMachineSet(ctx, "c1-worker-a")
	require.NoError(t, err)
	p := machineapi.PlanMachineSet(ms, g, amis, cs)
	ms, err = c.PatchImage(ctx, ms, p.Desired)
	require.NoError(t, err)

	began := time.Now()
	ms, err = c.SetReplicas(ctx, ms, 2)
	require.NoError(t, err)
	machines, err := c.Machines(ctx, "c1-worker-a")
	require.NoError(t, err)
	require.Len(t, machines, 2)
	assert.True(t, machines[0].Joined(), "the existing machine")
	assert.False(t, machines[1].Joined(), "the new one is still booting")
	assert.Equal(t, simapi.PhaseProvisioning, machines[1].Phase)
	assert.True(t, machines[1].Image.Equal(p.Desired), "new machines boot the patched image")

	waitMachines(t, c, "c1-worker-a", func(m []machineapi.Machine) bool { return len(m) == 2 && m[1].Joined() })
	assert.GreaterOrEqual(t, time.Since(began), 90*time.Millisecond, "joins after MachineBootTime (4 min / 2400)")
	fresh, err := c.GetMachineSet(ctx, "c1-worker-a")
	require.NoError(t, err)
	assert.Equal(t, int32(2), fresh.ReadyReplicas)

	_, err = c.SetReplicas(ctx, fresh, 1)
	require.NoError(t, err)
	left, err := c.Machines(ctx, "c1-worker-a")
	require.NoError(t, err)
	require.Len(t, left, 1)
	assert.Equal(t, machines[0].Name, left[0].Name, "the newest machine goes first")
	tr := h.truth().Clusters["c1"].MachineSets["c1-worker-a"]
	assert.Equal(t, int64(1), tr.Replicas)
	assert.Equal(t, 1, tr.Joined)
}

func TestMachineBootFailureFault(t *testing.T) {
	h := start(t, spec.SampleCluster("c1", spec.PlatformGCP, false))
	h.arm(faults.MachineBootFailure, "machineset/c1/c1-worker-b", 0, 0)
	c := h.client("c1")
	ctx := context.Background()
	ms, err := c.GetMachineSet(ctx, "c1-worker-b")
	require.NoError(t, err)
	_, err = c.SetReplicas(ctx, ms, 1)
	require.NoError(t, err)
	got := waitMachines(t, c, "c1-worker-b", func(m []machineapi.Machine) bool {
		return len(m) == 1 && m[0].Phase == simapi.PhaseProvisioned
	})
	time.Sleep(150 * time.Millisecond)
	got, err = c.Machines(ctx, "c1-worker-b")
	require.NoError(t, err)
	assert.False(t, got[0].Joined(), "never joins")
	assert.Equal(t, 0, h.truth().Clusters["c1"].MachineSets["c1-worker-b"].Joined)
}

func TestUnknownImageDoesNotBoot(t *testing.T) {
	h := start(t, spec.SampleCluster("c1", spec.PlatformAWS, false))
	c := h.client("c1")
	ctx := context.Background()
	ms, err := c.GetMachineSet(ctx, "c1-worker-b")
	require.NoError(t, err)
	ms, err = c.PatchImage(ctx, ms, machineapi.BootImage{Platform: machineapi.PlatformAWS, AMI: "ami-doesnotexist"})
	require.NoError(t, err)
	_, err = c.SetReplicas(ctx, ms, 1)
	require.NoError(t, err)
	got := waitMachines(t, c, "c1-worker-b", func(m []machineapi.Machine) bool {
		return len(m) == 1 && m[0].Phase == simapi.PhaseFailed
	})
	assert.Contains(t, got[0].Error, "ami-doesnotexist")
}

// The boot image record and the Upgradeable condition are the operator's:
// fleetsaga only reads them (here the test writes them as the operator
// does, through the status subresource).
func TestBootImageRecordAndUpgradeable(t *testing.T) {
	h := start(t, spec.SampleCluster("c1", spec.PlatformAWS, false))
	c := h.client("c1")
	ctx := context.Background()
	body := `{"status":{"bootImageSkewEnforcementStatus":{"mode":"Manual","manual":{"mode":"RHCOSVersion","rhcosVersion":"9.2"}},
		"conditions":[{"type":"Upgradeable","status":"False","reason":"ClusterBootImageSkewError","message":"boot image too old","lastTransitionTime":"2025-01-01T00:00:00Z"}]}}`
	req, err := http.NewRequest(http.MethodPatch, h.srv.URL+"/kube/clusters/c1/apis/operator.openshift.io/v1/machineconfigurations/cluster/status", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	rec, err := c.BootImageRecord(ctx)
	require.NoError(t, err)
	assert.Equal(t, machineapi.SkewManual, rec.Mode)
	assert.Equal(t, "9.2", rec.RHCOSVersion)
	assert.Equal(t, "False", rec.UpgradeableStatus)
	assert.Equal(t, "ClusterBootImageSkewError", rec.UpgradeableReason)
}

func TestRHELMajorAndGCPPathParsing(t *testing.T) {
	for in, want := range map[string]int{"9.6.20250523-0": 9, "10.0.20250901-0": 10, "418.94.202501210000-0": 9, "416.92.2024": 9} {
		got, err := machineapi.RHELMajor(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "x.y", "9", "418.x.1"} {
		_, err := machineapi.RHELMajor(bad)
		assert.Error(t, err, bad)
	}
	p, n, ok := machineapi.ParseGCPImage("projects/rhcos-cloud/global/images/rhcos-9-6")
	assert.True(t, ok)
	assert.Equal(t, "rhcos-cloud", p)
	assert.Equal(t, "rhcos-9-6", n)
	_, _, ok = machineapi.ParseGCPImage("https://www.googleapis.com/compute/v1/projects/acme/global/images/x")
	assert.True(t, ok)
	_, _, ok = machineapi.ParseGCPImage("projects/acme/zones/x")
	assert.False(t, ok)
}
