#!/usr/bin/env bash
# How long a live driver takes to act on a decision written by another process
# (docs/BENCHMARKS.md, "Live tail"): `weft run` of a gate beside a 3 s step; once the gate
# waits, `weft approve` (another process) decides it; the time from the `human_decision`
# event to the driver's next event (`node_finished` of the gate), both as recorded in the
# log (ms), over N runs.
#
#   scripts/measure-inbox-wake.sh [WEFT_BINARY] [N]
set -euo pipefail
weft=${1:-target/release/weft}
n=${2:-10}
weft=$(realpath "$weft")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat > gate.json <<'DOC'
{"ags_version": "1.0", "kind": "AgenticGraph", "id": "gate", "version": "1.0.0",
 "title": "gate", "objective": "o", "description": "a gate beside a slow step",
 "entrypoints": ["g", "work"], "constraints": {"max_parallel_nodes": 2},
 "nodes": {
   "g": {"type": "gate", "title": "g", "description": "a person decides", "gate": {"mode": "approve"}},
   "work": {"title": "w", "description": "w", "x-weft-exec": {"run": "sleep 3"}}}}
DOC
for i in $(seq "$n"); do
  db="s$i.db"
  "$weft" run gate.json --db "$db" --json >/dev/null &
  run=$!
  until [ -e "$db" ] && id=$("$weft" runs --db "$db" --json 2>/dev/null |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["run_id"])' 2>/dev/null); do
    sleep 0.02
  done
  # Wait for the gate to wait, then decide it from this (another) process.
  until "$weft" events "$id" --db "$db" | grep -q '"kind":"gate_waiting"'; do sleep 0.02; done
  "$weft" approve "$id" g --db "$db" >/dev/null
  wait "$run" || true
  "$weft" events "$id" --db "$db" | python3 -c '
import json, sys
events = [json.loads(line) for line in sys.stdin]
at = next(i for i, e in enumerate(events) if e["kind"] == "human_decision")
print(events[at + 1]["recorded_at_ms"] - events[at]["recorded_at_ms"], events[at + 1]["kind"])'
done
