#!/usr/bin/env bash
# Checks the Swift sources against the checked-in `.swift-format` without changing them, and fails on any
# finding (`--strict`): layout scripts/format.sh would change, or a rule of the configuration broken. CI runs
# it (.ci/run). Arguments replace the default paths.
set -euo pipefail
cd "$(dirname "$0")/.."
if (($#)); then
    paths=("$@")
else
    paths=(Sources Tests Benchmarks Package.swift)
fi
swift format lint --strict --recursive --parallel --configuration .swift-format "${paths[@]}"
