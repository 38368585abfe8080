#!/usr/bin/env bash
# One command from a fresh machine to a working store: installs what is missing, builds chunkcache in
# release mode, imports a real file tree (the Swift runtime libraries, ~140 MB of binaries) into a
# sample store, fetches a byte range of one file, checks it against the original, and prints `stat`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build -c release --product chunkcache
bin="$(swift build -c release --show-bin-path)/chunkcache"

work="${CHUNKCACHE_DEMO_DIR:-/tmp/chunkcache-demo}"
source_tree="${1:-$(dirname "$(command -v swift)")/../lib/swift/linux}"
rm -rf "$work"
mkdir -p "$work"
store="$work/store"
echo "== init a store with 64 KiB chunks at $store"
"$bin" --store "$store" init --chunk-size 64KiB
echo "== import $source_tree (copied, left in place) as domain 'toolchain'"
time "$bin" --store "$store" import "$source_tree" --domain toolchain --copy

item="$(cd "$source_tree" && find . -type f -size +4M | sed 's|^\./||' | sort | head -1)"
echo "== fetch bytes 1000000:100000 of '$item', aligned to 4 KiB"
"$bin" --store "$store" fetch --domain toolchain "$item" --range 1000000:100000 --align 4096 --out "$work/range.bin"
cmp -i 983040:983040 -n 131072 "$source_tree/$item" "$work/range.bin" && echo "bytes 983040..1114112 match the original"
echo "== stat"
"$bin" --store "$store" stat
