#!/usr/bin/env bash
# W10: weft's agent loop vs LangGraph's `create_react_agent` against the same mock LLM on
# loopback (docs/BENCHMARKS.md). Both sides in one run: 1,000 runs per case, each two model
# calls and one tool call, closed-loop at concurrency 10 and 100, with a mock delay of 0 and
# 50 ms; weft on its ephemeral and on its durable SQLite store. Writes the section between the
# `agent-loop-vs-langgraph` markers of docs/BENCHMARKS.md (appended when absent); nothing in it
# is typed by hand. A manual benchmark: not run by CI.
#
# Usage: bench/agent-loop-vs-langgraph.sh
# Env:   REPS=3            repetitions per case (medians), one process each, interleaved
#        N=1000            timed runs per process (after max(20, concurrency) warm-up runs)
#        CONCS="10 100"    concurrencies;  DELAYS="0 50"  mock delays in ms
#        QUICK=1           a smoke run: N=100, REPS=1
#        PYTHON=python3    interpreter for the venv
#        REPORT_ONLY=1     rewrite the section from the last run's results (no measuring)
#        CARGO_TARGET_DIR  where weft is built and where the venv and results live
#                          (default: target/ in the repo)
#
# Needs: cargo, python3 with the venv module, PyPI on the first run (the pinned
# bench/agent-loop/requirements.lock.txt).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [ -n "${QUICK:-}" ]; then
  N=${N:-100}
  REPS=${REPS:-1}
fi
REPS=${REPS:-3}
N=${N:-1000}
CONCS=${CONCS:-10 100}
DELAYS=${DELAYS:-0 50}
PYTHON=${PYTHON:-python3}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
WORK=$TARGET_DIR/bench-agent-loop
VENV=$WORK/venv
HERE=bench/agent-loop
OUT=docs/BENCHMARKS.md
BEGIN='<!-- agent-loop-vs-langgraph:begin -->'
END='<!-- agent-loop-vs-langgraph:end -->'
log() { printf '[agent-loop] %s\n' "$*" >&2; }

# --- 1. LangGraph, pinned, in a venv under the target dir -----------------------------------
mkdir -p "$WORK"
if ! "$VENV/bin/python" -c 'import langgraph.prebuilt, langchain_openai' 2>/dev/null ||
  ! "$VENV/bin/python" -m pip freeze 2>/dev/null | grep -qx 'langgraph==1.2.24'; then
  log "creating $VENV and installing $HERE/requirements.lock.txt"
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$HERE/requirements.lock.txt"
fi
VPY=$VENV/bin/python

# --- 2. weft (release, mimalloc: what the `weft` binary ships with) --------------------------
log "building the weft side (release)"
cargo build --quiet --release -p weft-bench --example agent_loop
WEFT=$TARGET_DIR/release/examples/agent_loop

# --- 3. Measure ------------------------------------------------------------------------------
RESULTS=$WORK/results.jsonl
MOCK_PID=
stop_mock() {
  if [ -n "$MOCK_PID" ]; then
    kill "$MOCK_PID" 2>/dev/null || true
    wait "$MOCK_PID" 2>/dev/null || true
    MOCK_PID=
  fi
}
trap stop_mock EXIT
# start_mock DELAY: the mock on a free loopback port; sets MOCK_PID and MOCK_BASE_URL.
start_mock() {
  local port
  port=$("$VPY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  MOCK_HOST=127.0.0.1 MOCK_PORT=$port MOCK_DELAY_MS=$1 MOCK_WORKERS=1 "$VPY" "$HERE/mock_llm.py" 2>"$WORK/mock.log" &
  MOCK_PID=$!
  for _ in $(seq 100); do
    if "$VPY" -c "import urllib.request, sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1).read() != b'ok')" 2>/dev/null; then
      export MOCK_BASE_URL=http://127.0.0.1:$port/v1 MOCK_PIDS=$MOCK_PID
      return
    fi
    sleep 0.1
  done
  log "the mock did not come up: $(cat "$WORK/mock.log")"
  exit 1
}
# record DELAY SIDE STORE CMD... : runs CMD, stores its JSON line tagged with delay, side, store.
record() {
  local delay=$1 side=$2 store=$3 json
  shift 3
  log "delay $delay ms, $side $store: $*"
  json=$("$@") || {
    log "FAILED: $json"
    exit 1
  }
  printf '{"delay_ms":%s,"side":"%s","store":"%s","data":%s}\n' "$delay" "$side" "$store" "$json" >>"$RESULTS"
}

META=$WORK/meta.env
if [ -z "${REPORT_ONLY:-}" ]; then
  load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
  : >"$RESULTS"
  for delay in $DELAYS; do
    start_mock "$delay"
    for rep in $(seq "$REPS"); do
      for c in $CONCS; do
        log "repetition $rep/$REPS"
        record "$delay" weft ephemeral "$WEFT" --n "$N" --concurrency "$c" --store ephemeral --delay-ms "$delay"
        record "$delay" weft sqlite "$WEFT" --n "$N" --concurrency "$c" --store sqlite --delay-ms "$delay"
        record "$delay" langgraph - "$VPY" "$HERE/lg_agent_bench.py" --framework langgraph --n "$N" --concurrency "$c"
      done
    done
    stop_mock
  done
  load_after=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
  measured_at=$(date -u '+%Y-%m-%d %H:%M UTC')
  # What the section says about the measuring run, kept for REPORT_ONLY=1.
  printf 'load_before=%q\nload_after=%q\nmeasured_at=%q\nREPS=%q\nN=%q\n' \
    "$load_before" "$load_after" "$measured_at" "$REPS" "$N" >"$META"
else
  # shellcheck source=/dev/null
  . "$META"
fi

# --- 4. Write the section -------------------------------------------------------------------
SECTION=$WORK/section.md
cpu=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
lgv=$("$VPY" -c 'from importlib.metadata import version as v; import platform; print("LangGraph %s, langgraph-prebuilt %s, langchain-openai %s, openai %s, Python %s" % (v("langgraph"), v("langgraph-prebuilt"), v("langchain-openai"), v("openai"), platform.python_version()))')
{
  echo "$BEGIN"
  cat <<EOF
## Agent loop vs LangGraph: workload W10

Written by \`bench/agent-loop-vs-langgraph.sh\` on $measured_at; every number
below was measured in that run, both sides against the same mock LLM on loopback. Re-run it
to refresh this section (a manual benchmark, not run by CI):

\`\`\`sh
CARGO_TARGET_DIR=target bench/agent-loop-vs-langgraph.sh    # REPS=3, N=1000; QUICK=1 for a smoke run
\`\`\`

- Machine: $(nproc) cores, ${cpu:-unknown CPU}; $(rustc --version); $lgv.
- Load average before / after: $load_before / $load_after (the machine may be shared: CPU time
  per run is the steadier figure).
- The mock: \`bench/agent-loop/mock_llm.py\` (the project's reference mock, one process, started
  per delay): a user turn gets one \`lookup\` tool call, a tool result gets \`FINAL: <result>\`.
- One run: two model calls and one tool call. weft: a real run through the engine of a
  one-node graph whose task node runs on the model agent (OpenAI-compatible provider, one pooled
  HTTP client) with the host tool \`lookup\`, the final text filling the node's text output
  (\`crates/weft-bench/src/agent_loop.rs\`, driver \`examples/agent_loop.rs\`). LangGraph:
  \`create_react_agent\` on \`ChatOpenAI\` (\`bench/agent-loop/lg_agent_bench.py\`, the reference
  client). The mock looks up the last word of the user turn: LangGraph sends
  \`Please look up key k<i>\`, weft its task prompt, whose last slot is its bounds
  (\`- time: N s\`), so every weft run looks up \`s\` and must answer \`FINAL: value-s\` with two
  model turns and one tool call. Both check every run's final text, both drive $N runs closed-loop on one thread
  (tokio current-thread / asyncio) after max(20, concurrency) warm-up runs, one process per
  case; medians of $REPS repetitions, interleaved.
- weft's stores: *ephemeral* — a fresh in-memory event log per run (like LangGraph without a
  checkpointer); *SQLite* — every run logged durably in one \`.weft/weft.db\`.
- CPU = user + system time of the client process over the timed phase (weft:
  \`CLOCK_PROCESS_CPUTIME_ID\`, LangGraph: \`getrusage\`), so weft's SQLite writer thread is
  counted. Peak RSS = \`VmHWM\` of the client process. Overhead per run (W10,
  \`shared/reference/peers.md\` §8) = mean e2e latency − 2 × delay − tool time; it includes
  the mock's own time per request (and its queueing at concurrency 100), so with no delay it is
  mostly the mock, and the CPU time per run is the client's own cost. weft also reports
  *e2e − measured model time*: the model calls timed inside weft's agent (request sent to
  answer parsed, so it still holds the mock's time and any wait for the one client thread).
  *SQLite commits/run*: the durable store's write transactions (one WAL fsync each) per run.
  A run makes four writes (its row with \`run_started\`, its node's start, its node's end,
  \`run_finished\` with its status); the runs of the one client thread await theirs, so
  concurrent runs share commits (\`docs/store.md\` §5).

EOF
  "$VPY" "$HERE/report.py" "$RESULTS"
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
log "wrote the W10 section of $OUT (raw results: $RESULTS)"
