package devstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
