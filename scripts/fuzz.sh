#!/usr/bin/env bash
# Runs the cargo-fuzz targets of fuzz/ for a bounded time each; fails on a crash.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# SECONDS per target (default 60); TARGETs default to every target (`cargo fuzz list`).
# Needs the nightly toolchain (installed offline here) and cargo-fuzz, which it installs
# with `cargo install cargo-fuzz --locked` when missing. Environment:
#   FUZZ_SANITIZER  libFuzzer sanitizer (default "none": the crates forbid unsafe code,
#                   so ASan adds build time and little else; use "address" to be thorough)
#   CARGO_TARGET_DIR is honoured (cargo-fuzz passes it to cargo).
# Crashes are written to fuzz/artifacts/<target>/ and the script exits non-zero.
set -euo pipefail

secs="${1:-60}"
shift || true
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/fuzz"

if ! rustup toolchain list | grep -q '^nightly'; then
    echo "fuzz.sh: the nightly toolchain is required (rustup toolchain install nightly)" >&2
    exit 2
fi
if ! cargo +nightly fuzz --help >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

# Seed the loader corpora with the shared AGS examples when they are there.
shared="$root/../shared/ags/examples"
seed() {
    local target="$1" pattern="$2"
    mkdir -p "corpus/$target"
    if [ -d "$shared" ]; then
        for f in "$shared"/$pattern; do
            [ -e "$f" ] && cp -n "$f" "corpus/$target/" 2>/dev/null || true
        done
    fi
}
seed load_yaml '*.yaml'
seed load_json '*.json'
seed validate '*.yaml'

status=0
for t in "${targets[@]}"; do
    echo "=== fuzzing $t for ${secs}s" >&2
    mkdir -p "corpus/$t"
    if ! cargo +nightly fuzz run --sanitizer "${FUZZ_SANITIZER:-none}" --debug-assertions \
        "$t" "corpus/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1; then
        echo "fuzz.sh: target $t FAILED (see fuzz/artifacts/$t/)" >&2
        status=1
    fi
done
exit "$status"
