#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need, only those missing.
#   liblmdb-dev libzstd-dev libxxhash-dev pkg-config: the C libraries the package links (pkg-config names
#   lmdb, libzstd, libxxhash); xfsprogs: mkfs.xfs for the reflink test; lmdb-utils: mdb_stat for looking
#   inside a store; zstd: the CLI the benchmarks compare against; jq: run.sh reads JSON with it;
#   nginx-light: the HTTP origin the cold-path tests start themselves on 127.0.0.1 (no service is enabled:
#   the tests run their own with a generated config); curl: the benchmarks' download floor; openssl: the TLS test's certificate.
#   strace: a test kills the first open of a store at each of its writes (strace -e inject=…:signal=KILL).
#   libfuse3-dev, fuse3: `chunkcache mount` links libfuse 3 and unmounts with fusermount3; attr (getfattr,
#   setfattr) and sqlite3: the mount's tests read through it with them. rclone: Benchmarks/mount.sh sets
#   `rclone mount` beside `chunkcache mount`. time: /usr/bin/time, the peak RSS of Benchmarks/cold.sh's commands.
set -euo pipefail
packages=(liblmdb-dev libzstd-dev libxxhash-dev pkg-config xfsprogs lmdb-utils zstd jq nginx-light curl openssl strace fuse3 libfuse3-dev attr sqlite3 rclone time)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
missing=()
for package in "${packages[@]}"; do
    dpkg -s "$package" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$package")
done
if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -q
    $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# Python packages through pip: Debian's own python3 has no pip until python3-pip is installed, and refuses
# installs into the system (PEP 668) unless told; a python3 of pyenv or a virtualenv takes them as they are.
ensure_pip() {
    if ! python3 -m pip --version >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends python3-pip
    fi
}
pip_install() {
    ensure_pip
    python3 -m pip install -q "$@" 2>/dev/null || $sudo python3 -m pip install -q --break-system-packages "$@"
}
# pip itself: Benchmarks/prefetch.sh fetches Django's wheels with `pip download` (into its data folder; nothing
# is installed).
ensure_pip
# botocore: the SigV4 tests compare the signer with botocore's on the same requests.
python3 -c 'import botocore' 2>/dev/null || pip_install botocore
# moto's server mode: the S3 origin the tests start on 127.0.0.1 (python3 -m moto.server -H 127.0.0.1 -p PORT).
python3 -c 'import moto.server' 2>/dev/null || pip_install 'moto[server]'
