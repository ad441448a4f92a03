package bench

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// TypeHistory sums the histories of every execution (every run, so
// continue-as-new chains count whole) of one workflow type.
type TypeHistory struct {
	WorkflowType string `json:"workflowType"`
	Executions   int    `json:"executions"`
	Events       int64  `json:"events"`
	MaxEvents    int64  `json:"maxEventsOneExecution"`
	SizeBytes    int64  `json:"historyBytes"`
	MaxSizeBytes int64  `json:"maxHistoryBytesOneExecution"`
	// WorkflowTasks counts WorkflowTaskStarted events (every workflow task
	// a worker ran that made it into history).
	WorkflowTasks int64 `json:"workflowTasks"`
	// ActivityTasks counts activity attempts: the attempt number of each
	// ActivityTaskStarted (retries included), and scheduled activities that
	// never started.
	ActivityTasks int64 `json:"activityTasks"`
	Activities    int64 `json:"activitiesScheduled"`
	Timers        int64 `json:"timers"`
	Children      int64 `json:"childWorkflows"`
	Upserts       int64 `json:"searchAttributeUpserts"`
	// Closed counts executions by close status.
	Closed map[string]int `json:"closed"`
	// ByEvent counts events by type.
	ByEvent map[string]int64 `json:"byEvent"`
}

// collectHistories reads every execution in the namespace (the bench gives
// each run its own dev server, so they are all the run's) and sums their
// histories per workflow type.
func collectHistories(ctx context.Context, c client.Client, namespace string, expect int) (map[string]*TypeHistory, error) {
	execs, err := listAll(ctx, c, namespace, expect)
	if err != nil {
		return nil, err
	}
	out := map[string]*TypeHistory{}
	var mu sync.Mutex
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var firstErr error
	for _, e := range execs {
		typ := e.GetType().GetName()
		mu.Lock()
		th := out[typ]
		if th == nil {
			th = &TypeHistory{WorkflowType: typ, Closed: map[string]int{}, ByEvent: map[string]int64{}}
			out[typ] = th
		}
		th.Executions++
		th.Closed[e.GetStatus().String()]++
		mu.Unlock()
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			one, err := readHistory(ctx, c, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId())
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			th.add(one, e.GetHistorySizeBytes())
		}()
	}
	wg.Wait()
	return out, firstErr
}

func (t *TypeHistory) add(o *TypeHistory, size int64) {
	t.Events += o.Events
	t.MaxEvents = max(t.MaxEvents, o.Events)
	t.SizeBytes += size
	t.MaxSizeBytes = max(t.MaxSizeBytes, size)
	t.WorkflowTasks += o.WorkflowTasks
	t.ActivityTasks += o.ActivityTasks
	t.Activities += o.Activities
	t.Timers += o.Timers
	t.Children += o.Children
	t.Upserts += o.Upserts
	for k, v := range o.ByEvent {
		t.ByEvent[k] += v
	}
}

type workflowInfo = workflowpb.WorkflowExecutionInfo

// listAll lists the namespace's executions, waiting (briefly) for
// visibility to show at least expect of them.
func listAll(ctx context.Context, c client.Client, namespace string, expect int) ([]*workflowInfo, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var all []*workflowInfo
		var token []byte
		for {
			resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: namespace, PageSize: 1000, NextPageToken: token,
			})
			if err != nil {
				return nil, fmt.Errorf("list workflows: %w", err)
			}
			all = append(all, resp.GetExecutions()...)
			token = resp.GetNextPageToken()
			if len(token) == 0 {
				break
			}
		}
		if len(all) >= expect || time.Now().After(deadline) {
			return all, nil
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func readHistory(ctx context.Context, c client.Client, id, runID string) (*TypeHistory, error) {
	t := &TypeHistory{ByEvent: map[string]int64{}}
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	started := map[int64]bool{}
	var scheduled []int64
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", id, err)
		}
		countEvent(t, ev, started, &scheduled)
	}
	for _, s := range scheduled {
		if !started[s] {
			t.ActivityTasks++ // scheduled, ran (maybe failing), never recorded as started
		}
	}
	return t, nil
}

func countEvent(t *TypeHistory, ev *historypb.HistoryEvent, started map[int64]bool, scheduled *[]int64) {
	t.Events++
	et := ev.GetEventType()
	t.ByEvent[et.String()]++
	switch et {
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
		t.WorkflowTasks++
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		t.Activities++
		*scheduled = append(*scheduled, ev.GetEventId())
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
		a := ev.GetActivityTaskStartedEventAttributes()
		started[a.GetScheduledEventId()] = true
		t.ActivityTasks += int64(max(a.GetAttempt(), 1))
	case enumspb.EVENT_TYPE_TIMER_STARTED:
		t.Timers++
	case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
		t.Children++
	case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
		t.Upserts++
	}
}

// topEvents lists the most frequent event types, for the report.
func topEvents(m map[string]int64, n int) []string {
	type kv struct {
		k string
		v int64
	}
	var all []kv
	for k, v := range m {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v || (all[i].v == all[j].v && all[i].k < all[j].k) })
	var out []string
	for i, e := range all {
		if i == n {
			break
		}
		out = append(out, fmt.Sprintf("%s=%d", e.k, e.v))
	}
	return out
}
