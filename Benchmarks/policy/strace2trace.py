#!/usr/bin/env python3
"""Turns an `strace -f -e trace=openat,open,read,pread64,lseek,close` log into an access trace: one line
per read that returned bytes, `path<TAB>offset<TAB>length`, following each descriptor's file position."""
import re, sys

line_re = re.compile(r'^(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+)')
files, positions = {}, {}
for line in open(sys.argv[1], errors="replace"):
    m = line_re.match(line)
    if not m:
        continue
    pid, call, args, result = m.group(1), m.group(2), m.group(3), int(m.group(4))
    if call in ("openat", "open"):
        path = re.search(r'"([^"]*)"', args)
        if result >= 0 and path:
            files[(pid, result)] = path.group(1)
            positions[(pid, result)] = 0
    elif call == "close":
        fd = int(args.split(",")[0])
        files.pop((pid, fd), None)
    elif call == "lseek" and result >= 0:
        fd = int(args.split(",")[0])
        positions[(pid, fd)] = result
    elif call in ("read", "pread64") and result > 0:
        fd = int(args.split(",")[0])
        path = files.get((pid, fd))
        if path is None:
            continue
        if call == "pread64":
            offset = int(args.rsplit(",", 1)[1])
        else:
            offset = positions.get((pid, fd), 0)
            positions[(pid, fd)] = offset + result
        print(f"{path}\t{offset}\t{result}")
