#!/usr/bin/env bash
# Installs the real tools the shipped examples' tests call (crates/weft-cli/tests/
# shipped_examples/: pytest, mkdocs, ruff, mypy, python) into a virtual environment from
# PyPI. Idempotent and cached: $WEFT_EXAMPLES_VENV, else $HOME/.cache/weft/examples-venv;
# a second run with everything present does nothing. The tests link the tools into each
# temporary project's .weft/bin (docs/engine.md §3m).
set -euo pipefail

venv="${WEFT_EXAMPLES_VENV:-$HOME/.cache/weft/examples-venv}"
# Pinned so a run is reproducible; bump together.
packages=(pytest==8.3.5 mkdocs==1.6.1 ruff==0.11.2 mypy==1.15.0 setuptools==75.8.0 wheel==0.45.1)

have_all() {
  local tool
  for tool in pytest mkdocs ruff mypy python; do
    [ -x "$venv/bin/$tool" ] || return 1
  done
  "$venv/bin/python" -c "import setuptools, wheel" 2>/dev/null
}

if have_all; then
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${packages[@]}"
# `python` is what the examples' criteria call; a venv may only have python3.
[ -e "$venv/bin/python" ] || ln -s python3 "$venv/bin/python"
have_all
