#!/usr/bin/env bash
# Checks that every `§N` and rule code the code cites has its entry in the catalogue, and that the tests the
# File Provider rules name exist (scripts/check-references.py), and that README.md stays within 200 lines
# (scripts/check-readme-length.py), then builds the DocC catalogue of the library (Sources/ChunkCache/ChunkCache.docc: the contract by section,
# the File Provider rules by code, and articles on how the engine works) with swift-docc-plugin, and fails
# on any documentation warning: a broken symbol link, an unknown article, a malformed page.
#
# It builds the ChunkCache target's symbol graph first, so it takes a few minutes on a cold build.
# The archive lands in .build/plugins/Swift-DocC/outputs/ChunkCache.doccarchive. Arguments go to the
# plugin (e.g. `scripts/docs.sh --output-path /tmp/docs`).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 scripts/check-references.py
python3 scripts/check-readme-length.py
swift package generate-documentation --target ChunkCache --warnings-as-errors "$@"
