#!/usr/bin/env bash
# make demo, inside `devstack run` (which exported DATABASE_URL,
# TEMPORAL_ADDRESS, FLEETSIM_URL and TEMPORAL_UI_URL and started fleetsim and
# two workers): write the simulated artifacts, start the rollout, approve
# its gate as an operator would, watch it to the end, print a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
starter=bin/starter
id=fleetsaga/rollout/plan/demo

demo/artifacts.sh
echo "== Temporal Web UI: ${TEMPORAL_UI_URL:-(off)}/namespaces/default/workflows?query=FleetsagaRollout%3D%22demo%22"

# Plan before touching: the dry run prechecks every target read-only and
# exits 6 when it plans changes (0: nothing to change, 7: refusals).
plan_status=0
$starter rollout demo/plan.yaml --dry-run >.stack/demo/dry-run.txt || plan_status=$?
echo "== dry run (full table in .stack/demo/dry-run.txt):"
grep -E '^(dry run|stage )' .stack/demo/dry-run.txt
if [ "$plan_status" -ne 6 ]; then
  echo "== demo: the dry run exited $plan_status, not 6 (changes planned)"
  exit 1
fi

$starter rollout demo/plan.yaml

# Play the operator: watch until the gate (it prints the stage's plan),
# approve that plan, signed with the demo operator's key (devstack
# --demo-signer made it and exported FLEETSAGA_SIGN_KEY; the workers
# refuse unsigned approvals), watch to the end.
status=0
if $starter watch "$id" --until-gate; then
  # approve needs the full digest of the plan reviewed (a prefix can collide).
  digest=$($starter status "$id" --gate-digest)
  if [ -n "${FLEETSAGA_APPROVAL_ALLOWED_SIGNERS:-}" ]; then
    echo "== an unsigned approval (no key at hand): the workers refuse it, and nothing is approved"
    unsigned=0
    FLEETSAGA_SIGN_KEY= SSH_AUTH_SOCK= $starter approve "$id" --plan-digest "$digest" --by mallory --reason "looks fine" >.stack/demo/unsigned.txt 2>&1 || unsigned=$?
    tail -1 .stack/demo/unsigned.txt
    if [ "$unsigned" -ne 1 ]; then
      echo "== demo: the unsigned approval was not refused (exit $unsigned)"
      status=1
    fi
  fi
  key=${FLEETSAGA_SIGN_KEY:-(no key)}
  echo "== gate reached: approving the host OS stage's plan (above), signed with ${key#"$PWD"/}"
  $starter approve "$id" --plan-digest "$digest" --by demo-operator --reason "SP firmware stage healthy"
  $starter watch "$id" || status=$?
else
  status=$?
fi

# "Ended as expected" means each update's outcome, not only the rollout's
# exit: an update that found its work already done would pass that.
final=.stack/demo/outcomes.txt
$starter watch "$id" 2>/dev/null | grep -E '^[a-z-]+ +[a-z]+/' | tr -s ' ' | sort >"$final" || true
if ! diff -u demo/expected-outcomes.txt "$final"; then
  echo "== demo: outcomes differ from demo/expected-outcomes.txt (above)"
  [ "$status" -ne 0 ] || status=1
fi

echo
echo "== the SP firmware stage's health gates passed (the ledger's latest records):"
$starter explain "$id" --database-url "$DATABASE_URL" | grep -E 'gate-passed' | sed -n '1,3p' || true

# A second rollout of a bad release: its health gate must stop it after
# the first SP, before the release reaches the second.
bad=fleetsaga/rollout/plan/demo-bad-release
echo
echo "== a bad release (SP firmware 1.2.0; fleetsim's bad_version fault makes an SP running it unhealthy):"
$starter rollout demo/bad-release.yaml
bad_status=0
$starter watch "$bad" >.stack/demo/bad-release.txt 2>&1 || bad_status=$?
$starter explain "$bad" --database-url "$DATABASE_URL" | sed -n '1,4p'
$starter list --rollout demo-bad-release >.stack/demo/bad-release-updates.txt
if [ "$bad_status" -eq 0 ] || ! grep -q 'sp-firmware/sp/sled/4' .stack/demo/bad-release-updates.txt ||
  grep -q 'sp-firmware/sp/sled/5' .stack/demo/bad-release-updates.txt; then
  echo "== demo: the bad release was not stopped before sp/sled/5 (watch exit $bad_status; .stack/demo/bad-release*.txt)"
  status=1
else
  echo "-- stopped by its health gate: sp/sled/4 runs 1.2.0 and is unhealthy; sp/sled/5 was never touched"
fi

echo
echo "== the faults fleetsim/specs/demo.yaml injected, as fleetsim fired them:"
bin/fleetsim faults
echo "-- sp/sled/3's SP reset while our image was delivered: that attempt was lost, and a new"
echo "   attempt (a new update ID, never the same one sent twice) completed. The ledger:"
$starter status fleetsaga/sp-firmware/sp/sled/3 | grep -E '^ +attempt ' || true
echo "-- the Nexus zone's removal failed twice: the expunge waited until inventory proved the zone"
echo "   gone, and only then were its sagas moved (the ledger's record, below, says by whom)."

echo
echo "== who approved (the ledger, with the key that signed):"
$starter status "$id" | sed -n '/approvals (ledger)/,/^  [a-z]/p' | grep -E '^ {4}' || true

echo
echo "== the audit trail: every ledger row chained, every signature checked against the demo's allowed_signers:"
if [ -n "${FLEETSAGA_APPROVAL_ALLOWED_SIGNERS:-}" ]; then
  $starter audit verify --allowed-signers "$FLEETSAGA_APPROVAL_ALLOWED_SIGNERS" || status=$?
else
  $starter audit verify --skip-signatures || status=$?
fi

echo
echo "== every update of the rollout (Temporal visibility):"
$starter list --rollout demo --limit 100
echo
echo "== the ledger's record of the zone expunge:"
$starter status fleetsaga/zone-expunge/zone/86b8b0c3-9af1-4fd2-b3b5-1219ea79533a | sed -n '1,20p'
echo
echo "== the ledger's record of a host OS update (the rack's path): sled-agent wrote phase 2 to the"
echo "   inactive slot's disk (named in a child of Nexus's target blueprint, which owns the sled's"
echo "   config), MGS wrote phase 1 to that slot, the slot was made active and the SP reset, and the"
echo "   update was done when sled-agent reported the new boot disk:"
$starter status fleetsaga/host-flash/sp/sled/2 | grep -E '^ {4,}' | sed -n '1,20p'
echo
echo "== Web UI: ${TEMPORAL_UI_URL:-(off)}/namespaces/default/workflows?query=FleetsagaRollout%3D%22demo%22"
if [ "$status" -eq 0 ]; then echo "== demo: every update ended as expected"; else echo "== demo: FAILED (exit $status)"; fi
exit "$status"
