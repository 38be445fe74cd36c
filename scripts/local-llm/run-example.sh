#!/usr/bin/env bash
# Runs examples/local-model.agraph.yaml end to end on the local model, with no API key: installs
# the model and its server (cached; scripts/local-llm/install.sh), starts the server on a free
# loopback port (1 thread), writes a weft.toml that routes every tier to it, runs the graph with
# `weft run --config weft.toml`, and prints the result and where the run record is. The same
# graph runs on a hosted model by changing weft.toml only (docs/agents.md §6).
#
# Usage: scripts/local-llm/run-example.sh [WORK_DIR]   (default: a new temporary directory)
# WEFT: the weft command to use (default: cargo run from this checkout).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cache="${WEFT_LOCAL_LLM:-$HOME/.cache/weft/local-llm}"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
weft=(${WEFT:-cargo run -q --manifest-path "$repo/Cargo.toml" -p weft-cli --})

"$repo/scripts/local-llm/install.sh" >/dev/null

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
THREADS=1 "$cache/node" "$cache/server/shim.mjs" "$cache/models/SmolLM2-135M-Instruct.Q4_1.gguf" "$port" \
  >"$work/local-llm.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
python3 - "$port" <<'PY'
import sys, time, urllib.request
for _ in range(240):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=2)
        sys.exit(0)
    except OSError:
        time.sleep(0.5)
sys.exit("the local model server did not start (see local-llm.log)")
PY

{
  printf '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:%s"\ntimeout_seconds = 240\n' "$port"
  for tier in minimal standard advanced frontier; do
    printf '\n[tiers.%s]\nprovider = "local"\nmodel = "smollm2"\ncontext_tokens = 4096\n' "$tier"
  done
} >"$work/weft.toml"
cp "$repo/examples/local-model.agraph.yaml" "$work/"

cd "$work"
status=0
"${weft[@]}" run --config weft.toml local-model.agraph.yaml || status=$?
echo
for filed in page.json queue.json; do
  if [ -f "$filed" ]; then echo "filed ticket ($filed): $(cat "$filed")"; fi
done
echo "work directory: $work (weft.toml, the store .weft/, the run record .weft/records/)"
exit "$status"
