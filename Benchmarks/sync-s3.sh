#!/usr/bin/env bash
# `domain sync` of an S3 listing (CONTRACT §11) beside its floor, the same listing read by boto3:
# moto's server on 127.0.0.1 holds N objects (default 100,000) under one prefix; the script times
#   boto3 list:   list_objects_v2 over every page (the floor: the listing alone, no store)
#   engine sync:  `chunkcache domain sync` of a new store (listing + one transaction creating N items)
#   engine sync again: the same sync with nothing changed (listing + matching, nothing written)
# and prints one line per figure. Needs python3 with moto and boto3 (scripts/install-deps.sh installs them)
# and the release CLI (built here). Usage: Benchmarks/sync-s3.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-100000}"
work="$(mktemp -d /tmp/chunkcache-sync-s3.XXXXXX)"
port=$((20000 + RANDOM % 20000))
python3 -m moto.server -H 127.0.0.1 -p "$port" > "$work/moto.log" 2>&1 &
moto=$!
trap 'kill $moto 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -s "http://127.0.0.1:$port/" > /dev/null && break; sleep 0.1; done
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=us-east-1
swift build -c release --product chunkcache > /dev/null
cli="$(swift build -c release --show-bin-path)/chunkcache"
python3 - "$port" "$count" <<'PY'
import sys, boto3, botocore.config
from concurrent.futures import ThreadPoolExecutor
port, count = sys.argv[1], int(sys.argv[2])
config = botocore.config.Config(s3={"addressing_style": "path"}, max_pool_connections=32)
s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", config=config)
s3.create_bucket(Bucket="bench")
def put(i): s3.put_object(Bucket="bench", Key=f"data/d{i % 100}/object-{i}.bin", Body=b"x" * (i % 4096))
with ThreadPoolExecutor(16) as pool: list(pool.map(put, range(count)))
PY
python3 - "$port" <<'PY'
import sys, time, boto3, botocore.config
config = botocore.config.Config(s3={"addressing_style": "path"})
s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{sys.argv[1]}", config=config)
start = time.monotonic(); n = 0
for page in s3.get_paginator("list_objects_v2").paginate(Bucket="bench", Prefix="data/"): n += len(page.get("Contents", []))
print(f"boto3 list:        {time.monotonic() - start:7.2f} s  ({n} objects)")
PY
"$cli" --store "$work/store" domain add s3 --origin s3://bench/data/ --endpoint "http://127.0.0.1:$port" --region us-east-1 > /dev/null
for label in "engine sync:      " "engine sync again:"; do
    start=$EPOCHREALTIME
    out="$("$cli" --store "$work/store" --json domain sync s3)"
    end=$EPOCHREALTIME
    printf '%s %7.2f s  %s\n' "$label" "$(awk "BEGIN { print $end - $start }")" "$out"
done
