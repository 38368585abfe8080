#!/usr/bin/env python3
"""Fails (exit 1, one line saying by how much) when README.md is longer than 200 lines.

The README is a newcomer's first page: what chunkcache is, the two commands that install, demo and test
it, a quick start, and where to read more. Detail belongs in the DocC catalogue
(Sources/ChunkCache/ChunkCache.docc), which has room for it.

usage: scripts/check-readme-length.py [FILE]   (default README.md; scripts/docs.sh runs it, and CI runs that)
"""

import pathlib
import sys

LIMIT = 200


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else root / "README.md"
    lines = len(path.read_text().splitlines())
    if lines > LIMIT:
        print(f"{path}: {lines} lines, {lines - LIMIT} over the limit of {LIMIT}; move the detail into a DocC "
              "article of Sources/ChunkCache/ChunkCache.docc and link it")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
