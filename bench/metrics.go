package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// scrape reads a Prometheus text exposition and sums every sample by metric
// name (labels dropped).
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseExposition(resp.Body)
}

func parseExposition(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name := line
		rest := ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
			rest = line[i:]
		}
		if strings.HasPrefix(rest, "{") {
			if j := strings.LastIndexByte(rest, '}'); j >= 0 {
				rest = rest[j+1:]
			}
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		out[name] += v
	}
	return out, sc.Err()
}

// sdkCounter finds an SDK metric by its base name whatever suffixes the
// OpenTelemetry exporter added (_total, _seconds_count, ...).
func sdkCounter(m map[string]float64, base, suffix string) float64 {
	var v float64
	for name, x := range m {
		if strings.HasPrefix(name, base) && strings.HasSuffix(name, suffix) {
			rest := strings.TrimSuffix(strings.TrimPrefix(name, base), suffix)
			// Only unit/total decorations between base and suffix.
			if rest == "" || rest == "_seconds" || rest == "_total" {
				v += x
			}
		}
	}
	return v
}

// WorkerTasks are task counts from the workers' own SDK metrics.
type WorkerTasks struct {
	WorkflowTasks   float64 `json:"workflowTasks"`
	ActivityTasks   float64 `json:"activityTasks"`
	WorkflowPolls   float64 `json:"workflowTaskPollsSucceeded"`
	StickyCacheMiss float64 `json:"stickyCacheMiss"`
	ActivityFailed  float64 `json:"activityExecutionsFailed"`
	Scraped         bool    `json:"scraped"`
}

func workerTasks(m map[string]float64) WorkerTasks {
	return WorkerTasks{
		WorkflowTasks:   sdkCounter(m, "temporal_workflow_task_execution_latency", "_count"),
		ActivityTasks:   sdkCounter(m, "temporal_activity_execution_latency", "_count"),
		WorkflowPolls:   sdkCounter(m, "temporal_workflow_task_queue_poll_succeed", ""),
		StickyCacheMiss: sdkCounter(m, "temporal_sticky_cache_miss", ""),
		ActivityFailed:  sdkCounter(m, "temporal_activity_execution_failed", ""),
		Scraped:         true,
	}
}

func (a WorkerTasks) sub(b WorkerTasks) WorkerTasks {
	return WorkerTasks{
		WorkflowTasks:   a.WorkflowTasks - b.WorkflowTasks,
		ActivityTasks:   a.ActivityTasks - b.ActivityTasks,
		WorkflowPolls:   a.WorkflowPolls - b.WorkflowPolls,
		StickyCacheMiss: a.StickyCacheMiss - b.StickyCacheMiss,
		ActivityFailed:  a.ActivityFailed - b.ActivityFailed,
		Scraped:         a.Scraped && b.Scraped,
	}
}

func (a WorkerTasks) add(b WorkerTasks) WorkerTasks {
	return WorkerTasks{
		WorkflowTasks:   a.WorkflowTasks + b.WorkflowTasks,
		ActivityTasks:   a.ActivityTasks + b.ActivityTasks,
		WorkflowPolls:   a.WorkflowPolls + b.WorkflowPolls,
		StickyCacheMiss: a.StickyCacheMiss + b.StickyCacheMiss,
		ActivityFailed:  a.ActivityFailed + b.ActivityFailed,
		Scraped:         a.Scraped && b.Scraped,
	}
}
