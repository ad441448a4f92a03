# fleetsaga — see README.md. Needs only Go (and PostgreSQL binaries, which the
# dev stack installs from Debian's packages when missing and run as root).

GO        ?= go
# bash for `set -o pipefail` (the test target's log).
SHELL     := /bin/bash
CACHE     ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/fleetsaga
TEMPORAL  := $(CACHE)/bin/temporal-v1.5.1
WFCHECK   := $(CACHE)/bin/workflowcheck-v0.6.0
# The cluster stack (STACK=cluster): the real server the CLI embeds, its
# schema tool and the Web UI server the CLI embeds, from tools/go.mod.
TSERVER   := $(CACHE)/bin/temporal-server-v1.29.1
TSQLTOOL  := $(CACHE)/bin/temporal-sql-tool-v1.29.1
TUISERVER := $(CACHE)/bin/temporal-ui-server-v2.42.1
# Which Temporal up/demo run: dev (the CLI's dev server on SQLite) or
# cluster (the real server on the stack's PostgreSQL).
STACK     ?= dev
# What each stack runs: up and demo build only these (the cluster's server
# and UI take minutes to build the first time).
STACK_TOOLS_dev     := $(TEMPORAL)
STACK_TOOLS_cluster := $(TEMPORAL) $(TSERVER) $(TSQLTOOL) $(TUISERVER)
BINS      := bin/worker bin/starter bin/fleetsim bin/devstack
TEST_FLAGS ?= -count=1 -timeout 40m
UI_PORT   ?= 8233

export FLEETSAGA_TEMPORAL_BIN := $(TEMPORAL)
export FLEETSAGA_TEMPORAL_SERVER_BIN := $(TSERVER)
export FLEETSAGA_TEMPORAL_SQL_TOOL_BIN := $(TSQLTOOL)
export FLEETSAGA_TEMPORAL_UI_BIN := $(TUISERVER)

.PHONY: all build tools test test-cluster unit lint browser screenshots systemd prometheus demo up down bench bench-large chaos clean $(BINS)

all: build

build: $(BINS)

bin/worker:   ; $(GO) build -o $@ ./worker
bin/starter:  ; $(GO) build -o $@ ./starter
bin/fleetsim: ; $(GO) build -o $@ ./fleetsim/cmd/fleetsim
bin/devstack: ; $(GO) build -o $@ ./cmd/devstack

# The pinned Temporal CLI (dev server + Web UI), the real server, its schema
# tool and Web UI server (STACK=cluster and its tests), and workflowcheck,
# built once from tools/go.mod into the cache (a few minutes the first time).
tools: $(TEMPORAL) $(WFCHECK) $(TSERVER) $(TSQLTOOL) $(TUISERVER)

$(TEMPORAL):
	@mkdir -p $(dir $@)
	@echo "building Temporal CLI v1.5.1 into $@ (once; a few minutes)"
	cd tools && $(GO) build -o $@ github.com/temporalio/cli/cmd/temporal

$(WFCHECK):
	@mkdir -p $(dir $@)
	@echo "building workflowcheck v0.6.0 into $@ (once)"
	cd tools && $(GO) build -o $@ go.temporal.io/sdk/contrib/tools/workflowcheck

$(TSERVER):
	@mkdir -p $(dir $@)
	@echo "building Temporal server v1.29.1 into $@ (once; shares most of the CLI's build)"
	cd tools && $(GO) build -o $@ go.temporal.io/server/cmd/server

$(TSQLTOOL):
	@mkdir -p $(dir $@)
	@echo "building temporal-sql-tool v1.29.1 into $@ (once)"
	cd tools && $(GO) build -o $@ go.temporal.io/server/cmd/tools/sql

$(TUISERVER):
	@mkdir -p $(dir $@)
	@echo "building the Temporal Web UI server v2.42.1 into $@ (once)"
	cd tools && $(GO) build -o $@ github.com/temporalio/ui-server/v2/cmd/server

# Everything CI needs: lint, then unit + integration tests against a real
# Temporal dev server and PostgreSQL (DATABASE_URL if it answers, else a
# private cluster), all started and stopped here.
# The packages' times, slowest first, are printed again at the end (the
# log is .stack/test/go-test.log).
test: tools build lint browser systemd prometheus
	@mkdir -p .stack/test
	set -o pipefail; bin/devstack run --dir .stack/test --ui-port 0 --database fleetsaga_test -- $(GO) test $(TEST_FLAGS) ./... 2>&1 | tee .stack/test/go-test.log; \
	  status=$$?; echo "package times, slowest first (10 s or more):"; \
	  awk '($$1 == "ok" || $$1 == "FAIL") && $$3 ~ /s$$/ && $$3 + 0 >= 10 {print "  " $$3, $$1, $$2}' .stack/test/go-test.log | sort -rn; \
	  exit $$status
	cd tools && $(GO) test -count=1 ./temporalauthz/ ./cmd/...

# The whole suite with every integration test's Temporal the real server on
# PostgreSQL instead of the dev server (make test runs the e2e core on it,
# e2e/cluster_test.go; this is the rest, outside CI's time budget).
test-cluster: tools build lint browser systemd prometheus
	bin/devstack run --temporal cluster --dir .stack/test-cluster --ui-port 0 --database fleetsaga_test_cluster -- $(GO) test $(TEST_FLAGS) ./...

# The Web UI end-to-end test drives Debian's headless chromium.
browser:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's chromium for the Web UI test"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "the Web UI test needs chromium: install it (Debian: apt-get install chromium)"; exit 1; fi; }

# The README's Web UI pictures (docs/webui-*.png), taken by the Web UI
# test's headless chromium from a running dev stack.
screenshots: tools build browser
	FLEETSAGA_SCREENSHOTS=$(CURDIR)/docs $(GO) test -count=1 -timeout 10m -run TestWebUIShowsTheGateAndTheProgress ./e2e

# Health gates are tested against a real Prometheus (Debian's package, run
# by the tests themselves, never as a service).
prometheus:
	@command -v prometheus >/dev/null || [ -n "$$FLEETSAGA_PROMETHEUS_BIN" ] || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's prometheus for the health gates (tests and demo)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null; \
	  else echo "the health gates (tests and demo) need Prometheus: install it (Debian: apt-get install prometheus)"; exit 1; fi; }

# The deployment test checks the worker's unit with systemd-analyze.
systemd:
	@command -v systemd-analyze >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's systemd for the unit file test"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null; \
	  else echo "the unit file test needs systemd-analyze: install it (Debian: apt-get install systemd)"; exit 1; fi; }

# Unit tests only (no stack).
unit:
	$(GO) test -count=1 -short ./...
	cd tools && $(GO) test -count=1 ./temporalauthz/ ./cmd/...

lint: $(WFCHECK)
	$(GO) vet ./...
	cd tools && $(GO) vet ./temporalauthz/ ./cmd/...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(WFCHECK) ./workflows/... ./kinds/...

# The demo: the whole stack, a rollout over every update kind, a summary.
# STACK=cluster runs it on the real Temporal server on PostgreSQL.
demo: $(STACK_TOOLS_$(STACK)) build prometheus
	bin/devstack run --temporal $(STACK) --dir .stack/demo --ui-port $(UI_PORT) --workers 2 --database fleetsaga_demo \
	  --demo-signer --prometheus --fleetsim-spec fleetsim/specs/demo.yaml -- demo/run.sh

# Keep the stack running for interactive use (Web UI on :$(UI_PORT)).
# STACK=cluster: the real Temporal server on PostgreSQL instead.
up: $(STACK_TOOLS_$(STACK)) build prometheus
	bin/devstack up --temporal $(STACK) --dir .stack/up --ui-port $(UI_PORT) --workers 2 --persist --database fleetsaga_up \
	  --artifact-root .stack/demo/artifacts \
	  --demo-signer --prometheus --fleetsim-spec fleetsim/specs/demo.yaml

down: bin/devstack
	bin/devstack down --dir .stack/up

# The fleet-scale benchmark (issues 10, 17): N SP firmware updates and N
# agent installs at concurrency P on the real stack, against the physical
# limit and a plain concurrency-5 loop; then each kind at N=BENCH_REAL_TIME_N
# with real device times (0 skips them). BENCH_N=100,1000 BENCH_P=100
# BENCH_REAL_TIME_N=1000; BENCH_LARGE=1 adds N=5000; BENCH_FLAGS for the rest
# (bin/bench --help). Results: bench/results/.
bench: tools bin/worker bin/fleetsim
	$(GO) build -o bin/bench ./bench/cmd/bench
	bin/bench --dir .stack/bench --bin bin --out bench/results $(BENCH_FLAGS)

# 10,000 agent installs at P=100 (issue 17), added to bench/results/ (run
# after `make bench`): largest history of any run, worker RSS, ledger rows,
# wall against ideal. No loop (it would take about 50 minutes).
bench-large: tools bin/worker bin/fleetsim
	$(GO) build -o bin/bench ./bench/cmd/bench
	bin/bench --dir .stack/bench --bin bin --out bench/results --append --n 10000 --kinds agent-install \
	  --skip-baseline --real-time-n 0 --history-check=false --run-timeout 90m $(BENCH_FLAGS)

# Chaos (issue 9): the real stack, a rollout over every update kind (>= 200
# targets), worker SIGKILLs, a PostgreSQL and a Temporal restart, random
# fleetsim faults; then the invariants against fleetsim's truth and the
# ledger. Seeded: SEED=N replays a run; STACK=cluster runs it on the real
# Temporal server on PostgreSQL; CHAOS_FLAGS for the rest (bin/chaos --help).
# Exits non-zero on any violation.
SEED ?= 1
chaos: tools bin/worker bin/fleetsim
	$(GO) build -o bin/chaos ./chaos/cmd/chaos
	bin/chaos --bin-dir bin --dir .stack/chaos --seed $(SEED) --temporal $(STACK) $(CHAOS_FLAGS)

clean:
	rm -rf bin .stack
