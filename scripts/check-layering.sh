#!/usr/bin/env bash
# The pure crates (document model, validator, planner, expression language, scheduler,
# permission policy) must not depend on an async runtime, a database, HTTP or a web framework
# (docs/ARCHITECTURE.md, "Architecture invariants"). Fails when one of them appears in their dependency trees.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
for crate in weft-agx weft-ags weft-core weft-policy; do
  tree=$(cargo tree -p "$crate" -e normal --prefix none --format '{p}' 2>/dev/null)
  for banned in tokio sqlx rusqlite reqwest hyper axum aws-lc-sys; do
    if grep -qE "^${banned} v" <<<"$tree"; then
      echo "layering violation: $crate depends on $banned (cargo tree -p $crate -i $banned)" >&2
      status=1
    fi
  done
done
# The engine calls no network: model providers live in weft-agents, which depends on the
# engine (docs/agents.md), never the reverse.
tree=$(cargo tree -p weft-engine -e normal --prefix none --format '{p}' 2>/dev/null)
for banned in reqwest hyper weft-agents weft-host; do
  if grep -qE "^${banned} v" <<<"$tree"; then
    echo "layering violation: weft-engine depends on $banned (cargo tree -p weft-engine -i $banned)" >&2
    status=1
  fi
done
# The built-in tools know nothing of runs or models: the agent loop (weft-agents) uses them,
# never the reverse, and they call no network themselves (docs/tools.md).
tree=$(cargo tree -p weft-tools -e normal --prefix none --format '{p}' 2>/dev/null)
for banned in weft-engine weft-agents reqwest hyper; do
  if grep -qE "^${banned} v" <<<"$tree"; then
    echo "layering violation: weft-tools depends on $banned (cargo tree -p weft-tools -i $banned)" >&2
    status=1
  fi
done
# What hosts a run (weft.toml, the run's setup, the run view) sits above the engine and the
# agents and below the CLI: only weft-cli may depend on it (docs/ARCHITECTURE.md).
users=$(cargo tree --workspace -e normal -i weft-host --prefix none --format '{p}' 2>/dev/null \
  | grep -E '^weft-' | grep -vE '^weft-(host|cli) v' || true)
if [ -n "$users" ]; then
  echo "layering violation: only weft-cli may depend on weft-host, not:" >&2
  echo "$users" >&2
  status=1
fi
# No crate pulls the aws-lc C build: weft-agents gives rustls the ring provider (docs/agents.md).
if cargo tree --workspace -e all -i aws-lc-sys >/dev/null 2>&1; then
  echo "layering violation: aws-lc-sys is in the build (cargo tree --workspace -e all -i aws-lc-sys)" >&2
  status=1
fi
# The engine reads the time and waits only through its clock port (weft-engine/src/clock.rs,
# docs/engine.md §1a), so tests move time by hand. A line may opt out with a
# `clock-exempt:` comment on it or the line above, saying why.
clock_reads=$(grep -rnE -B1 'SystemTime::now|Instant::now|tokio::time::(sleep|timeout|interval)' \
  crates/weft-engine/src --include='*.rs' | grep -v '^crates/weft-engine/src/clock\.rs' \
  | awk '/clock-exempt:/ { skip = 1; next } /SystemTime::now|Instant::now|tokio::time::(sleep|timeout|interval)/ { if (!skip) print; } { skip = 0 }')
if [ -n "$clock_reads" ]; then
  echo "layering violation: weft-engine reads the time or sleeps outside its clock port (crates/weft-engine/src/clock.rs):" >&2
  echo "$clock_reads" >&2
  status=1
fi
# Inside a crate: the engine's top-level modules (and those of the crates already free of
# it) import each other in no circle, vocabulary at the bottom, the log's readers above it,
# the driver on top (docs/ARCHITECTURE.md, "Layers inside a crate").
if ! scripts/check-module-cycles.sh; then
  status=1
fi
[ $status -eq 0 ] && echo "layering: weft-agx, weft-ags, weft-core and weft-policy are free of runtime, storage and network crates; weft-engine of HTTP and weft-host, and reads time only through its clock; weft-host is used by weft-cli alone; weft-tools of the engine, agents and HTTP; the build of aws-lc-sys"
exit $status
