package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// spTargetVersion is the version every run flashes (one step ahead of the
// generated racks).
const spTargetVersion = "1.1.0"

// maxPlanUpdates mirrors workflows.maxRolloutUpdates (unexported): a
// rollout plan holds at most 400 updates.
const maxPlanUpdates = 400

// spMGSTimeScale: the MGS update's pacing (status poll interval, pause
// between attempts) is the real devices' (docs/CONFORMANCE.md §B) divided by the same
// speed-up as the devices. Failure-detection bounds (heartbeat, progress
// and takeover timeouts) keep their defaults: they cost nothing when all
// goes well.
func spTiming(speedUp float64) mgsupdate.MGSTiming {
	scale := func(d time.Duration) time.Duration {
		return max(time.Duration(float64(d)/speedUp), 10*time.Millisecond)
	}
	return mgsupdate.MGSTiming{
		PollInterval: scale(3 * time.Second),
		AttemptDelay: scale(60 * time.Second),
	}
}

type spDriver struct {
	cfg *Config

	mu       sync.Mutex
	image    []byte
	artifact mgsupdate.Artifact
	sleds    []spec.Sled
	speedUp  float64
}

func (*spDriver) kind() workflows.Kind { return workflows.KindSPFirmware }

func (*spDriver) targetWorkflow() string { return "SPFirmwareUpdate" }

func (d *spDriver) spec(n int, speedUp float64) (*spec.Spec, error) {
	s, err := spec.Generate(spec.GenerateOptions{Sleds: n, Seed: d.cfg.Seed, SpeedUp: speedUp})
	if err != nil {
		return nil, err
	}
	s.Timings = benchTimings()
	// Nexus's owners (on by default, as on a real rack) are off here: the
	// benchmark measures fleetsaga's SP firmware throughput against the
	// devices, comparable with its recorded baselines; the executor's config
	// pushes to every sled and the owner lookup before each update would
	// change what it measures. Owner mode has its own tests.
	for i := range s.Racks {
		s.Racks[i].Owners = spec.NoOwners()
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sleds = s.Racks[0].Sleds
	d.speedUp = speedUp
	if d.image == nil {
		if err := d.writeArtifact(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// writeArtifact writes the simulated SP image the workers read (a local
// path: every worker runs on this machine).
func (d *spDriver) writeArtifact() error {
	dir, err := d.cfg.artifactRoot()
	if err != nil {
		return err
	}
	h := simmgs.ImageHeader{Component: mgs.ComponentSP, Version: spTargetVersion, Board: "gimlet-e", Name: "gimlet"}
	d.image = simmgs.MakeImage(h, int(d.cfg.SPImageSize))
	path := filepath.Join(dir, fmt.Sprintf("sp-%s-%d.img", spTargetVersion, len(d.image)))
	if err := os.WriteFile(path, d.image, 0o644); err != nil {
		return err
	}
	d.artifact = mgsupdate.Artifact{Version: spTargetVersion, SHA256: simmgs.SHA256Hex(d.image), Path: path}
	return nil
}

func (d *spDriver) deviceTime(s *spec.Spec) (time.Duration, string) {
	return spDeviceTime(s, int64(len(d.image)))
}

func (d *spDriver) input(s spec.Sled) mgsupdate.SPFirmwareInput {
	return mgsupdate.SPFirmwareInput{
		SP:       mgsupdate.SPTarget{Type: mgs.SpTypeSled, Slot: uint16(s.Cubby), Serial: s.Serial, Part: s.Part},
		Artifact: d.artifact,
		Timing:   spTiming(d.speedUp),
	}
}

func (d *spDriver) run(ctx context.Context, c client.Client, n, p int) (outcome, error) {
	d.mu.Lock()
	sleds := d.sleds
	d.mu.Unlock()
	if len(sleds) != n {
		return outcome{}, fmt.Errorf("fleet has %d sleds, want %d", len(sleds), n)
	}
	if d.cfg.SPMode == "direct" {
		return d.runDirect(ctx, c, sleds, p)
	}
	return d.runRollouts(ctx, c, sleds, p)
}

// planSplit splits n updates at concurrency p into rollout plans of at most
// maxPlanUpdates updates, each with a share of the p slots, so that no plan
// needs more than ceil(n/p) waves (the ideal stays reachable).
func planSplit(n, p int) (sizes, concs []int, err error) {
	waves := (n + p - 1) / p
	perPlan := maxPlanUpdates / waves // slots one plan can hold
	if perPlan < 1 {
		return nil, nil, fmt.Errorf("%d waves of %d do not fit a %d-update plan: use --sp-mode direct", waves, p, maxPlanUpdates)
	}
	left, slots := n, p
	for left > 0 {
		c := min(perPlan, slots)
		k := min(c*waves, left)
		sizes, concs = append(sizes, k), append(concs, c)
		left -= k
		slots -= c
	}
	return sizes, concs, nil
}

// runRollouts runs the updates as rollout plans (what `starter rollout`
// starts), side by side, together at concurrency p.
func (d *spDriver) runRollouts(ctx context.Context, c client.Client, sleds []spec.Sled, p int) (outcome, error) {
	sizes, concs, err := planSplit(len(sleds), p)
	if err != nil {
		return outcome{}, err
	}
	out := outcome{Mode: fmt.Sprintf("%d rollout plan(s) side by side (sizes %v, concurrency %v)", len(sizes), sizes, concs),
		Workflows: len(sizes)}
	var runs []client.WorkflowRun
	next := 0
	for i, size := range sizes {
		st := rollout.Stage{Name: "sp", Kind: workflows.KindSPFirmware, Concurrency: concs[i], FailureBudget: size}
		for _, s := range sleds[next : next+size] {
			in := d.input(s)
			raw, err := json.Marshal(in)
			if err != nil {
				return out, err
			}
			st.Updates = append(st.Updates, rollout.PlanUpdate{Target: in.Target(), Artifact: spTargetVersion, Input: raw})
		}
		next += size
		plan := rollout.RolloutInput{Name: fmt.Sprintf("bench-sp-%d", i), Stages: []rollout.Stage{st}}
		if err := plan.Validate(); err != nil {
			return out, err
		}
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: rollout.RolloutWorkflowID(plan.Name), TaskQueue: workflows.TaskQueue,
			TypedSearchAttributes: workflows.StartAttributes(workflows.KindRollout, "plan/"+plan.Name, ""),
		}, rollout.Rollout, plan)
		if err != nil {
			return out, err
		}
		runs = append(runs, run)
	}
	var errs []error
	for _, run := range runs {
		var res rollout.RolloutResult
		if err := run.Get(ctx, &res); err != nil {
			errs = append(errs, err)
		}
		for _, o := range res.Outcomes {
			if o.State == workflows.StateCompleted {
				out.Completed++
			} else {
				out.Failed++
			}
		}
	}
	return out, errors.Join(errs...)
}

// runDirect starts one SPFirmwareUpdate per sled from the bench in a
// sliding window of p (what a script calling `starter sp-firmware` would).
func (d *spDriver) runDirect(ctx context.Context, c client.Client, sleds []spec.Sled, p int) (outcome, error) {
	out := outcome{Mode: fmt.Sprintf("%d workflows started directly, sliding window of %d", len(sleds), p), Workflows: 0}
	sem := make(chan struct{}, p)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, s := range sleds {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return out, ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			in := d.input(s)
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID: workflows.WorkflowID(workflows.KindSPFirmware, in.Target()), TaskQueue: workflows.TaskQueue,
				TypedSearchAttributes: workflows.StartAttributes(workflows.KindSPFirmware, in.Target(), spTargetVersion),
			}, mgsupdate.SPFirmwareUpdate, in)
			if err == nil {
				err = run.Get(ctx, nil)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				out.Failed++
				if len(errs) < 5 {
					errs = append(errs, fmt.Errorf("%s: %w", in.Target(), err))
				}
				return
			}
			out.Completed++
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// baseline is an SP update script without a workflow engine: conc
// goroutines, each per SP: start the update through either MGS, poll its
// status, reset through an MGS that may reset it, read the new version.
// Same pacing as the workflow (poll interval), no ledger, no retries.
func (d *spDriver) baseline(ctx context.Context, ep fleet.Endpoints, n, conc int) (outcome, error) {
	out := outcome{Mode: fmt.Sprintf("plain loop, concurrency %d", conc)}
	set, err := mgs.NewSet(ep.MGS, &http.Client{Timeout: 2 * time.Minute})
	if err != nil {
		return out, err
	}
	d.mu.Lock()
	sleds, image, poll := d.sleds, d.image, spTiming(d.speedUp).PollInterval
	d.mu.Unlock()
	jobs := make(chan spec.Sled)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range jobs {
				err := flashOne(ctx, set, s, image, poll)
				mu.Lock()
				if err != nil {
					out.Failed++
					if len(errs) < 5 {
						errs = append(errs, fmt.Errorf("sled %d: %w", s.Cubby, err))
					}
				} else {
					out.Completed++
				}
				mu.Unlock()
			}
		}()
	}
	for _, s := range sleds {
		jobs <- s
	}
	close(jobs)
	wg.Wait()
	return out, errors.Join(errs...)
}

func flashOne(ctx context.Context, set *mgs.Set, s spec.Sled, image []byte, poll time.Duration) error {
	sp := mgs.SpIdentifier{Type: mgs.SpTypeSled, Slot: uint16(s.Cubby)}
	id := uuid.New()
	err := set.Do(ctx, func(ctx context.Context, c *mgs.Client) error {
		return c.UpdateStart(ctx, sp, mgs.ComponentSP, id, 0, bytes.NewReader(image), int64(len(image)))
	})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	for {
		st, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
			return c.UpdateStatus(ctx, sp, mgs.ComponentSP)
		})
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		if st.ID == id && st.State == mgs.UpdateComplete {
			break
		}
		if st.ID != id || st.State == mgs.UpdateNone || st.State == mgs.UpdateFailed || st.State == mgs.UpdateAborted {
			return fmt.Errorf("update %s: %s", id, st)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
	var resetErr error
	for _, c := range set.Clients() {
		if resetErr = c.Reset(ctx, sp, mgs.ComponentSP); resetErr == nil || !mgs.HasCode(resetErr, mgs.CodeResetSpOfLocalSled) {
			break
		}
	}
	if resetErr != nil {
		return fmt.Errorf("reset: %w", resetErr)
	}
	for {
		cab, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.Caboose, error) {
			return c.Caboose(ctx, sp, mgs.ComponentSP, 0)
		})
		if err == nil && cab.Version == spTargetVersion {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// verify checks fleetsim's truth: every SP runs the target version.
func (d *spDriver) verify(ctx context.Context, fleetsimURL string, n int) verification {
	var t simmgs.Truth
	if err := getJSON(ctx, fleetsimURL+"/truth/"+simmgs.Name, &t); err != nil {
		return verification{Note: err.Error()}
	}
	v := verification{}
	var busy []time.Duration
	sps := 0
	for _, r := range t.Racks {
		for _, s := range r.SPs {
			sps++
			if s.SP.Active.Valid && s.SP.Active.Version == spTargetVersion {
				v.Updated++
			}
			for _, del := range s.Deliveries {
				if del.Component != mgs.ComponentSP {
					continue
				}
				v.Attempts++
				if del.Outcome == simmgs.StateComplete && del.EndedAt != nil {
					busy = append(busy, del.EndedAt.Sub(del.StartedAt))
				}
			}
		}
	}
	v.DeviceBusyMedianSec, v.DeviceBusyMaxSec = medianMax(busy)
	v.OK = v.Updated == n && sps == n
	if !v.OK {
		v.Note = fmt.Sprintf("%d of %d SPs run %s", v.Updated, n, spTargetVersion)
	}
	v.Note = strings.TrimSpace(v.Note + " (device busy = prepare+delivery only; the reset is not in fleetsim's delivery record)")
	return v
}
