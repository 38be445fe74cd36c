#!/usr/bin/env bash
# `weft validate` and `weft plan` as whole commands on issue 12's held-out shapes: a
# 10,000-node graph written as minified JSON (one line of ~1.2 MB) with a two-word brief per
# node (10,000 advisories, WF901), and the 10 x 1,000 layered graph (100,000 edges) on one
# line (9,000 advisories, WF906). Wall time and peak RSS from /usr/bin/time -v, median of
# RUNS runs, stdout and stderr written to /dev/null (the report is still rendered in full).
#
# Usage: bench/hostile-shapes.sh [WEFT_BINARY]     (markdown table on stdout)
# Env:   RUNS=5, CARGO_TARGET_DIR (where weft and the generator are built), TIMEOUT=300 (s),
#        GEN (a built `gen` example to use instead of `cargo run`)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RUNS=${RUNS:-5}
TIMEOUT=${TIMEOUT:-300}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
DOCS=$TARGET_DIR/bench-hostile/docs
if [ $# -ge 1 ]; then
  WEFT=$1
else
  cargo build --quiet --release -p weft-cli
  WEFT=$TARGET_DIR/release/weft
fi
mkdir -p "$DOCS"
if [ -n "${GEN:-}" ]; then
  "$GEN" "$DOCS" >&2
else
  cargo run --quiet --release -p weft-bench --example gen -- "$DOCS" >&2
fi

# run_one CMD... -> "wall_s cpu_s max_rss_kb exit" (exit 124 when killed at TIMEOUT)
run_one() {
  local out
  out=$(mktemp)
  set +e
  /usr/bin/time -v -o "$out" timeout "$TIMEOUT" "$@" >/dev/null 2>&1
  local code=$?
  set -e
  local wall cpu rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$out" |
    awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$out")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$out")
  rm -f "$out"
  echo "$wall $cpu $rss $code"
}

# medians of RUNS runs of CMD... -> "| wall ms | CPU ms | peak RSS MB | exit |"
measure() {
  local walls=() cpus=() rsss=() code=0 r line
  for ((r = 0; r < RUNS; r++)); do
    line=$(run_one "$@")
    walls+=("$(echo "$line" | cut -d' ' -f1)")
    cpus+=("$(echo "$line" | cut -d' ' -f2)")
    rsss+=("$(echo "$line" | cut -d' ' -f3)")
    code=$(echo "$line" | cut -d' ' -f4)
  done
  median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  local wall cpu rss
  wall=$(printf '%s\n' "${walls[@]}" | median | awk '{printf "%.0f", $1 * 1000}')
  cpu=$(printf '%s\n' "${cpus[@]}" | median | awk '{printf "%.0f", $1 * 1000}')
  rss=$(printf '%s\n' "${rsss[@]}" | median | awk '{printf "%.1f", $1 / 1024}')
  echo "| $wall | $cpu | $rss | $code |"
}

SHORT=$DOCS/short-briefs-10k.min.agraph.json
LAYERED=$DOCS/layered-100k.min.agraph.json
echo "| command | document | wall ms | CPU ms (user + sys) | peak RSS MB | exit |"
echo "|---|---|---:|---:|---:|---:|"
for doc in "$SHORT" "$LAYERED"; do
  name=$(basename "$doc")
  for args in "validate" "validate --json" "validate --quiet" "plan"; do
    # shellcheck disable=SC2086
    echo "| \`weft $args\` | $name $(measure "$WEFT" $args "$doc")"
  done
done
