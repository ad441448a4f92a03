package mgsupdate_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleet/openapi"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

// mgsAct runs the MGS activities (without a ledger) against fleetsim.
type mgsAct struct {
	t    *testing.T
	sim  *fleetsim.Server
	reg  *faults.Registry
	a    *mgsupdate.MGSActivities
	env  *testsuite.TestActivityEnvironment
	dir  string
	spec *spec.Spec
	reqs *requestLog
}

var sled2 = mgs.SpIdentifier{Type: mgs.SpTypeSled, Slot: 2}

func newMGSAct(t *testing.T, mutate ...func(*spec.Spec)) *mgsAct {
	t.Helper()
	s := &spec.Spec{Seed: 5, SpeedUp: 100, Timings: spec.DefaultTimings()}
	s.Timings.FlashBytesPerSecond = 10 << 10
	s.Timings.Phase2BytesPerSecond = 5 << 10
	s.Timings.SPResetTime = spec.Duration{Duration: 20 * time.Second}
	s.Timings.HostBootTime = spec.Duration{Duration: 10 * time.Second}
	s.Racks = spec.GenerateRacks(4, 5)
	for i := range s.Racks {
		s.Racks[i].Owners = spec.NoOwners() // direct mode below: fleetsaga alone
	}
	for _, m := range mutate {
		m(s)
	}
	require.NoError(t, s.Validate())
	reg := faults.NewRegistry(5)
	sim, err := fleetsim.Start(context.Background(), fleetsim.Env{Spec: s, Faults: reg, Log: zerolog.Nop()}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	var ts testsuite.WorkflowTestSuite
	reqs := &requestLog{n: map[string]int{}}
	m := &mgsAct{t: t, sim: sim, reg: reg, env: ts.NewTestActivityEnvironment(), dir: t.TempDir(), spec: s, reqs: reqs,
		a: mgsupdate.NewMGSActivities(directEndpoints(sim.URL), &http.Client{Timeout: 10 * time.Second, Transport: mgsChecked{t, reqs}}, nil, "test")}
	m.a.ArtifactRoot = m.dir
	m.env.RegisterActivity(m.a)
	return m
}

var mgsContract = openapi.MustLoad(openapi.MGS)

// directEndpoints are a fleetsim without a database, in direct mode: its
// racks have no Nexus.
func directEndpoints(url string) fleet.Endpoints {
	e := fleet.FromFleetsim(url, "")
	e.DirectMode = true
	return e
}

// mgsChecked checks every request the activities send to an MGS instance
// (/mgs/{i}/...) or a sled-agent (/sled-agent/{sled}/...) and every
// response they get against that API's OpenAPI document, and counts them
// by method and path.
type mgsChecked struct {
	t    *testing.T
	reqs *requestLog
}

var sledAgentContract = openapi.MustLoad(openapi.SledAgent)

func (c mgsChecked) RoundTrip(req *http.Request) (*http.Response, error) {
	c.reqs.add(req.Method + " " + req.URL.Path)
	if rest, ok := strings.CutPrefix(req.URL.Path, "/mgs/"); ok {
		idx, _, _ := strings.Cut(rest, "/")
		tr := &openapi.Transport{Contract: mgsContract, Prefix: "/mgs/" + idx, Rep: c.t, Responses: true}
		return tr.RoundTrip(req)
	}
	if rest, ok := strings.CutPrefix(req.URL.Path, "/sled-agent/"); ok {
		id, _, _ := strings.Cut(rest, "/")
		tr := &openapi.Transport{Contract: sledAgentContract, Prefix: "/sled-agent/" + id, Rep: c.t, Responses: true}
		return tr.RoundTrip(req)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// requestLog counts requests by "METHOD path".
type requestLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *requestLog) add(k string) {
	l.mu.Lock()
	l.n[k]++
	l.mu.Unlock()
}

func (l *requestLog) count(k string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[k]
}

func (m *mgsAct) artifact(version string) mgsupdate.ArtifactRef {
	path := filepath.Join(m.dir, "sp-"+version+".bin")
	sum, err := simmgs.WriteImageFile(path, simmgs.ImageHeader{Component: simmgs.CompSP, Version: version}, 256<<10)
	require.NoError(m.t, err)
	return mgsupdate.ArtifactRef{Version: version, SHA256: sum, Path: path}
}

func exec[O any](m *mgsAct, fn any, in any) (O, error) {
	var out O
	v, err := m.env.ExecuteActivity(fn, in)
	if err != nil {
		return out, err
	}
	require.NoError(m.t, v.Get(&out))
	return out, nil
}

func mgsErrType(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Type()
	}
	return ""
}

func (m *mgsAct) truth() simmgs.SPTruth {
	return m.sim.Truth()[simmgs.Name].(simmgs.Truth).Racks[0].SPs[2]
}

func (m *mgsAct) start(art mgsupdate.ArtifactRef, id uuid.UUID) mgsupdate.StartUpdateResult {
	m.t.Helper()
	sr, err := exec[mgsupdate.StartUpdateResult](m, m.a.MGSStartUpdate, mgsupdate.StartUpdateInput{
		SP: sled2, Component: mgs.ComponentSP, UpdateID: id, Artifact: art, PollInterval: 10 * time.Millisecond})
	require.NoError(m.t, err)
	return sr
}

func (m *mgsAct) wait(id uuid.UUID, ours bool) mgsupdate.WaitUpdateResult {
	m.t.Helper()
	wr, err := exec[mgsupdate.WaitUpdateResult](m, m.a.MGSWaitUpdate, mgsupdate.WaitUpdateInput{
		SP: sled2, Component: mgs.ComponentSP, UpdateID: id, Ours: ours,
		PollInterval: 10 * time.Millisecond, ProgressTimeout: 500 * time.Millisecond, TakeoverTimeout: 300 * time.Millisecond})
	require.NoError(m.t, err)
	return wr
}

func TestMGSPrecheckVerifiesArtifactFirst(t *testing.T) {
	m := newMGSAct(t)
	art := m.artifact("1.1.0")
	pre, err := exec[mgsupdate.PrecheckResult](m, m.a.MGSPrecheck, mgsupdate.PrecheckInput{SP: sled2, Component: mgs.ComponentSP, Artifacts: []mgsupdate.ArtifactRef{art}})
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", pre.Active.Version)
	assert.Equal(t, "0.9.0", pre.Inactive.Version)
	assert.Equal(t, spec.GeneratedPart, pre.Model)
	assert.Equal(t, mgs.UpdateNone, pre.Status.State)
	assert.EqualValues(t, []int64{256 << 10}, pre.ArtifactSizes)

	bad := art
	bad.SHA256 = "00" + art.SHA256[2:]
	_, err = exec[mgsupdate.PrecheckResult](m, m.a.MGSPrecheck, mgsupdate.PrecheckInput{SP: sled2, Component: mgs.ComponentSP, Artifacts: []mgsupdate.ArtifactRef{bad}})
	assert.Equal(t, failure.ArtifactMismatch, mgsErrType(err))
	missing := art
	missing.Path = filepath.Join(m.dir, "nope")
	_, err = exec[mgsupdate.PrecheckResult](m, m.a.MGSPrecheck, mgsupdate.PrecheckInput{SP: sled2, Component: mgs.ComponentSP, Artifacts: []mgsupdate.ArtifactRef{missing}})
	assert.Equal(t, failure.ArtifactUnavailable, mgsErrType(err))

	// Host boot flash: the active slot, its hash, the inactive slot.
	pre, err = exec[mgsupdate.PrecheckResult](m, m.a.MGSPrecheck, mgsupdate.PrecheckInput{SP: sled2, Component: mgs.ComponentHostBootFlash})
	require.NoError(t, err)
	assert.Equal(t, uint16(0), pre.Active.Slot)
	assert.Len(t, pre.Active.SHA256, 64)
	assert.Equal(t, uint16(1), pre.Inactive.Slot)

	// An unknown SP is a non-retryable MGS rejection.
	_, err = exec[mgsupdate.PrecheckResult](m, m.a.MGSPrecheck, mgsupdate.PrecheckInput{SP: mgs.SpIdentifier{Type: mgs.SpTypeSled, Slot: 99}, Component: mgs.ComponentSP})
	assert.Equal(t, failure.MGSRejected+":InvalidSp", mgsErrType(err))
}

func TestMGSStartIsIdempotentAndReportsBusy(t *testing.T) {
	m := newMGSAct(t)
	art := m.artifact("1.1.0")
	id := uuid.New()
	sr := m.start(art, id)
	assert.True(t, sr.Started)
	// A retry (e.g. after a lost reply) finds our ID on the SP: not sent again.
	sr = m.start(art, id)
	assert.True(t, sr.Started)
	assert.Len(t, m.truth().Deliveries, 1)
	// Another ID: busy, with the current update's status.
	sr = m.start(art, uuid.New())
	assert.True(t, sr.Busy)
	assert.Equal(t, id, sr.Current.ID)
	assert.Equal(t, mgsupdate.WaitComplete, m.wait(id, true).Outcome)
}

func TestMGSStartWaitsForOtherComponent(t *testing.T) {
	m := newMGSAct(t)
	host := simmgs.MakeImage(simmgs.ImageHeader{Component: simmgs.CompHost, Version: "2"}, 64<<10)
	c := mgs.New(m.sim.URL+"/mgs/0", nil)
	require.NoError(t, c.UpdateStart(context.Background(), sled2, mgs.ComponentHostBootFlash, uuid.New(), 1, bytes.NewReader(host), int64(len(host))))
	sr := m.start(m.artifact("1.1.0"), uuid.New())
	assert.True(t, sr.Started, "started once the host flash update was done")
}

func TestMGSWaitOutcomes(t *testing.T) {
	t.Run("lost", func(t *testing.T) {
		m := newMGSAct(t)
		m.reg.Arm(faults.Fault{Kind: faults.SPResetMidDelivery, Target: "sp/sled/2", AfterPercent: 50, Times: 1})
		id := uuid.New()
		m.start(m.artifact("1.1.0"), id)
		assert.Equal(t, mgsupdate.WaitLost, m.wait(id, true).Outcome)
	})
	t.Run("failed is aborted", func(t *testing.T) {
		m := newMGSAct(t)
		m.reg.Arm(faults.Fault{Kind: faults.UpdateFailed, Target: "sp/sled/2", AfterPercent: 50, Times: 1})
		id := uuid.New()
		m.start(m.artifact("1.1.0"), id)
		wr := m.wait(id, true)
		assert.Equal(t, mgsupdate.WaitFailed, wr.Outcome)
		assert.Equal(t, mgs.UpdateFailed, wr.Status.State)
		assert.Equal(t, "aborted", m.truth().Updates["sp"]["state"])
	})
	t.Run("stuck is aborted", func(t *testing.T) {
		m := newMGSAct(t)
		m.reg.Arm(faults.Fault{Kind: faults.SPStuck, Target: "sp/sled/2", AfterPercent: 20, Times: 1})
		id := uuid.New()
		m.start(m.artifact("1.1.0"), id)
		wr := m.wait(id, true)
		assert.Equal(t, mgsupdate.WaitStuck, wr.Outcome)
		assert.Less(t, wr.Bytes, wr.Total)
		assert.Equal(t, "aborted", m.truth().Updates["sp"]["state"])
	})
	t.Run("foreign complete, nobody resets", func(t *testing.T) {
		m := newMGSAct(t)
		m.reg.Arm(faults.Fault{Kind: faults.ForeignUpdate, Target: "sp/sled/2", Times: 1})
		sr := m.start(m.artifact("1.1.0"), uuid.New())
		require.True(t, sr.Busy)
		assert.Equal(t, mgsupdate.WaitTakeover, m.wait(sr.Current.ID, false).Outcome)
	})
	t.Run("foreign complete, its actor resets", func(t *testing.T) {
		m := newMGSAct(t)
		m.reg.Arm(faults.Fault{Kind: faults.ForeignUpdate, Target: "sp/sled/2", Latency: "50ms", Times: 1})
		sr := m.start(m.artifact("1.1.0"), uuid.New())
		require.True(t, sr.Busy)
		assert.Equal(t, mgsupdate.WaitForeignDone, m.wait(sr.Current.ID, false).Outcome)
	})
}

func TestSPPostUpdateLostReplyIsNotRepeated(t *testing.T) {
	m := newMGSAct(t)
	id := uuid.New()
	m.start(m.artifact("1.1.0"), id)
	require.Equal(t, mgsupdate.WaitComplete, m.wait(id, true).Outcome)
	m.reg.Arm(faults.Fault{Kind: faults.ResetReplyLost, Target: "sp/sled/2", Times: 2})
	pr, err := exec[mgsupdate.PostUpdateResult](m, m.a.SPPostUpdate, mgsupdate.PostUpdateInput{
		SP: sled2, UpdateID: id, TargetVersion: "1.1.0", ResetRetryInterval: 100 * time.Millisecond,
		NewVersionTimeout: 5 * time.Second, PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.PostActivated, pr.Outcome)
	assert.Equal(t, 1, pr.Resets)
	assert.Equal(t, 1, m.truth().Resets)
	// Run again (an activity retry): nothing to do, no reset.
	pr, err = exec[mgsupdate.PostUpdateResult](m, m.a.SPPostUpdate, mgsupdate.PostUpdateInput{
		SP: sled2, UpdateID: id, TargetVersion: "1.1.0", ResetRetryInterval: 100 * time.Millisecond,
		NewVersionTimeout: 5 * time.Second, PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, 0, pr.Resets)
	assert.Equal(t, 1, m.truth().Resets)
}

// A reset MGS answers 503 after it happened (its watchdog disarm or its
// wait for the SP failed): the reset is not sent again, through this MGS
// or the other one, inside the watchdog window; the SP's new version is
// what tells that it happened (omicron's driver: only a transport error
// moves the reset to the next MGS).
func TestSPPostUpdateResetAnswered503IsNotRepeated(t *testing.T) {
	m := newMGSAct(t)
	id := uuid.New()
	m.start(m.artifact("1.1.0"), id)
	require.Equal(t, mgsupdate.WaitComplete, m.wait(id, true).Outcome)
	m.reg.Arm(faults.Fault{Kind: faults.ResetErrorAfterReset, Target: "sp/sled/2", Times: 1})
	pr, err := exec[mgsupdate.PostUpdateResult](m, m.a.SPPostUpdate, mgsupdate.PostUpdateInput{
		SP: sled2, UpdateID: id, TargetVersion: "1.1.0", ResetRetryInterval: 100 * time.Millisecond,
		NewVersionTimeout: 5 * time.Second, PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.PostActivated, pr.Outcome)
	assert.Equal(t, 1, m.truth().Resets, "one reset: the 503 was not followed by another through the other MGS")
	assert.Equal(t, "1.1.0", m.truth().SP.Active.Version)
}

func TestSPPostUpdateNotActivated(t *testing.T) {
	m := newMGSAct(t)
	id := uuid.New()
	m.start(m.artifact("1.1.0"), id)
	require.Equal(t, mgsupdate.WaitComplete, m.wait(id, true).Outcome)
	// mgs/0 goes down while it resets the SP: the watchdog rolls the SP back.
	// The activity resets through mgs/0 (the instance that answered last).
	go func() {
		for m.truth().Resets == 0 {
			time.Sleep(2 * time.Millisecond)
		}
		m.reg.Arm(faults.Fault{Kind: faults.MGSDown, Target: "mgs/0"})
	}()
	pr, err := exec[mgsupdate.PostUpdateResult](m, m.a.SPPostUpdate, mgsupdate.PostUpdateInput{
		SP: sled2, UpdateID: id, TargetVersion: "1.1.0", ResetRetryInterval: 100 * time.Millisecond,
		NewVersionTimeout: 5 * time.Second, PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.PostNotActivated, pr.Outcome)
	assert.Equal(t, "1.0.0", m.truth().SP.Active.Version)
}

func TestHostActivitiesFollowPhase2ThroughSP(t *testing.T) {
	m := newMGSAct(t)
	_, p2Ref, _ := m.flashHostPhase1(t)

	// mgs/0 is down: phase 2 goes to mgs/1 only and the SP fetches through it.
	m.reg.Arm(faults.Fault{Kind: faults.MGSDown, Target: "mgs/0"})
	_, err := m.env.ExecuteActivity(m.a.HostPostUpdate, mgsupdate.HostPostUpdateInput{SP: sled2, NewSlot: 1, Phase2: p2Ref})
	require.NoError(t, err)
	res, err := exec[mgsupdate.HostWaitBootResult](m, m.a.HostWaitBoot, mgsupdate.HostWaitBootInput{
		SP: sled2, NewSlot: 1, Phase2ID: phase2ID(t, p2Ref.Path), Timeout: 10 * time.Second, PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	assert.True(t, res.Booted)
	assert.EqualValues(t, 64<<10, res.Offset)
	assert.Equal(t, 1, *m.truth().Host.AttachedMGS)

	// A stale record (another image) is not taken for progress.
	_, err = m.env.ExecuteActivity(m.a.HostWaitBoot, mgsupdate.HostWaitBootInput{
		SP: sled2, NewSlot: 1, Phase2ID: "ab" + phase2ID(t, p2Ref.Path)[2:], Timeout: 200 * time.Millisecond, PollInterval: 10 * time.Millisecond})
	assert.Equal(t, failure.HostBootTimeout, mgsErrType(err))
}

// phase2ID is the ID at MGS (and in the SP's truth) of the phase 2 image
// at path: its header's SHA-256.
func phase2ID(t *testing.T, path string) string {
	t.Helper()
	id, err := simmgs.ReadPhase2ID(path)
	require.NoError(t, err)
	return id
}

// flashHostPhase1 writes a 64 KiB phase 2 image and its phase 1, delivers
// phase 1 to sled2's host boot flash slot 1 and waits until the SP has it.
func (m *mgsAct) flashHostPhase1(t *testing.T) (p1sum string, p2Ref mgsupdate.ArtifactRef, id uuid.UUID) {
	t.Helper()
	p2 := simmgs.MakePhase2Image("2", 64<<10)
	p2Path := filepath.Join(m.dir, "p2.bin")
	require.NoError(t, os.WriteFile(p2Path, p2, 0o644))
	p2Ref = mgsupdate.ArtifactRef{Version: "2", SHA256: simmgs.SHA256Hex(p2), Path: p2Path}
	p1Path := filepath.Join(m.dir, "p1.bin")
	p1sum, err := simmgs.WriteImageFile(p1Path, simmgs.ImageHeader{Component: simmgs.CompHost, Version: "2", Phase2: simmgs.Phase2ID(p2)}, 32<<10)
	require.NoError(t, err)
	id = uuid.New()
	sr, err := exec[mgsupdate.StartUpdateResult](m, m.a.MGSStartUpdate, mgsupdate.StartUpdateInput{
		SP: sled2, Component: mgs.ComponentHostBootFlash, FirmwareSlot: 1, UpdateID: id,
		Artifact: mgsupdate.ArtifactRef{Version: "2", SHA256: p1sum, Path: p1Path}})
	require.NoError(t, err)
	require.True(t, sr.Started)
	wr, err := exec[mgsupdate.WaitUpdateResult](m, m.a.MGSWaitUpdate, mgsupdate.WaitUpdateInput{
		SP: sled2, Component: mgs.ComponentHostBootFlash, UpdateID: id, Ours: true, PollInterval: 10 * time.Millisecond, ProgressTimeout: 5 * time.Second})
	require.NoError(t, err)
	require.Equal(t, mgsupdate.WaitComplete, wr.Outcome)
	return p1sum, p2Ref, id
}

// An archive MGS cannot read (not a Hubris archive: 503 UpdateFailed
// "hubris archive error") is refused for good, like one for another
// board: the start ends ImageRefused after re-reading the SP, instead of
// being retried (and the image sent again) for the retry budget.
func TestStartRefusedForABadArchiveEndsTheAttempt(t *testing.T) {
	m := newMGSAct(t)
	path := filepath.Join(m.dir, "not-an-archive.bin")
	body := bytes.Repeat([]byte("not a hubris archive "), 4096)
	require.NoError(t, os.WriteFile(path, body, 0o644))
	art := mgsupdate.ArtifactRef{Version: "1.1.0", SHA256: simmgs.SHA256Hex(body), Path: path}
	_, err := m.env.ExecuteActivity(m.a.MGSStartUpdate, mgsupdate.StartUpdateInput{
		SP: sled2, Component: mgs.ComponentSP, UpdateID: uuid.New(), Artifact: art, PollInterval: 10 * time.Millisecond})
	require.Error(t, err)
	assert.Equal(t, failure.ImageRefused, mgsErrType(err), "%v", err)
	assert.Empty(t, m.truth().Deliveries, "nothing was written")
}

// phase2ToDisk is a HostPhase2ToDisk input writing a 64 KiB phase 2
// (version 2.0.0) for sl's SP to its inactive slot, through the sled-agent
// of the sled sledID names; the image is in the test's directory.
func (m *mgsAct) phase2ToDisk(t *testing.T, sl spec.Sled, sledID uuid.UUID) mgsupdate.HostPhase2Input {
	t.Helper()
	active := uint16(sl.Host.ActiveSlot)
	p2 := simmgs.MakePhase2Image("2.0.0", 64<<10)
	path := filepath.Join(m.dir, "phase2.bin")
	require.NoError(t, os.WriteFile(path, p2, 0o644))
	return mgsupdate.HostPhase2Input{Serial: sl.Serial, SledID: sledID, ActiveSlot: active, Slot: 1 - active,
		Phase2:   mgsupdate.ArtifactRef{Version: "2.0.0", SHA256: simmgs.SHA256Hex(p2), Path: path},
		Deadline: time.Now().Add(30 * time.Second), PollInterval: 10 * time.Millisecond}
}
