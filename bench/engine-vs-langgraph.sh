#!/usr/bin/env bash
# weft's engine vs LangGraph on the workloads W1–W8 (docs/BENCHMARKS.md), both sides in one
# run on the same shapes, one process per case and side. Writes the section between the
# `engine-vs-langgraph` markers of docs/BENCHMARKS.md (appended when absent); nothing in it
# is typed by hand. A manual benchmark: not run by CI.
#
# Usage: bench/engine-vs-langgraph.sh
# Env:   REPS=5            measured runs per case (after one warm-up)
#        PYTHON=python3    interpreter for the venv
#        REPORT_ONLY=1     rewrite the section from the last run's results (no measuring)
#        CARGO_TARGET_DIR  where weft is built and where the venv and scratch files live
#                          (default: target/ in the repo)
#
# Needs: cargo, python3 with the venv module, PyPI on the first run (the pinned
# bench/langgraph/requirements.txt), strace (fsync counts; installed with apt-get when missing
# and running as root).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
REPS=${REPS:-5}
PYTHON=${PYTHON:-python3}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
WORK=$TARGET_DIR/bench-langgraph
VENV=$WORK/venv
OUT=docs/BENCHMARKS.md
BEGIN='<!-- engine-vs-langgraph:begin -->'
END='<!-- engine-vs-langgraph:end -->'
log() { printf '[vs-langgraph] %s\n' "$*" >&2; }

# --- 1. LangGraph, pinned, in a venv under the target dir -----------------------------------
mkdir -p "$WORK"
if ! "$VENV/bin/python" -c 'import langgraph, langgraph.checkpoint.sqlite' 2>/dev/null ||
  ! "$VENV/bin/python" -m pip freeze 2>/dev/null | grep -qx 'langgraph==1.2.24'; then
  log "creating $VENV and installing bench/langgraph/requirements.txt"
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r bench/langgraph/requirements.txt
fi
VPY=$VENV/bin/python
LG="$VPY bench/langgraph/lg_workloads.py"

if ! command -v strace >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  log "installing strace"
  apt-get install -y -qq strace >/dev/null 2>&1 || true
fi
command -v strace >/dev/null || { log "strace is needed to count fsync calls"; exit 1; }
command -v taskset >/dev/null || { log "taskset (util-linux) is needed for the one-core runs"; exit 1; }

# --- 2. weft (release) -----------------------------------------------------------------------
# Twice: on mimalloc (what the `weft` binary ships with) and on the system allocator.
SCRATCH=$WORK/scratch
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
log "building the weft workloads (release, system allocator)"
cargo build --quiet --release -p weft-bench --example engine_workloads --no-default-features
cp "$TARGET_DIR/release/examples/engine_workloads" "$SCRATCH/engine_workloads-system"
WEFT_SYSTEM=$SCRATCH/engine_workloads-system
log "building the weft workloads (release, mimalloc)"
cargo build --quiet --release -p weft-bench --example engine_workloads --example map_memory
WEFT=$TARGET_DIR/release/examples/engine_workloads

# --- 3. Measure ------------------------------------------------------------------------------
RESULTS=$WORK/results.jsonl
[ -z "${REPORT_ONLY:-}" ] && : >"$RESULTS"
# record SIDE KIND CASE CMD... : runs CMD, stores its JSON line tagged with side, kind, case.
record() {
  local side=$1 kind=$2 case=$3 json
  shift 3
  log "$side $kind $case"
  json=$("$@")
  printf '{"side":"%s","kind":"%s","case":"%s","data":%s}\n' "$side" "$kind" "$case" "$json" >>"$RESULTS"
}
# fsyncs SIDE CASE CMD... : counts fsync + fdatasync calls of one untimed run under strace.
fsyncs() {
  local side=$1 case=$2 n
  shift 2
  log "$side fsync count $case"
  strace -f -qq -e trace=fsync,fdatasync -o "$SCRATCH/strace.txt" "$@" >/dev/null
  n=$(grep -cE '(fsync|fdatasync)\(' "$SCRATCH/strace.txt" || true)
  printf '{"side":"%s","kind":"fsyncs","case":"%s","data":{"fsyncs":%d}}\n' "$side" "$case" "$n" >>"$RESULTS"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
[ -n "${REPORT_ONLY:-}" ] || {
for shape in chain:100 chain:1000 chain:3000 layered:10x100 tree:1000 fanout:1000; do
  record weft core "$shape" "$WEFT" core "$shape" "$REPS"
  record weft engine "$shape" "$WEFT" engine "$shape" "$REPS"
  record weft engine-ephemeral "$shape" "$WEFT" engine "$shape" "$REPS" ephemeral
  record weft engine-ephemeral-system "$shape" "$WEFT_SYSTEM" engine "$shape" "$REPS" ephemeral
  record langgraph none "$shape" $LG run "$shape" none "$REPS"
done
for n in 100 1000 10000; do
  record weft map "map:$n" "$WEFT" map "$n" "$REPS" ephemeral
  record langgraph none "map:$n" $LG run "map:$n" none "$REPS"
done
# Pending items: at most 10 started at once, the others waiting unstarted for a slot.
for n in 1000 10000; do
  record weft map-pending "map:$n/10" "$WEFT" map "$n" "$REPS" ephemeral 10
  record langgraph pending "map:$n/10" $LG run "map:$n" none "$REPS" 10
done
# What a pending item holds, in live heap bytes (an allocator wrapper counts them).
record weft map-heap "map:1000-10000/10" "$TARGET_DIR/release/examples/map_memory" 1000 10000 10
record weft map loopmap:10x100 "$WEFT" loopmap 10x100 "$REPS" ephemeral
record langgraph none loopmap:10x100 $LG run loopmap:10x100 none "$REPS"
for shape in chain:1000 fanout:1000; do
  record weft durable "$shape" "$WEFT" durable "$shape" "$SCRATCH/w4" "$REPS"
  record langgraph sqlite-sync "$shape" $LG run "$shape" sqlite-sync "$REPS"
  fsyncs weft "$shape" "$WEFT" durable "$shape" "$SCRATCH/w4-strace" 0
  fsyncs langgraph "$shape" $LG run "$shape" sqlite-sync 0
done
record weft payload payload:200 "$WEFT" payload 200 1024 "$SCRATCH/w5" "$REPS"
record langgraph sqlite-sync payload:200 $LG run payload:200 sqlite-sync "$REPS"
record weft resume chain:1000 "$WEFT" resume 1000 500 "$SCRATCH/w7" "$REPS"
record langgraph resume chain:1000 $LG resume 1000 500 "$REPS"
record weft barrier barrier "$WEFT" barrier 3
record langgraph barrier barrier $LG barrier 3
}
load_after=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
versions=$($LG versions)

# --- 4. Write the section -------------------------------------------------------------------
SECTION=$WORK/section.md
cpu=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
lgv=$("$VPY" -c 'import json, sys; print("LangGraph %(langgraph)s, langgraph-checkpoint %(langgraph-checkpoint)s, langgraph-checkpoint-sqlite %(langgraph-checkpoint-sqlite)s, Python %(python)s, SQLite %(sqlite)s (Python side)" % json.loads(sys.argv[1]))' "$versions")
{
  echo "$BEGIN"
  cat <<EOF
## Engine vs LangGraph: workloads W1–W8

Written by \`bench/engine-vs-langgraph.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'); every number
below was measured in that run, both engines on the same shapes. Re-run it to refresh this
section (a manual benchmark, not run by CI):

\`\`\`sh
CARGO_TARGET_DIR=target bench/engine-vs-langgraph.sh    # REPS=5 by default
\`\`\`

- Machine: $(nproc) cores, ${cpu:-unknown CPU}; $(rustc --version); $lgv.
- Load average before / after: $load_before / $load_after (the machine is shared: CPU time is the
  steadier figure).
- Method: one process per case and side; one warm-up run, then the median of $REPS runs (W8: 3).
  Wall = monotonic clock; CPU = user + system time of the whole process (weft:
  \`CLOCK_PROCESS_CPUTIME_ID\`, LangGraph: \`getrusage\`), so weft's store writer thread is
  counted. Peak RSS = the process's high-water mark (\`VmHWM\` / \`ru_maxrss\`). Every run checks
  its work: each node ran exactly once (weft: one \`node_started\` and one \`node_finished\` with the
  expected output per node in the log; LangGraph: a counter reducer equal to the node count).
- The weft side: \`crates/weft-bench/examples/engine_workloads.rs\` on the documents of
  \`weft_bench::workloads\`; the LangGraph side: \`bench/langgraph/lg_workloads.py\`.
- What a weft node is: W1–W4 and W7 use in-process expression \`decision\` nodes
  (\`weft_bench::workloads::node_body\`, the one function to change when in-process agents exist);
  W5 and W8 use \`exec\` nodes (real processes). W3 is LangGraph's \`Send\` fan-out: weft's W3
  is 1 → 1,000 declared nodes → 1 reduce node joining all, and W3m below the same fan-out
  through a \`map\` node.
- weft's run time includes what LangGraph does at \`compile()\` (preflight, adapting the graph,
  the graph digest) and writing the run row; LangGraph's compile is not timed.

EOF
  "$VPY" bench/langgraph/report.py "$RESULTS" <(echo "$versions")
  echo "$END"
} >"$SECTION"

if grep -qF "$BEGIN" "$OUT"; then
  "$VPY" - "$OUT" "$SECTION" "$BEGIN" "$END" <<'EOF'
import sys
out, section, begin, end = sys.argv[1:]
text, new = open(out).read(), open(section).read().rstrip("\n")
a, b = text.index(begin), text.index(end) + len(end)
open(out, "w").write(text[:a] + new + text[b:])
EOF
else
  { echo; cat "$SECTION"; } >>"$OUT"
fi
log "wrote the W1–W8 section of $OUT (raw results: $RESULTS)"
