package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Prometheus is Debian's package (2.x), like PostgreSQL's binaries: the
// stack scrapes fleetsim's device health with it so a rollout's health
// gates query a real server.

// prometheusScrapeInterval is short so a gate sees a device turn unhealthy
// within a second or two of a simulated fleet's compressed time.
const prometheusScrapeInterval = "1s"

// prometheusStartTimeout bounds its start up to ready: it opens an empty
// TSDB in well under a second; a loaded machine takes longer.
const prometheusStartTimeout = 60 * time.Second

// PrometheusBinary finds Debian's prometheus.
func PrometheusBinary() (string, error) {
	if p := os.Getenv("FLEETSAGA_PROMETHEUS_BIN"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("prometheus")
	if err != nil {
		return "", errors.New("Prometheus is needed for health gates: install Debian's package (apt-get install prometheus; make test does it when run as root) or set FLEETSAGA_PROMETHEUS_BIN")
	}
	return p, nil
}

// StartPrometheus starts a Prometheus in dir scraping each target
// (job name → base URL; /metrics is scraped) and returns it with its URL
// once it is ready.
func StartPrometheus(ctx context.Context, dir string, targets map[string]string) (*Proc, string, error) {
	bin, err := PrometheusBinary()
	if err != nil {
		return nil, "", err
	}
	// A fresh TSDB each start: a kept one answers instant queries with the
	// last run's fleetsim series for five minutes (Prometheus's lookback;
	// nothing marked them stale at shutdown), and a gate would judge the
	// new fleet by the old one's devices.
	if err := os.RemoveAll(filepath.Join(dir, "data")); err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, prometheusConfig(targets), 0o644); err != nil {
		return nil, "", err
	}
	logPath := filepath.Join(dir, "prometheus.log")
	// It cannot report a port it picked: a picked port lost to a race is
	// tried again on another.
	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, "", err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		p, err := StartProc(logPath, nil, bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
			"--web.listen-address="+addr, "--log.level=warn")
		if err != nil {
			return nil, "", err
		}
		u := "http://" + addr
		if err = WaitHTTP(ctx, u+"/-/ready", prometheusStartTimeout); err == nil {
			if err = waitScraped(ctx, u, len(targets), prometheusStartTimeout); err != nil {
				_ = p.Kill()
				return nil, "", fmt.Errorf("prometheus scraped nothing (see %s): %w", logPath, err)
			}
			return p, u, nil
		}
		_ = p.Kill()
		if log, _ := os.ReadFile(logPath); attempt < 3 && bytes.Contains(log, []byte("address already in use")) {
			continue
		}
		return nil, "", fmt.Errorf("prometheus did not come up (see %s): %w", logPath, err)
	}
}

func prometheusConfig(targets map[string]string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "global: {scrape_interval: %s, evaluation_interval: %s}\nscrape_configs:\n", prometheusScrapeInterval, prometheusScrapeInterval)
	for job, base := range targets {
		u, err := url.Parse(base)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "- job_name: %q\n  metrics_path: %q\n  static_configs: [{targets: [%q]}]\n", job, u.Path+"/metrics", u.Host)
	}
	return b.Bytes()
}

// waitScraped waits until Prometheus has scraped each of its n targets
// once: ready means it serves queries, and its discovery hands the
// scrape loop its targets only after about 5 s; a gate asking before then
// reads no data.
func waitScraped(ctx context.Context, base string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		up, err := scrapedTargets(ctx, base)
		if err == nil && up >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d targets scraped after %s", up, n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// scrapedTargets counts the active targets whose last scrape succeeded.
func scrapedTargets(ctx context.Context, base string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/targets?state=active", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			ActiveTargets []struct {
				Health string `json:"health"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, err
	}
	up := 0
	for _, t := range body.Data.ActiveTargets {
		if t.Health == "up" {
			up++
		}
	}
	return up, nil
}
