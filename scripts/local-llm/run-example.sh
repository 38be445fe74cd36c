#!/usr/bin/env bash
# Runs examples/local-model.agraph.yaml end to end on the local model, with no API key: builds
# weft, installs the model and its server (cached; scripts/local-llm/install.sh), starts the
# server on a free loopback port (1 thread), writes a weft.toml that routes every tier to it,
# runs the graph with `weft run --config weft.toml`, and prints the result and where the run
# record is. The same graph runs on a hosted model by changing weft.toml only (docs/agents.md
# §6). Each step says what it does and how long it takes; the first time, building weft is
# most of it (about 11 minutes in all on 2 cores), then the model's download (177 MB on disk).
#
# Usage: scripts/local-llm/run-example.sh [WORK_DIR]   (default: a new temporary directory)
# WEFT: the weft command to use (default: built and run with cargo from this checkout).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cache="${WEFT_LOCAL_LLM:-$HOME/.cache/weft/local-llm}"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"

step() { printf '\n==> %s\n' "$*"; }
started=$SECONDS
took() { echo "    ($(($SECONDS - started)) s)"; started=$SECONDS; }

if [ -z "${WEFT:-}" ]; then
  step "building weft (cargo build -p weft-cli: the first time nearly all of the ~11 minutes this takes on 2 cores; seconds after)"
  cargo build --locked --manifest-path "$repo/Cargo.toml" -p weft-cli
  weft=(cargo run -q --locked --manifest-path "$repo/Cargo.toml" -p weft-cli --)
  took
else
  weft=($WEFT)
fi

step "installing the local model into $cache (once: 177 MB; a second run does nothing)"
"$repo/scripts/local-llm/install.sh" | sed 's/^/    /'
took

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
step "starting the model server on http://127.0.0.1:$port (1 thread; its log: $work/local-llm.log)"
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
took

{
  printf '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:%s"\ntimeout_seconds = 240\n' "$port"
  for tier in minimal standard advanced frontier; do
    printf '\n[tiers.%s]\nprovider = "local"\nmodel = "smollm2"\ncontext_tokens = 4096\n' "$tier"
  done
} >"$work/weft.toml"
cp "$repo/examples/local-model.agraph.yaml" "$work/"

step "running local-model.agraph.yaml in $work (weft run --config weft.toml: two model calls, a few seconds)"
cd "$work"
status=0
"${weft[@]}" run --config weft.toml local-model.agraph.yaml || status=$?
echo
for filed in page.json queue.json; do
  if [ -f "$filed" ]; then echo "filed ticket ($filed): $(cat "$filed")"; fi
done
echo "work directory: $work (weft.toml, the store .weft/, the run record .weft/records/)"
exit "$status"
