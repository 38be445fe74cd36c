#!/usr/bin/env bash
# `weft run` of a chain of decision nodes as a user runs it (issue 12, "Performance"): the
# syncs of the whole process (strace), its CPU time and its peak RSS (/usr/bin/time -v).
# The documents are W4's `chain:N` (crates/weft-bench/src/workloads.rs, `Shape::Chain`),
# written here by the same rules so no bench crate has to be built.
#
#   scripts/measure-weft-run.sh [WEFT_BINARY] [N...]     (default: target/release/weft, 1000 10000)
#
# Prints one block per N: sync calls by kind (strace -f -c, a separate run), then user+sys
# CPU seconds and peak RSS (another run, not traced), each in a fresh project directory.
set -euo pipefail
weft=${1:-${CARGO_TARGET_DIR:-target}/release/weft}
shift || true

sizes=("$@"); [ "$#" -eq 0 ] && sizes=(1000 10000)
weft=$(realpath "$weft")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gen() {
  python3 - "$1" <<'PY'
import json, sys
n = int(sys.argv[1])
def body(deps):
    node = {"type": "decision", "title": "Step", "description": "A benchmark step.",
            "decision": {"evaluator": "expression",
                         "branches": [{"label": "done", "description": "Always.", "when": "true"}]}}
    if deps:
        node["depends_on"] = deps
    return node
nodes = {f"c{i}": body([f"c{i-1}"] if i else []) for i in range(n)}
print(json.dumps({"ags_version": "1.0", "kind": "AgenticGraph", "id": "bench/engine",
                  "version": "1.0.0", "title": "Engine benchmark workload",
                  "objective": "Measure the engine's own cost per node.",
                  "constraints": {"max_parallel_nodes": n}, "entrypoints": ["c0"],
                  "nodes": nodes}, indent=2))
PY
}
for n in "${sizes[@]}"; do
  doc="$work/chain-$n.agraph.json"
  gen "$n" >"$doc"
  echo "== weft run chain:$n ($weft)"
  if command -v strace >/dev/null; then
    d="$work/s$n"; mkdir -p "$d"
    (cd "$d" && strace -f -c -e trace=fsync,fdatasync,sync_file_range -o "$work/strace-$n" \
      "$weft" run "$doc" --json >/dev/null)
    awk -v n="$n" '/fsync|fdatasync|sync_file_range/ { printf "  %-16s %7d calls  %.2f per node\n", $NF, $4, $4 / n }' "$work/strace-$n"
  else
    echo "  (strace not installed: no sync counts)"
  fi
  d="$work/t$n"; mkdir -p "$d"
  (cd "$d" && /usr/bin/time -v "$weft" run "$doc" --json >/dev/null 2>"$work/time-$n") || true
  awk -v n="$n" -F': ' '
    /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident/ { rss = $2 }
    /Elapsed \(wall/ { w = $2 }
    END { printf "  CPU %.3f s (user %.3f + sys %.3f), %.1f us per node; wall %s; peak RSS %.1f MB, %.1f KB per node\n",
          u + s, u, s, (u + s) * 1e6 / n, w, rss / 1024, rss / n }' "$work/time-$n"
done
