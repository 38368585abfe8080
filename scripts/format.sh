#!/usr/bin/env bash
# Formats the Swift sources in place with `swift format` and the checked-in `.swift-format` (4 spaces, lines of
# 120 columns, the width the comments were already written to). Run it before committing; scripts/lint.sh,
# which CI runs, fails on anything it would change.
#
#   scripts/format.sh            # Sources, Tests, Benchmarks and Package.swift
#   scripts/format.sh FILE…      # only these files or folders
#
# A few findings cannot be fixed by the formatter (an end-of-line comment pushed past the line length, a
# `forEach`, a call with two closures): scripts/lint.sh names them; move the comment above its line or
# rewrite the call by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
if (($#)); then
    paths=("$@")
else
    paths=(Sources Tests Benchmarks Package.swift)
fi
swift format format --in-place --recursive --configuration .swift-format "${paths[@]}"
