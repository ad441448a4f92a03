package e2e

import (
	"context"
	"fmt"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// The Web UI tells the story, read by a headless browser from
// the dev stack's Temporal Web UI:
//   - one filter (FleetsagaRollout) lists the rollout and its update;
//   - the rollout's page says it awaits approval, with the plan's digest;
//   - once approved, the SP update's page shows its delivery's progress
//     rising in its current details while the delivery runs.
//
// Screenshots go to e2e/artifacts/ (or $FLEETSAGA_ARTIFACTS); with
// FLEETSAGA_SCREENSHOTS=DIR (make screenshots: DIR=docs) the list and the
// rollout's page are also written there as the README's pictures.
func TestWebUIShowsTheGateAndTheProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	browser, err := exec.LookPath("chromium")
	require.NoError(t, err, "the Web UI test needs Debian's chromium (make test installs it when run as root)")

	s, err := spec.Generate(spec.GenerateOptions{Sleds: 4, Servers: 1, Seed: 5, SpeedUp: 1})
	require.NoError(t, err)
	// The delivery lasts about 80 s (256 KiB at 3.2 KiB/s), long enough to
	// read its progress several times even when a loaded machine takes half
	// a minute to render the page the first time.
	s.Timings.FlashBytesPerSecond = 3200
	uiPort, err := devstack.FreePort()
	require.NoError(t, err)
	stack := startStack(t, s, 1, uiPort)
	op := operator{t, stack}
	ui := newUIReader(t, browser, fmt.Sprintf("http://127.0.0.1:%d/namespaces/default", uiPort))

	img := spImage(t, "1.1.0")
	const name = "webui-e2e"
	plan := writePlan(t, name, "- name: firmware\n  kind: sp-firmware\n  concurrency: 1\n  approval: true\n  updates:\n"+
		spPlanUpdate(t, img, 2, s.Racks[0].Sleds[2].Serial))
	require.Equal(t, 0, op.run("rollout", plan).code)
	rolloutID := rollout.RolloutWorkflowID(name)
	childID := workflows.WorkflowID(workflows.KindSPFirmware, "sp/sled/2")

	// At the gate: the rollout's page says so, with the digest.
	w := op.run("watch", rolloutID, "--until-gate")
	require.Equal(t, 0, w.code, "watch --until-gate: %s", w.stderr)
	var st struct {
		RunID    string `json:"runId"`
		GatePlan *struct {
			Digest string `json:"digest"`
		} `json:"gatePlan"`
	}
	op.json(&st, "status", rolloutID)
	require.NotNil(t, st.GatePlan, "the rollout shows its gate's plan")
	digest := st.GatePlan.Digest[:12]
	rolloutPage := ui.base + "/workflows/" + url.PathEscape(rolloutID) + "/" + st.RunID + "/user-metadata"
	ui.await(rolloutPage, "the rollout's page says it awaits approval with plan "+digest, func(dom string) bool {
		return strings.Contains(dom, "awaiting approval") && strings.Contains(dom, digest) && strings.Contains(dom, "starter approve") &&
			strings.Contains(dom, "awaits approval before firmware") // the static summary
	})
	ui.screenshot(rolloutPage, "webui-rollout.png")

	// Approved: the SP update's page shows its delivery's progress rise.
	ap := op.run("approve", rolloutID, "--by", "e2e", "--reason", "web UI test", "--plan-digest", st.GatePlan.Digest)
	require.Equal(t, 0, ap.code, "approve: %s%s", ap.stdout, ap.stderr)
	c, err := client.Dial(client.Options{HostPort: stack.Temporal.FrontendHostPort()})
	require.NoError(t, err)
	defer c.Close()
	var childRun string
	require.Eventually(t, func() bool {
		d, err := c.DescribeWorkflowExecution(context.Background(), childID, "")
		childRun = d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
		return err == nil
	}, time.Minute, 200*time.Millisecond, "the rollout started %s", childID)
	childPage := ui.base + "/workflows/" + url.PathEscape(childID) + "/" + childRun + "/user-metadata"
	percent := regexp.MustCompile(`updating: (\d+)%`)
	var seen []int
	shot := false
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) && (len(seen) < 2 || seen[len(seen)-1] <= seen[0]) {
		if m := percent.FindStringSubmatch(ui.text(childPage)); m != nil {
			n, _ := strconv.Atoi(m[1])
			if len(seen) == 0 || n != seen[len(seen)-1] {
				seen = append(seen, n)
			}
			if !shot {
				ui.screenshot(childPage, "webui-progress.png")
				shot = true
			}
		}
	}
	t.Logf("delivery progress read from the Web UI: %v%%", seen)
	require.GreaterOrEqual(t, len(seen), 2, "the SP update's current details showed its progress at least twice")
	require.Greater(t, seen[len(seen)-1], seen[0], "the progress rose while the delivery ran")

	// One filter finds the rollout and its update.
	query := fmt.Sprintf(`%s = %q`, workflows.SARollout.GetName(), name)
	require.Eventually(t, func() bool {
		resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		return err == nil && len(resp.GetExecutions()) >= 2
	}, time.Minute, 500*time.Millisecond)
	listPage := ui.base + "/workflows?query=" + url.QueryEscape(query)
	ui.await(listPage, "the list shows "+rolloutID+" and "+childID+" for "+query, func(dom string) bool {
		return strings.Contains(dom, childID) && strings.Contains(dom, rolloutID)
	})
	ui.screenshot(listPage, "webui-list.png")
}

// uiReader reads Web UI pages in one tab of Debian's chromium, headless,
// driven over the DevTools protocol (chromedp): the workflow pages keep a
// long poll open, so the one-shot --dump-dom with a virtual time budget
// never returns on them. One tab for the whole test, because starting a
// browser per read costs a loaded machine most of a minute.
type uiReader struct {
	t    *testing.T
	tab  context.Context
	base string
}

// Reading timeouts, sized for a 2-core machine running other suites.
const (
	// uiSettle is how long a page is given after load before its first
	// read: the Web UI asks the server a few times (history, metadata).
	uiSettle = 3 * time.Second
	// uiReload is how long one load is reread before it is reloaded: the
	// Web UI fetches user metadata once per load, and renders it in
	// iframes that may come well after the page.
	uiReload = 20 * time.Second
	// uiAwait bounds waiting for a page to say something.
	uiAwait = 3 * time.Minute
	// uiStep bounds one browser action (load, read, screenshot).
	uiStep = time.Minute
)

func newUIReader(t *testing.T, browser, base string) uiReader {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.Flag("disable-quic", true), chromedp.WindowSize(1500, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tab, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	// The first Run starts the browser and binds it to its context: tab
	// itself, not a timeout derived from it, or the browser dies with it.
	require.NoError(t, chromedp.Run(tab), "start headless chromium")
	return uiReader{t: t, tab: tab, base: base}
}

// run runs actions in the tab, at most uiStep.
func (u uiReader) run(actions ...chromedp.Action) error {
	ctx, cancel := context.WithTimeout(u.tab, uiStep)
	defer cancel()
	return chromedp.Run(ctx, actions...)
}

// read returns the loaded page's visible text, "" if it cannot.
func (u uiReader) read() string {
	var text string
	if err := u.run(chromedp.Evaluate(pageText, &text)); err != nil {
		u.t.Logf("read the page: %v", err)
	}
	return text
}

// open loads page and gives it uiSettle.
func (u uiReader) open(page string) {
	if err := u.run(chromedp.Navigate(page), chromedp.Sleep(uiSettle)); err != nil {
		u.t.Logf("load %s: %v", page, err)
	}
}

// text loads page and returns its visible text.
func (u uiReader) text(page string) string {
	u.open(page)
	return u.read()
}

// pageText is a page's visible text and that of its frames: the Web UI
// renders user metadata (summary, details, current details) as Markdown
// in iframes of its own origin (/render).
const pageText = `[document.body.innerText].concat(Array.from(document.querySelectorAll('iframe')).map(f => f.contentDocument && f.contentDocument.body ? f.contentDocument.body.innerText : '')).join('\n')`

// await rereads page until ok holds on its text, reloading it every
// uiReload, for uiAwait at most.
func (u uiReader) await(page, what string, ok func(text string) bool) {
	u.t.Helper()
	var text string
	for deadline := time.Now().Add(uiAwait); time.Now().Before(deadline); {
		u.open(page)
		for reload := time.Now().Add(uiReload); time.Now().Before(reload); time.Sleep(time.Second) {
			if text = u.read(); ok(text) {
				return
			}
		}
	}
	u.t.Fatalf("%s: not on %s; it read:\n%s", what, page, text)
}

// screenshot writes page as name under the artifacts directory, and under
// $FLEETSAGA_SCREENSHOTS when set (the README's pictures).
func (u uiReader) screenshot(page, name string) {
	u.t.Helper()
	dirs := []string{os.Getenv("FLEETSAGA_ARTIFACTS")}
	if dirs[0] == "" {
		root, err := devstack.RepoRoot()
		require.NoError(u.t, err)
		dirs[0] = filepath.Join(root, "e2e", "artifacts")
	}
	if d := os.Getenv("FLEETSAGA_SCREENSHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	var png []byte
	require.NoError(u.t, u.run(chromedp.Navigate(page), chromedp.Sleep(uiSettle), chromedp.CaptureScreenshot(&png)))
	require.Greater(u.t, len(png), 10_000, "screenshot of %s looks empty", page)
	for _, dir := range dirs {
		require.NoError(u.t, os.MkdirAll(dir, 0o755))
		shot := filepath.Join(dir, name)
		require.NoError(u.t, os.WriteFile(shot, png, 0o644))
		u.t.Logf("Web UI screenshot: %s", shot)
	}
}
