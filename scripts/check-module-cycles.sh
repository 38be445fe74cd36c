#!/usr/bin/env bash
# The top-level modules of a crate import each other in no circle (docs/ARCHITECTURE.md,
# "Layers inside a crate"): in weft-engine, vocabulary at the bottom, the log's readers above
# it, the driver on top. Fails naming every cycle, each edge with the line that makes it.
# The edges are read from the source as text by scripts/module-edges.py (`use crate::{a,
# b::c}`, `crate::x::` in any path, `super::`/`self::` resolved from the file's place, `pub
# use`, names the crate root re-exports; test code, comments and strings left out).
#
#   scripts/check-module-cycles.sh              the crates below
#   scripts/check-module-cycles.sh CRATE_DIR…   those crates
#
# Before the crates, the checker is tried on a crate with a planted cycle (it must fail and
# name it) and on one whose only "cycle" is in test code, comments and strings (it must pass),
# so a checker that stopped seeing edges cannot pass silently.
set -euo pipefail
cd "$(dirname "$0")/.."

# The crates kept acyclic: every crate of the workspace, a new one included
# (`scripts/module-edges.py --cycles crates/NAME` names a cycle's edges).
checked=()
for dir in crates/*/; do checked+=("${dir%/}"); done
if [ $# -gt 0 ]; then checked=("$@"); fi

edges=scripts/module-edges.py

selftest() {
  local dir
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' RETURN
  mkdir -p "$dir/planted/src/b" "$dir/clean/src"
  # planted: a -> b (a grouped use spanning lines), b -> c (a path in an expression, from a
  # submodule), c -> a (`super::` at the top level, through a name the root re-exports).
  cat >"$dir/planted/src/lib.rs" <<'EOF'
mod a;
mod b;
pub mod c;
pub use a::Alpha;
EOF
  cat >"$dir/planted/src/a.rs" <<'EOF'
use crate::{
    b::{Beta, beta},
};
pub struct Alpha;
EOF
  cat >"$dir/planted/src/b/mod.rs" <<'EOF'
mod inner;
pub struct Beta;
pub fn beta() {}
EOF
  cat >"$dir/planted/src/b/inner.rs" <<'EOF'
fn f() { let _ = crate::c::gamma(); }
EOF
  cat >"$dir/planted/src/c.rs" <<'EOF'
pub fn gamma() -> super::Alpha { super::Alpha }
EOF
  # clean: b -> a only; a's mentions of b are in test code, a comment, a string, a doc link.
  cat >"$dir/clean/src/lib.rs" <<'EOF'
mod a;
mod b;
EOF
  cat >"$dir/clean/src/a.rs" <<'EOF'
//! See [`crate::b`].
pub fn alpha() -> &'static str { "crate::b::beta" } // crate::b::beta
#[cfg(test)]
mod tests {
    use crate::b::beta;
}
EOF
  cat >"$dir/clean/src/b.rs" <<'EOF'
pub fn beta() { let _ = crate::a::alpha(); }
EOF
  local out
  if out=$(python3 "$edges" --cycles "$dir/planted" 2>&1); then
    echo "check-module-cycles: the self-test's planted cycle a -> b -> c -> a was not found" >&2
    return 1
  fi
  for edge in "a -> b" "b -> c" "c -> a"; do
    if ! grep -q "  $edge  " <<<"$out"; then
      printf 'check-module-cycles: the self-test did not name the edge %s:\n%s\n' "$edge" "$out" >&2
      return 1
    fi
  done
  if ! out=$(python3 "$edges" --cycles "$dir/clean" 2>&1); then
    printf 'check-module-cycles: the self-test saw a cycle in test code, comments or strings:\n%s\n' "$out" >&2
    return 1
  fi
}
selftest

status=0
for crate in "${checked[@]}"; do
  if ! python3 "$edges" --cycles "$crate" >&2; then
    status=1
  fi
done
if [ $status -eq 0 ]; then
  echo "module cycles: none among the top-level modules of ${checked[*]##*/}"
fi
exit $status
