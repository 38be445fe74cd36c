#!/usr/bin/env bash
# weft vs the AGS reference validator (agentic-graph-spec 1.0.4, Python), timed in one run on
# the same files. Both tools run as whole processes, so every time includes process startup
# (Python interpreter + imports + schema load for the reference; a static binary for weft).
#
# Usage: bench/validator-vs-reference.sh            (markdown on stdout, progress on stderr)
# Env:   RUNS=10      timed runs per tool and case (after 2 warm-up runs)
#        PYTHON=python3   interpreter for bench/.venv
#        CARGO_TARGET_DIR  where weft is built (default: target/ in the repo)
#        NO_HYPERFINE=1   force the bash fallback timer
#
# Needs: cargo, python3 with the venv module (Debian: python3-venv), network access to PyPI
# on the first run. hyperfine is used when present (installed with apt-get when missing and
# running as root); otherwise a bash loop times the runs with `date +%s%N`.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RUNS=${RUNS:-10}
WARMUP=2
PYTHON=${PYTHON:-python3}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
VENV=$ROOT/bench/.venv
REF_VERSION=1.0.4
WORK=$TARGET_DIR/bench-vs-reference
DOCS=$WORK/docs
log() { printf '[vs-reference] %s\n' "$*" >&2; }

# --- 1. The reference validator, from the PyPI sdist, in bench/.venv ------------------------
ref_installed() {
  [ -x "$VENV/bin/ags-validate" ] &&
    [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("agentic-graph-spec"))' 2>/dev/null)" = "$REF_VERSION" ]
}
if ! ref_installed; then
  log "creating $VENV with $($PYTHON --version 2>&1) and installing agentic-graph-spec==$REF_VERSION from its sdist"
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r bench/reference-requirements.txt
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    -c bench/reference-requirements.txt --no-binary agentic-graph-spec "agentic-graph-spec==$REF_VERSION"
  ref_installed || { log "agentic-graph-spec $REF_VERSION did not install"; exit 1; }
fi
REF=$VENV/bin/ags-validate
VPY=$VENV/bin/python   # also used below for JSON parsing and arithmetic

# --- 2. weft (release) and the generated documents -----------------------------------------
log "building weft (release)"
cargo build --quiet --release -p weft-cli
WEFT=$TARGET_DIR/release/weft
log "generating benchmark documents into $DOCS"
cargo run --quiet --release -p weft-bench --example gen -- "$DOCS" >&2

# Inputs: the six AGS examples and the 20 invalid conformance fixtures (the shared copy when
# present, else the repo's examples/ and the fixtures shipped inside the reference package).
if [ -d "$ROOT/../shared/ags/examples" ]; then EX_DIR=$(cd "$ROOT/../shared/ags/examples" && pwd); else EX_DIR=$ROOT/examples; fi
if [ -d "$ROOT/../shared/ags/conformance/invalid" ]; then
  INV_DIR=$(cd "$ROOT/../shared/ags/conformance/invalid" && pwd)
else
  INV_DIR=$("$VPY" -c 'import ags, pathlib; print(pathlib.Path(ags.__file__).parent / "conformance" / "invalid")')
fi
shopt -s nullglob
EXAMPLES=("$EX_DIR"/*.agraph.yaml "$EX_DIR"/*.agraph.json)
INVALID=("$INV_DIR"/*.agraph.yaml "$INV_DIR"/*.agraph.json)
shopt -u nullglob
[ ${#EXAMPLES[@]} -gt 0 ] && [ ${#INVALID[@]} -gt 0 ] || { log "no examples in $EX_DIR or fixtures in $INV_DIR"; exit 1; }

# case name | files (space-separated; no spaces in paths)
CASES=(
  "examples (${#EXAMPLES[@]} files)|${EXAMPLES[*]}"
  "chain-10k.agraph.json|$DOCS/chain-10k.agraph.json"
  "chain-10k.agraph.yaml|$DOCS/chain-10k.agraph.yaml"
  "layered-100k.agraph.json|$DOCS/layered-100k.agraph.json"
  "faulty-10k.agraph.yaml|$DOCS/faulty-10k.agraph.yaml"
  "invalid fixtures (${#INVALID[@]} files)|${INVALID[*]}"
)

# --- 3. Timer -------------------------------------------------------------------------------
TIMER=bash
if [ -z "${NO_HYPERFINE:-}" ]; then
  if ! command -v hyperfine >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing hyperfine"
    apt-get install -y -qq hyperfine >/dev/null 2>&1 || (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq hyperfine >/dev/null 2>&1) || true
  fi
  command -v hyperfine >/dev/null && TIMER=hyperfine
fi
log "timer: $TIMER, $WARMUP warm-up + $RUNS timed runs per tool and case"

# time_pair NAME WEFT_CMD... -- REF_CMD...  -> prints "weft_median_s weft_cpu_s ref_median_s ref_cpu_s"
# (median wall time; mean user+system CPU time; exit codes are not checked here)
time_pair() {
  local out=$WORK/time.json w=() r=() seen=0 a
  shift
  for a in "$@"; do
    if [ "$a" = "--" ]; then seen=1; continue; fi
    if [ $seen = 0 ]; then w+=("$a"); else r+=("$a"); fi
  done
  if [ $TIMER = hyperfine ]; then
    hyperfine --style none -N -i --warmup "$WARMUP" --runs "$RUNS" --export-json "$out" \
      -n weft "$(printf '%q ' "${w[@]}")" -n reference "$(printf '%q ' "${r[@]}")" >/dev/null
    "$VPY" - "$out" <<'EOF'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
print(" ".join(f"{x['median']:.6f} {x['user'] + x['system']:.6f}" for x in res))
EOF
  else
    # Interleaved runs (weft, reference, weft, ...) so both see the same load.
    local i wt=() rt=() wc=() rc=() t0 t1 c TIMEFORMAT='%U %S'
    for ((i = 0; i < WARMUP; i++)); do "${w[@]}" >/dev/null 2>&1 || true; "${r[@]}" >/dev/null 2>&1 || true; done
    for ((i = 0; i < RUNS; i++)); do
      t0=$(date +%s%N); c=$({ time "${w[@]}" >/dev/null 2>&1; } 2>&1 || true); t1=$(date +%s%N)
      wt+=($((t1 - t0))); wc+=("$c")
      t0=$(date +%s%N); c=$({ time "${r[@]}" >/dev/null 2>&1; } 2>&1 || true); t1=$(date +%s%N)
      rt+=($((t1 - t0))); rc+=("$c")
    done
    "$VPY" - "${wt[*]}" "${wc[*]}" "${rt[*]}" "${rc[*]}" <<'EOF'
import statistics, sys
def cpu(s):
    v = [float(x) for x in s.split()]
    return sum(v[0::2]) / (len(v) / 2) + sum(v[1::2]) / (len(v) / 2)
wt, wc, rt, rc = sys.argv[1:5]
med = lambda s: statistics.median(int(x) for x in s.split()) / 1e9
print(f"{med(wt):.6f} {cpu(wc):.6f} {med(rt):.6f} {cpu(rc):.6f}")
EOF
  fi
}

# outcome: run once, untimed, and summarise exit code + error count for each tool.
weft_outcome() {
  local rc=0
  "$WEFT" validate --json "$@" >"$WORK/weft.json" 2>"$WORK/weft.err" || rc=$?
  "$VPY" - "$WORK/weft.json" "$rc" <<'EOF'
import json, sys
rc = int(sys.argv[2])
try:
    docs = json.load(open(sys.argv[1]))["documents"]
except Exception:
    print(f"exit {rc}: no report (crash?)"); sys.exit()
err = sum(1 for d in docs for f in d["findings"] if str(f.get("severity")).lower() == "error")
rej = sum(1 for d in docs if not d["ok"])
word = {0: "accepted", 1: "rejected"}.get(rc, "usage/strict")
print(f"exit {rc} {word}: {rej}/{len(docs)} docs failed, {err} errors")
EOF
}
ref_outcome() {
  local rc=0 out
  out=$("$REF" "$@" 2>&1) || rc=$?
  printf '%s\n' "$out" >"$WORK/ref.txt"
  "$VPY" - "$WORK/ref.txt" "$rc" <<'EOF'
import re, sys
text = open(sys.argv[1]).read(); rc = int(sys.argv[2])
m = re.search(r"(\d+) document\(s\): (\d+) error\(s\)", text)
if not m or "Traceback" in text:
    print(f"exit {rc}: no summary (crash?)"); sys.exit()
fails = len(re.findall(r"^=== .*\[FAIL\]$", text, re.M))
codes = sorted(set(re.findall(r"\] (AG\d+):", text)))
extra = f" ({', '.join(codes)})" if 0 < len(codes) <= 3 and int(m.group(2)) <= 3 else ""
word = {0: "accepted", 1: "rejected"}.get(rc, "strict")
print(f"exit {rc} {word}: {fails}/{m.group(1)} docs failed, {m.group(2)} errors{extra}")
EOF
}

human_size() { "$VPY" -c 'import sys; n=int(sys.argv[1]); print(f"{n/1048576:.1f} MiB" if n >= 1048576 else f"{n/1024:.1f} KiB")' "$1"; }
ms() { "$VPY" -c 'import sys; v=float(sys.argv[1])*1e3; print(f"{v:.1f} ms" if v >= 10 else f"{v:.2f} ms")' "$1"; }
ratio() { "$VPY" -c 'import sys; a,b=map(float,sys.argv[1:]); print(f"{a/b:.0f}×" if a/b >= 10 else f"{a/b:.1f}×")' "$1" "$2"; }

# --- 4. Measure -----------------------------------------------------------------------------
TIMES=()
OUTCOMES=()
for c in "${CASES[@]}"; do
  name=${c%%|*}
  read -r -a files <<<"${c#*|}"
  log "timing: $name"
  bytes=$(cat "${files[@]}" | wc -c)
  t=$(time_pair "$name" "$WEFT" validate "${files[@]}" -- "$REF" --quiet "${files[@]}")
  read -r wm wcpu rm rcpu <<<"$t"
  TIMES+=("| $name | $(human_size "$bytes") | $(ms "$wm") | $(ms "$rm") | **$(ratio "$rm" "$wm")** | $(ms "$wcpu") | $(ms "$rcpu") | $(ratio "$rcpu" "$wcpu") |")
  OUTCOMES+=("| $name | $(weft_outcome "${files[@]}") | $(ref_outcome "${files[@]}") |")
done

# --- 5. Report (stdout) ---------------------------------------------------------------------
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
cat <<EOF
Whole-process timings: each number includes process startup (for the reference: the Python
interpreter, imports and schema loading; for weft: a native binary). Timer: $TIMER,
$WARMUP warm-up + $RUNS runs per tool and case, run back to back in one invocation on the same
files. Wall = median wall-clock time; CPU = mean user+system time. Ratio = reference / weft.
Load average at the end: $load ($(nproc) cores).

Commands: \`$(basename "$WEFT") validate FILES…\` (prints every finding) vs
\`ags-validate --quiet FILES…\` (agentic-graph-spec $REF_VERSION, prints only a summary).

| Case | Size | weft (wall) | reference (wall) | ratio (wall) | weft (CPU) | reference (CPU) | ratio (CPU) |
|---|---:|---:|---:|---:|---:|---:|---:|
EOF
printf '%s\n' "${TIMES[@]}"
cat <<EOF

What each tool decided (one untimed run per case; exit 0 = accepted, 1 = rejected):

| Case | weft | reference |
|---|---|---|
EOF
printf '%s\n' "${OUTCOMES[@]}"
