#!/usr/bin/env bash
# Installs the Python MCP SDK (`mcp` 2.3.0, the official one) that weft-mcp's tests run their
# real MCP server on (scripts/mcp/test_server.py). Idempotent; cached in a venv under
# $WEFT_MCP_VENV (default $HOME/.cache/weft/mcp-venv). docs/tools.md, "MCP servers".
set -euo pipefail
venv="${WEFT_MCP_VENV:-$HOME/.cache/weft/mcp-venv}"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import mcp.server.mcpserver' 2>/dev/null; then
  echo "mcp venv: $venv (already installed)"
  exit 0
fi
command -v python3 >/dev/null || { echo "error: python3 is missing (apt-get install -y python3)" >&2; exit 1; }
# A half-made venv from an interrupted run is made again (venvs record their own path, so
# it is built in place rather than renamed into place).
rm -rf "$venv"
python3 -m venv "$venv" \
  || { echo "error: python3 -m venv failed (apt-get install -y python3-venv)" >&2; exit 1; }
"$venv/bin/pip" install -q --disable-pip-version-check 'mcp==2.3.0'
"$venv/bin/python" -c 'import mcp.server.mcpserver'
echo "mcp venv: $venv"
