package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/dc"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// benchAgent is the agent every run installs: present on every generated
// server, not one of the core agents that install alone.
const benchAgent = "vm-agent"

type agentDriver struct{ cfg *Config }

func (agentDriver) kind() workflows.Kind { return workflows.KindAgentInstall }

// One AgentInstallServer child runs per server.
func (agentDriver) targetWorkflow() string { return "AgentInstallServer" }

func (a agentDriver) spec(n int, speedUp float64) (*spec.Spec, error) {
	s, err := spec.Generate(spec.GenerateOptions{Servers: n, Seed: a.cfg.Seed, SpeedUp: speedUp})
	if err != nil {
		return nil, err
	}
	s.Timings = benchTimings()
	return s, s.Validate()
}

func (agentDriver) deviceTime(s *spec.Spec) (time.Duration, string) { return agentDeviceTime(s) }

// run installs the agent on every server with one AgentInstall at
// concurrency p, as `starter agent-install --all --concurrency p` would.
func (agentDriver) run(ctx context.Context, c client.Client, n, p int) (outcome, error) {
	out := outcome{Mode: fmt.Sprintf("one AgentInstall, concurrency %d", p), Workflows: 1}
	in := agents.AgentInstallInput{
		Agents:      []agents.AgentRequest{{Name: benchAgent}},
		Selection:   agents.ServerSelection{All: true},
		Concurrency: p,
	}
	if err := in.Validate(); err != nil {
		return out, err
	}
	kind := workflows.KindAgentInstall
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.WorkflowID(kind, in.Target()), TaskQueue: workflows.TaskQueue,
		TypedSearchAttributes: workflows.StartAttributes(kind, in.Target(), in.ArtifactVersion()),
	}, agents.AgentInstall, in)
	if err != nil {
		return out, err
	}
	var res agents.AgentInstallResult
	err = run.Get(ctx, &res)
	out.Completed = res.Installed + res.Verified
	out.Failed = res.Failed + res.NotStarted
	out.Note = fmt.Sprintf("outcome %q, %d run(s) (continue-as-new)", res.Outcome, res.Runs)
	return out, err
}

// baseline is the way a datacenter tool without a workflow engine updates
// an agent: look everything up once, then a fixed pool of conc goroutines,
// each per server: start cn-agent's agent_install, wait for the task, set
// the SAPI instance's image. No ledger, no retries, no durability.
func (agentDriver) baseline(ctx context.Context, ep fleet.Endpoints, n, conc int) (outcome, error) {
	out := outcome{Mode: fmt.Sprintf("plain loop, concurrency %d", conc)}
	hc := &http.Client{Timeout: 2 * time.Minute}
	opts := []triton.Option{triton.WithHTTPClient(hc), triton.WithUserAgent("fleetsaga-bench-baseline")}
	cn, err := triton.NewCNAPI(ep.CNAPI, opts...)
	if err != nil {
		return out, err
	}
	sapi, err := triton.NewSAPI(ep.SAPI, opts...)
	if err != nil {
		return out, err
	}
	img, err := triton.NewIMGAPI(ep.IMGAPI, opts...)
	if err != nil {
		return out, err
	}
	servers, err := cn.ListServers(ctx, triton.ListServersOptions{})
	if err != nil {
		return out, err
	}
	images, err := img.ListImages(ctx, benchAgent)
	if err != nil {
		return out, err
	}
	var image triton.Image
	for _, im := range images {
		if im.Version == spec.GeneratedNewVersion {
			image = im
		}
	}
	if image.UUID == uuid.Nil {
		return out, fmt.Errorf("no %s@%s in IMGAPI", benchAgent, spec.GeneratedNewVersion)
	}
	services, err := sapi.ListServices(ctx, triton.ListServicesOptions{Type: triton.ServiceTypeAgent})
	if err != nil {
		return out, err
	}
	var service triton.Service
	for _, s := range services {
		if s.Name == benchAgent {
			service = s
		}
	}
	insts, err := sapi.ListInstances(ctx, service.UUID)
	if err != nil {
		return out, err
	}
	instOf := map[uuid.UUID]uuid.UUID{}
	for _, in := range insts {
		instOf[in.Params.ServerUUID] = in.UUID
	}

	jobs := make(chan triton.Server)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range jobs {
				err := installOne(ctx, cn, sapi, s, image, instOf[s.UUID])
				mu.Lock()
				if err != nil {
					out.Failed++
					if len(errs) < 5 {
						errs = append(errs, fmt.Errorf("%s: %w", s.Hostname, err))
					}
				} else {
					out.Completed++
				}
				mu.Unlock()
			}
		}()
	}
	for _, s := range servers {
		jobs <- s
	}
	close(jobs)
	wg.Wait()
	if out.Failed == 0 {
		if _, err := sapi.SetServiceImage(ctx, service.UUID, image.UUID); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

func installOne(ctx context.Context, cn *triton.CNAPI, sapi *triton.SAPI, s triton.Server, image triton.Image, inst uuid.UUID) error {
	task, err := cn.InstallAgent(ctx, s.UUID, triton.InstallAgentRequest{ImageUUID: image.UUID, PackageName: benchAgent})
	if err != nil {
		return err
	}
	for {
		t, err := cn.WaitTask(ctx, task, 5*time.Second)
		if err != nil {
			return err
		}
		if t.Status == triton.TaskFailure {
			return errors.New(t.ErrorMessage())
		}
		if t.Status == triton.TaskComplete {
			break
		}
	}
	if inst == uuid.Nil {
		return errors.New("no SAPI instance")
	}
	_, err = sapi.SetInstanceImage(ctx, inst, s.UUID, image.UUID)
	return err
}

// verify checks fleetsim's truth: every server runs the new agent and its
// SAPI instance says so.
func (agentDriver) verify(ctx context.Context, fleetsimURL string, n int) verification {
	var t dc.Truth
	if err := getJSON(ctx, fleetsimURL+"/truth/"+dc.Name, &t); err != nil {
		return verification{Note: err.Error()}
	}
	v := verification{}
	for _, s := range t.Servers {
		okActual, okIntent := false, false
		for _, a := range s.Agents {
			okActual = okActual || (a.Name == benchAgent && a.Version == spec.GeneratedNewVersion)
		}
		var newImage uuid.UUID
		for _, a := range s.Agents {
			if a.Name == benchAgent {
				newImage = a.ImageUUID
			}
		}
		for _, in := range s.Instances {
			okIntent = okIntent || (in.Service == benchAgent && in.ImageUUID == newImage)
		}
		if okActual && okIntent {
			v.Updated++
		}
	}
	var busy []time.Duration
	for _, rec := range t.Installs {
		v.Attempts++
		if rec.Outcome == triton.TaskComplete {
			busy = append(busy, rec.Finished.Sub(rec.Started))
		}
	}
	v.DeviceBusyMedianSec, v.DeviceBusyMaxSec = medianMax(busy)
	v.OK = v.Updated == n && len(t.Servers) == n
	if !v.OK {
		v.Note = fmt.Sprintf("%d of %d servers run %s@%s with matching SAPI intent", v.Updated, n, benchAgent, spec.GeneratedNewVersion)
	}
	return v
}

func medianMax(d []time.Duration) (float64, float64) {
	if len(d) == 0 {
		return 0, 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2].Seconds(), d[len(d)-1].Seconds()
}

func getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
