#!/usr/bin/env bash
# The memory store's benchmarks (docs/BENCHMARKS.md, "Memory"): MuSiQue-100 replay
# (answer/support/per-hop recall, tokens, provenance validity, determinism) and the
# 1,000,000-triple scale run (ingest rate, index rebuild, 3-hop subgraph latency).
# Usage: bench/memory-musique.sh [MUSIQUE_DIR] [--scale [TRIPLES]]
set -euo pipefail
cd "$(dirname "$0")/.."
data="${1:-}"
if [ -z "$data" ] || [ "$data" = "--scale" ]; then
  for candidate in ../shared/data/musique100 ../../shared/data/musique100 /work/shared/data/musique100; do
    if [ -d "$candidate" ]; then data="$candidate"; break; fi
  done
else
  shift
fi
[ -n "$data" ] || { echo "MuSiQue-100 data not found; pass its directory" >&2; exit 2; }
cargo run --locked --release -p weft-memory --example musique -- --data "$data"
if [ "${1:-}" = "--scale" ]; then
  cargo run --locked --release -p weft-memory --example scale -- "${2:-1000000}"
fi
