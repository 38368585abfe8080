# Sourced by Benchmarks/run.sh and Benchmarks/peers/cold.sh: serves a directory with nginx on 127.0.0.1 and
# puts scripts/delay-proxy.py in front of it (10 ms each way: 20 ms of round-trip time; this kernel has no
# netem). Sets ORIGIN_URL, ORIGIN_URL_20MS and ORIGIN_PIDS; the caller kills ORIGIN_PIDS when done.
# The same files are also served below /json/ with nginx's JSON autoindex, which `chunkcache domain sync`
# lists (rclone's http remote lists the HTML one at the root): "${ORIGIN_URL}json/" is an origin to sync.
# With ACCESS_LOG, nginx logs each request there as "METHOD STATUS BODY_BYTES_SENT URI" (what a client
# downloaded, and in how many requests).
#
#   start_origin DIR RUNDIR REPO_ROOT [ACCESS_LOG]
start_origin() {
    local dir="$1" run="$2" repo="$3" nginx port proxy_port access="access_log off;"
    if [[ -n ${4:-} ]]; then
        access='log_format bench "$request_method $status $body_bytes_sent $uri"; access_log '"$4"' bench;'
    fi
    nginx="$(command -v nginx || echo /usr/sbin/nginx)"
    [[ -x "$nginx" ]] || { echo "no nginx (apt-get install nginx-light)" >&2; return 1; }
    mkdir -p "$run"
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    cat >"$run/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $run/nginx.pid;
error_log $run/error.log warn;
events { worker_connections 1024; }
http {
    default_type application/octet-stream;
    client_body_temp_path $run/body;
    proxy_temp_path $run/proxy;
    fastcgi_temp_path $run/fastcgi;
    uwsgi_temp_path $run/uwsgi;
    scgi_temp_path $run/scgi;
    $access
    sendfile on;
    keepalive_requests 1000000;
    # HTML autoindex: rclone's http remote lists folders from it; /json/: the same files, listed as
    # chunkcache's domain sync reads them.
    server {
        listen 127.0.0.1:$port; root $dir; etag on; autoindex on;
        location /json/ { alias $dir/; autoindex_format json; index .chunkcache-no-index; }
    }
}
CONF
    "$nginx" -c "$run/nginx.conf" -p "$run" &
    ORIGIN_PIDS="$!"
    rm -f "$run/proxy.port"
    python3 "$repo/scripts/delay-proxy.py" --target "127.0.0.1:$port" --delay-ms 10 --port-file "$run/proxy.port" &
    ORIGIN_PIDS="$ORIGIN_PIDS $!"
    for _ in $(seq 100); do
        [[ -f "$run/proxy.port" ]] && python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
        sleep 0.1
    done
    proxy_port="$(cat "$run/proxy.port")"
    ORIGIN_URL="http://127.0.0.1:$port/"
    ORIGIN_URL_20MS="http://127.0.0.1:$proxy_port/"
}

# make_random FILE SIZE: random bytes, made once and kept while the size matches.
make_random() {
    [[ -f "$1" && $(stat -c %s "$1") == "$2" ]] || head -c "$2" /dev/urandom >"$1"
}
