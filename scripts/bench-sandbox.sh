#!/usr/bin/env bash
# Start-to-exit of `/bin/true`, whole processes (docs/BENCHMARKS.md, "Sandbox: the cost of a
# confined step"): unconfined, through the sandbox helper built from BEFORE (a checkout of an
# earlier commit, optional), through the current helper, and through the current helper with
# a read-only `.weft` (the job's mount namespace). Needs hyperfine (apt-get install -y
# hyperfine) and release builds of weft-sandbox-exec.
# Usage: scripts/bench-sandbox.sh NEW_HELPER [OLD_HELPER]
set -euo pipefail
new=$1
old=${2:-}
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
mkdir -p "$ws/out" "$ws/.weft"
narrow="{\"read_roots\":[\"$ws\"],\"write_roots\":[\"$ws/out\"],\"net\":{\"mode\":\"none\"},\"cpu_seconds\":null,\"max_file_bytes\":null}"
whole="{\"read_roots\":[\"$ws\"],\"write_roots\":[\"$ws\"],\"net\":{\"mode\":\"none\"},\"cpu_seconds\":null,\"max_file_bytes\":null,\"workspace\":\"$ws\",\"read_only\":[\"$ws/.weft\"]}"
args=(-N --warmup 50 --runs 600 --export-json "$ws/out.json" -n true /bin/true)
[ -n "$old" ] && args+=(-n before "$old --policy '$narrow' -- /bin/true")
args+=(-n now "$new --policy '$narrow' -- /bin/true")
args+=(-n "now, read-only .weft" "$new --policy '$whole' -- /bin/true")
(cd "$ws" && hyperfine "${args[@]}" >/dev/null)
python3 - "$ws/out.json" <<'PY'
import json, statistics, sys
for r in json.load(open(sys.argv[1]))["results"]:
    t = sorted(r["times"])
    print(f"{r['command']:22s} min {t[0]*1e3:.2f} ms  median {statistics.median(t)*1e3:.2f} ms  "
          f"CPU (user+sys) {(r['user']+r['system'])*1e3:.2f} ms")
PY
