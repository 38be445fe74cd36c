#!/usr/bin/env bash
# weft vs the AGS reference validator (agentic-graph-spec 1.0.4, Python), timed in one run on
# the same files. Both tools run as whole processes, so every time includes process startup
# (Python interpreter + imports + schema load for the reference; a static binary for weft).
#
# Usage: bench/validator-vs-reference.sh            (markdown on stdout, progress on stderr)
# Env:   RUNS=5, WARMUP=1   timed and warm-up runs per tool and case
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
RUNS=${RUNS:-5}
WARMUP=${WARMUP:-1}
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

# time_cmds CMD1... -- CMD2... [-- CMD3...]  -> prints "median_s cpu_s" per command, in order:
# median wall time and mean user+system CPU time. Exit codes are not checked here: the
# outcome tables below record them.
time_cmds() {
  local out=$WORK/time.json cmds=() cur=() a i
  for a in "$@" --; do
    if [ "$a" = "--" ]; then cmds+=("$(printf '%q ' "${cur[@]}")"); cur=(); else cur+=("$a"); fi
  done
  if [ $TIMER = hyperfine ]; then
    local args=()
    for i in "${!cmds[@]}"; do args+=(-n "cmd$i" "${cmds[$i]}"); done
    hyperfine --style none -N -i --warmup "$WARMUP" --runs "$RUNS" --export-json "$out" "${args[@]}" \
      >/dev/null 2>"$WORK/hyperfine.err" || { cat "$WORK/hyperfine.err" >&2; return 1; }
    "$VPY" -c 'import json, sys
res = json.load(open(sys.argv[1]))["results"]
print(" ".join("%.6f %.6f" % (x["median"], x["user"] + x["system"]) for x in res))' "$out"
  else
    # Interleaved runs (cmd0, cmd1, cmd0, ...) so all commands see the same load.
    local r t0 t1 c TIMEFORMAT='%U %S'
    : >"$WORK/times.txt"
    for ((r = 0; r < WARMUP; r++)); do
      for i in "${!cmds[@]}"; do eval "${cmds[$i]}" >/dev/null 2>&1 || true; done
    done
    for ((r = 0; r < RUNS; r++)); do
      for i in "${!cmds[@]}"; do
        t0=$(date +%s%N); c=$({ time eval "${cmds[$i]}" >/dev/null 2>&1; } 2>&1 || true); t1=$(date +%s%N)
        echo "$i $((t1 - t0)) $c" >>"$WORK/times.txt"
      done
    done
    "$VPY" -c 'import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
out = []
for i in range(int(sys.argv[2])):
    mine = [r for r in rows if int(r[0]) == i]
    wall = statistics.median(int(r[1]) for r in mine) / 1e9
    cpu = statistics.mean(float(r[2]) + float(r[3]) for r in mine)
    out.append(f"{wall:.6f} {cpu:.6f}")
print(" ".join(out))' "$WORK/times.txt" "${#cmds[@]}"
  fi
}

# Outcomes: each tool runs once more, untimed, with its full report, and we record the exit
# code and the error count, so that a crash is never read as a result.
# weft_outcome FILES... -> "STATUS<TAB>text"; STATUS is ok|crash
weft_outcome() {
  local rc=0
  "$WEFT" validate --json "$@" >"$WORK/weft.json" 2>"$WORK/weft.err" || rc=$?
  "$VPY" -c 'import json, sys
rc = int(sys.argv[2])
try:
    docs = json.load(open(sys.argv[1]))["documents"]
except Exception:
    print(f"crash\texit {rc}, no report"); sys.exit()
n = lambda sev: sum(1 for d in docs for f in d["findings"] if str(f.get("severity")).lower() == sev)
rej = sum(1 for d in docs if not d["ok"])
word = {0: "accepted", 1: "rejected"}.get(rc, "exit 2")
e, w = n("error"), n("warning")
print(f"ok\texit {rc}, {word}: {rej}/{len(docs)} failed; {e} errors, {w} warnings")' "$WORK/weft.json" "$rc"
}
# ref_outcome CMD... FILES... -> "STATUS<TAB>text"; STATUS is ok|crash|recursion
ref_outcome() {
  local rc=0
  "$@" >"$WORK/ref.txt" 2>&1 || rc=$?
  "$VPY" -c 'import re, sys
text = open(sys.argv[1]).read(); rc = int(sys.argv[2])
m = re.search(r"(\d+) document\(s\): (\d+) error\(s\), (\d+) warning\(s\)", text)
if "Traceback" in text or not m:
    last = [l for l in text.splitlines() if l.strip()][-1:] or ["no output"]
    kind = "recursion" if "RecursionError" in text else "crash"
    print(f"{kind}\texit {rc}, **crashed**: `{last[0].strip()[:80]}`"); sys.exit()
fails = len(re.findall(r"^=== .*\[FAIL\]$", text, re.M))
codes = sorted(set(re.findall(r"\] (AG\d+):", text)))
extra = f" ({chr(44).join(codes)})" if 0 < len(codes) <= 3 else ""
word = {0: "accepted", 1: "rejected"}.get(rc, "exit 2")
print(f"ok\texit {rc}, {word}: {fails}/{m.group(1)} failed; {m.group(2)} errors{extra}, {m.group(3)} warnings")' "$WORK/ref.txt" "$rc"
}

human_size() { "$VPY" -c 'import sys; n=int(sys.argv[1]); print(f"{n/1048576:.1f} MiB" if n >= 1048576 else f"{n/1024:.1f} KiB")' "$1"; }
ms() { "$VPY" -c 'import sys; v=float(sys.argv[1])*1e3; print(f"{v:,.0f} ms" if v >= 100 else f"{v:.1f} ms" if v >= 10 else f"{v:.2f} ms")' "$1"; }
ratio() { "$VPY" -c 'import sys; a,b=map(float,sys.argv[1:]); print(f"{a/b:.0f}×" if a/b >= 10 else f"{a/b:.1f}×")' "$1" "$2"; }

# The reference's cycle check recurses once per node on a path, so Python's default recursion
# limit (1000) makes it crash on long chains. When that happens, the case is timed again with
# this wrapper, which only raises the limit, so there is a finished run to compare with.
REF_DEEP=$WORK/ags-validate-deep-recursion
cat >"$REF_DEEP" <<EOF
#!$VPY
import sys
sys.setrecursionlimit(1_000_000)
from ags import main
sys.exit(main())
EOF
chmod +x "$REF_DEEP"

# --- 4. Measure -----------------------------------------------------------------------------
TIMES=()
OUTCOMES=()
NOTES=()
for c in "${CASES[@]}"; do
  name=${c%%|*}
  read -r -a files <<<"${c#*|}"
  bytes=$(cat "${files[@]}" | wc -c)
  size=$(human_size "$bytes")
  IFS=$'\t' read -r wst wtxt <<<"$(weft_outcome "${files[@]}")"
  IFS=$'\t' read -r rst rtxt <<<"$(ref_outcome "$REF" "${files[@]}")"
  deep=()
  if [ "$rst" = recursion ]; then
    IFS=$'\t' read -r dst dtxt <<<"$(ref_outcome "$REF_DEEP" "${files[@]}")"
    rtxt="$rtxt; with the recursion limit raised: $dtxt"
    [ "$dst" = ok ] && deep=(-- "$REF_DEEP" --quiet "${files[@]}")
  fi
  OUTCOMES+=("| $name | $wtxt | $rtxt |")
  log "timing: $name"
  read -r -a t <<<"$(time_cmds "$WEFT" validate "${files[@]}" -- "$REF" --quiet "${files[@]}" "${deep[@]}")"
  wm=${t[0]} wc=${t[1]} rm=${t[2]} rc=${t[3]}
  if [ "$wst" != ok ] || [ "$rst" != ok ]; then
    # Never print a ratio between a crash and a result.
    mark="†"
    TIMES+=("| $name | $size | $(ms "$wm")$([ "$wst" = ok ] || echo " $mark") | $(ms "$rm")$([ "$rst" = ok ] || echo " $mark") | n/a | $(ms "$wc") | $(ms "$rc") | n/a |")
  else
    TIMES+=("| $name | $size | $(ms "$wm") | $(ms "$rm") | **$(ratio "$rm" "$wm")** | $(ms "$wc") | $(ms "$rc") | $(ratio "$rc" "$wc") |")
  fi
  if [ ${#deep[@]} -gt 0 ]; then
    dm=${t[4]} dc=${t[5]}
    TIMES+=("| $name, reference with recursion limit raised ‡ | $size | $(ms "$wm") | $(ms "$dm") | **$(ratio "$dm" "$wm")** | $(ms "$wc") | $(ms "$dc") | $(ratio "$dc" "$wc") |")
  fi
  # The reference loads YAML with a loader that raises on the first duplicate key, so a
  # document with one is reported as a single AG005 and no other check runs on it.
  if [ "$rst" = ok ] && grep -q 'AG005' "$WORK/ref.txt" && grep -qE '^[^ ].*: 1 error' <(grep -E 'document\(s\)' "$WORK/ref.txt"); then
    NOTES+=("- $name: the reference stops at the first duplicate key (its YAML loader raises, AG005) and runs no other check, so its time is YAML parsing only and its report has 1 error; weft reports every finding in one pass ($wtxt). Not a like-for-like ratio.")
  fi
done

# --- 5. Report (stdout) ---------------------------------------------------------------------
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
cat <<EOF
Whole-process timings: every number includes process startup (for the reference: the
Python interpreter, imports and schema loading; for weft: a native binary). Timer: $TIMER,
$WARMUP warm-up + $RUNS timed runs per tool and case, both tools in one invocation on the same
files. Wall = median wall-clock time; CPU = mean user+system time. Ratio = reference / weft.
Load average at the end: $load on $(nproc) cores (other jobs may share the machine).

Commands: \`weft validate FILES…\` (release build; prints every finding) vs
\`ags-validate --quiet FILES…\` (agentic-graph-spec $REF_VERSION from its sdist; prints only a
summary, so output cost favours the reference).

| Case | Size | weft (wall) | reference (wall) | ratio (wall) | weft (CPU) | reference (CPU) | ratio (CPU) |
|---|---:|---:|---:|---:|---:|---:|---:|
EOF
printf '%s\n' "${TIMES[@]}"
cat <<EOF

What each tool decided (one more untimed run each, with full reports; exit 0 = accepted,
1 = rejected):

| Case | weft | reference |
|---|---|---|
EOF
printf '%s\n' "${OUTCOMES[@]}"
if [ ${#NOTES[@]} -gt 0 ] || printf '%s\n' "${TIMES[@]}" | grep -q '[†‡]'; then
  echo
  echo "Notes:"
  echo
  if printf '%s\n' "${TIMES[@]}" | grep -q '†'; then
    echo "- † The tool crashed (see the outcome table): the time is how long it ran before crashing, and no ratio is given."
  fi
  if printf '%s\n' "${TIMES[@]}" | grep -q '‡'; then
    echo "- ‡ The reference's cycle check recurses once per node along a path and hits Python's default recursion limit (1000) on long chains. This row reruns it through a wrapper that only calls \`sys.setrecursionlimit(1_000_000)\` before \`ags.main()\`, so that it finishes and the comparison is between two results."
  fi
  printf '%s\n' "${NOTES[@]}"
fi
