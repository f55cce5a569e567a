#!/usr/bin/env bash
# Cached 1 KiB and 16 KiB responses through `urlcache proxy` and through nginx proxy_cache
# (Debian nginx-light), configured alike, on this machine, in one run: requests/s, p50, p99, and
# the ratio ours/nginx, measured with wrk.
#
#   Benchmarks/proxy/wrk-vs-nginx.sh            # 10 s per run, 2 threads, 32 connections
#   DURATION=30s THREADS=4 CONNECTIONS=128 Benchmarks/proxy/wrk-vs-nginx.sh
#   SCRATCH=.build-proxy Benchmarks/proxy/wrk-vs-nginx.sh   # another build folder
#   PERF_OUT=/tmp/proxy.perf Benchmarks/proxy/wrk-vs-nginx.sh  # also `perf record -g` the proxy during its 1 KiB run
#
# Alike means: both on loopback, both with as many workers / event loop threads as cores, access
# logs off in both, keep-alive without a request limit in both, responses stored with
# `Cache-Control: max-age=3600` by one origin (an nginx server block serving static files), both
# caches warmed (and checked to answer HIT) before wrk runs. wrk, nginx and the proxy share the
# machine's cores, as they would on a service host.
set -euo pipefail

DURATION=${DURATION:-10s}
THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-32}
SCRATCH=${SCRATCH:-.build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d /tmp/suc-wrk-XXXXXX)
ORIGIN_PORT=${ORIGIN_PORT:-18080}
NGINX_PORT=${NGINX_PORT:-18081}
OURS_PORT=${OURS_PORT:-18082}
CORES=$(nproc)
PROXY_PID=""

cleanup() {
    [ -n "$PROXY_PID" ] && kill -TERM "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null || true
    [ -f "$WORK/nginx.pid" ] && kill -QUIT "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
    sleep 0.5
    rm -rf "$WORK"
}
trap cleanup EXIT

need_install=()
command -v wrk >/dev/null || need_install+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need_install+=(nginx-light)
command -v curl >/dev/null || need_install+=(curl)
if [ ${#need_install[@]} -gt 0 ]; then
    echo "installing ${need_install[*]} with apt-get" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_install[@]}" >/dev/null
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

echo "building urlcache (release, $SCRATCH)…" >&2
(cd "$ROOT" && swift build -c release --scratch-path "$SCRATCH" --product urlcache >&2)
case "$SCRATCH" in /*) URLCACHE="$SCRATCH/release/urlcache" ;; *) URLCACHE="$ROOT/$SCRATCH/release/urlcache" ;; esac

# The origin's files.
mkdir -p "$WORK/www" "$WORK/nginx-cache" "$WORK/nginx-tmp"
head -c 1024 /dev/urandom | base64 -w 0 | head -c 1024 > "$WORK/www/1k"
head -c 16384 /dev/urandom | base64 -w 0 | head -c 16384 > "$WORK/www/16k"

cat > "$WORK/nginx.conf" <<CONF
user root;
worker_processes $CORES;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $WORK/nginx-tmp/body;
    proxy_temp_path $WORK/nginx-tmp/proxy;
    fastcgi_temp_path $WORK/nginx-tmp/fastcgi;
    uwsgi_temp_path $WORK/nginx-tmp/uwsgi;
    scgi_temp_path $WORK/nginx-tmp/scgi;
    keepalive_requests 100000000;
    keepalive_timeout 75s;
    proxy_cache_path $WORK/nginx-cache levels=1:2 keys_zone=bench:10m max_size=1g inactive=60m use_temp_path=off;
    # The origin (not measured: every measured request is a cache hit).
    server {
        listen 127.0.0.1:$ORIGIN_PORT;
        root $WORK/www;
        default_type text/plain;
        location / { add_header Cache-Control "max-age=3600"; etag on; }
    }
    # nginx proxy_cache in front of it, as a shared cache: RFC headers decide, a status header.
    server {
        listen 127.0.0.1:$NGINX_PORT;
        location / {
            proxy_pass http://127.0.0.1:$ORIGIN_PORT;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_cache bench;
            proxy_cache_revalidate on;
            add_header X-Cache-Status \$upstream_cache_status;
        }
    }
}
CONF
"$NGINX" -t -q -c "$WORK/nginx.conf" -p "$WORK"
"$NGINX" -c "$WORK/nginx.conf" -p "$WORK"

"$URLCACHE" proxy "$WORK/urlcache-cache" --listen "127.0.0.1:$OURS_PORT" --upstream "http://127.0.0.1:$ORIGIN_PORT" \
    --no-access-log --log-level warning --threads "$CORES" --x-cache-status > "$WORK/proxy.out" 2> "$WORK/proxy.err" &
PROXY_PID=$!
for _ in $(seq 1 100); do grep -q "listening on" "$WORK/proxy.out" 2>/dev/null && break; sleep 0.1; done
grep -q "listening on" "$WORK/proxy.out" || { echo "urlcache proxy did not start:" >&2; cat "$WORK/proxy.err" >&2; exit 1; }

# Warm both caches and check that they answer from the cache.
for port in $NGINX_PORT $OURS_PORT; do
    for path in 1k 16k; do
        for _ in 1 2 3; do curl -s -o /dev/null "http://127.0.0.1:$port/$path"; done
        status=$(curl -s -D - -o /dev/null "http://127.0.0.1:$port/$path" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-cache-status"{print $2}')
        [ "$status" = "HIT" ] || { echo "port $port /$path answered '$status', not HIT" >&2; exit 1; }
    done
done

# wrk's --latency output: "Requests/sec: N" and percentile lines "50%  1.23ms".
run_wrk() { # port path → "rps p50 p99"
    local out
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "http://127.0.0.1:$1/$2")
    local rps p50 p99
    rps=$(awk '/^Requests\/sec:/{print $2}' <<<"$out")
    p50=$(awk '$1=="50%"{print $2}' <<<"$out")
    p99=$(awk '$1=="99%"{print $2}' <<<"$out")
    if grep -q "Non-2xx" <<<"$out"; then echo "wrk saw non-2xx answers on port $1:" >&2; echo "$out" >&2; fi
    echo "$rps $p50 $p99"
}

echo
echo "wrk -t$THREADS -c$CONNECTIONS -d$DURATION, cached responses, $CORES cores, $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%-9s %-22s %12s %10s %10s\n' "response" "server" "requests/s" "p50" "p99"
for path in 1k 16k; do
    read -r n_rps n_p50 n_p99 < <(run_wrk "$NGINX_PORT" "$path")
    perf_pid=""
    if [ -n "${PERF_OUT:-}" ] && [ "$path" = 1k ]; then
        perf record -q -F 999 -g -p "$PROXY_PID" -o "$PERF_OUT" -- sleep "${DURATION%s}" 2>/dev/null &
        perf_pid=$!
    fi
    read -r o_rps o_p50 o_p99 < <(run_wrk "$OURS_PORT" "$path")
    [ -n "$perf_pid" ] && wait "$perf_pid"
    size=$([ "$path" = 1k ] && echo "1 KiB" || echo "16 KiB")
    printf '%-9s %-22s %12s %10s %10s\n' "$size" "nginx proxy_cache" "$n_rps" "$n_p50" "$n_p99"
    printf '%-9s %-22s %12s %10s %10s\n' "$size" "urlcache proxy" "$o_rps" "$o_p50" "$o_p99"
    printf '%-9s %-22s %12s\n' "$size" "ratio ours/nginx" "$(awk -v a="$o_rps" -v b="$n_rps" 'BEGIN{printf "%.2f", a/b}')"
done
