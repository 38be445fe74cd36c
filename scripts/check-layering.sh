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
[ $status -eq 0 ] && echo "layering: weft-agx, weft-ags, weft-core and weft-policy are free of runtime, storage and network crates"
exit $status
