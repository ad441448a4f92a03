#!/usr/bin/env bash
# Writes the simulated images that demo/plan.yaml names (their SHA-256 is
# deterministic) into .stack/demo/artifacts, where the workers read them.
set -euo pipefail
cd "$(dirname "$0")/.."
art=.stack/demo/artifacts
mkdir -p "$art"
bin/fleetsim artifact --component sp --version 1.1.0 --out "$art/sp-1.1.0.img" >/dev/null
# The bad release of demo/bad-release.yaml (fleetsim/specs/demo.yaml's
# bad_version fault makes an SP running it unhealthy).
bin/fleetsim artifact --component sp --version 1.2.0 --out "$art/sp-1.2.0.img" >/dev/null
# Phase 2 in the real format; phase 1 names it by its header's SHA-256.
bin/fleetsim artifact --component host-phase2 --version 2.0.0 --size 131072 --out "$art/phase2-2.0.0.img" >/dev/null
bin/fleetsim artifact --component host-boot-flash --version 2.0.0 --phase2-image "$art/phase2-2.0.0.img" --size 65536 --out "$art/phase1-2.0.0.img" >/dev/null
echo "artifacts written to $art"
