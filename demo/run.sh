#!/usr/bin/env bash
# make demo, inside `devstack run` (which exported DATABASE_URL,
# TEMPORAL_ADDRESS, FLEETSIM_URL and TEMPORAL_UI_URL and started fleetsim and
# two workers): write the simulated artifacts, start the rollout, approve
# its gate as an operator would, watch it to the end, print a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
starter=bin/starter
id=fleetsaga/rollout/plan/demo
art=.stack/demo/artifacts # the plan's paths, relative to the workers' directory

mkdir -p "$art"
bin/fleetsim artifact --component sp --version 1.1.0 --out "$art/sp-1.1.0.img" >/dev/null
p2=$(bin/fleetsim artifact --component host-phase2 --version 2.0.0 --size 131072 --out "$art/phase2-2.0.0.img" | cut -d' ' -f1)
bin/fleetsim artifact --component host-boot-flash --version 2.0.0 --phase2 "$p2" --size 65536 --out "$art/phase1-2.0.0.img" >/dev/null

echo "== Temporal Web UI: ${TEMPORAL_UI_URL}/namespaces/default/workflows?query=FleetsagaRollout%3D%22demo%22"
$starter rollout demo/plan.yaml

# Watch in the background while this script plays the operator at the gate.
$starter watch "$id" &
watch_pid=$!
for _ in $(seq 600); do
  if $starter status --json "$id" | grep -q '"phase": "awaiting-approval"'; then
    echo "== gate reached: approving the host OS stage"
    $starter approve "$id" --by demo --reason "SP firmware stage healthy"
    break
  fi
  kill -0 "$watch_pid" 2>/dev/null || break
  sleep 1
done
status=0
wait "$watch_pid" || status=$?

echo
echo "== every update of the rollout (Temporal visibility):"
$starter list --rollout demo --limit 100
echo
echo "== the ledger's record of the zone expunge:"
$starter status fleetsaga/zone-expunge/zone/86b8b0c3-9af1-4fd2-b3b5-1219ea79533a | head -20
echo
echo "== Web UI: ${TEMPORAL_UI_URL}/namespaces/default/workflows?query=FleetsagaRollout%3D%22demo%22"
if [ "$status" -eq 0 ]; then echo "== demo: every update ended as expected"; else echo "== demo: FAILED (exit $status)"; fi
exit "$status"
