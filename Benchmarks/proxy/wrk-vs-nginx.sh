#!/usr/bin/env bash
# urlcache proxy against nginx proxy_cache (Debian nginx-light), configured alike, on this
# machine, in one run, measured with wrk: requests/s, p50, p99, and the ratio ours/nginx for
#   hit 1k, hit 16k, hit 256k  cached responses (Cache-Control: max-age=3600 from the origin)
#   miss 1k                     every request goes to the origin (the origin says no-store; nginx's
#                               location has proxy_cache off)
#   3 procs hit 1k              three `urlcache proxy --reuse-port` processes on one port and one
#                               cache directory, against one process (ratio 3 procs / 1 proc)
#   passthrough256k             a 256 KiB disk hit of JSON-like text (--memory-capacity 0) asked for with
#                               Accept-Encoding: gzip, sent as its stored deflate stream in gzip
#                               framing (--compressed-passthrough) against inflated (the default):
#                               ratio passthrough / identity, both urlcache proxy; not in the default
#                               CASES
# RUNS=N repeats the whole set N times; within each run nginx and ours alternate (which goes first
# alternates from run to run), and the summary prints, per case, the median of the within-run
# ratios and the medians of requests/s and p99.
#
#   Benchmarks/proxy/wrk-vs-nginx.sh            # 1 run, 10 s per wrk, 2 threads, 32 connections
#   RUNS=5 Benchmarks/proxy/wrk-vs-nginx.sh     # the comparison: medians of 5 runs
#   DURATION=30s THREADS=4 CONNECTIONS=128 Benchmarks/proxy/wrk-vs-nginx.sh
#   SCRATCH=.build-proxy-rel Benchmarks/proxy/wrk-vs-nginx.sh   # another build folder
#   SKIP_BUILD=1 SCRATCH=... Benchmarks/proxy/wrk-vs-nginx.sh      # use $SCRATCH/release/urlcache as built
#   CASES="hit1k miss1k" Benchmarks/proxy/wrk-vs-nginx.sh       # a subset (hit1k hit16k hit256k miss1k procs3 passthrough256k)
#   PERF_OUT=/tmp/proxy.perf Benchmarks/proxy/wrk-vs-nginx.sh  # also `perf record -g` the proxy during its first 1 KiB hit run
#
# Alike means: both on loopback, both with as many workers / event loop threads as cores, access
# logs off in both, keep-alive without a request limit in both, responses stored by one origin (an
# nginx server block serving static files), both caches warmed (and checked to answer HIT, or not
# HIT for the miss case) before wrk runs. wrk, nginx and the proxy share the machine's cores, as
# they would on a service host. Wall-clock figures mean something only on an idle machine: the
# script prints the load average before each run.
set -euo pipefail

DURATION=${DURATION:-10s}
THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-32}
SCRATCH=${SCRATCH:-.build}
RUNS=${RUNS:-1}
CASES=${CASES:-hit1k hit16k hit256k miss1k procs3}
PROCS=${PROCS:-3}
PROC_THREADS=${PROC_THREADS:-1}
MP_PORT=${MP_PORT:-18083}
IDENTITY_PORT=${IDENTITY_PORT:-18084}
PASSTHROUGH_PORT=${PASSTHROUGH_PORT:-18085}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=origin-server.sh
. "$ROOT/Benchmarks/proxy/origin-server.sh"
WORK=$(mktemp -d /tmp/suc-wrk-XXXXXX)
ORIGIN_PORT=${ORIGIN_PORT:-18080}
NGINX_PORT=${NGINX_PORT:-18081}
OURS_PORT=${OURS_PORT:-18082}
CORES=$(nproc)
PROXY_PID=""
MP_PIDS=()
SIDE_PIDS=()

cleanup() {
    [ -n "$PROXY_PID" ] && kill -TERM "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null || true
    for pid in "${MP_PIDS[@]}" "${SIDE_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
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

if [ -z "${SKIP_BUILD:-}" ]; then
    echo "building urlcache (release, $SCRATCH)…" >&2
    (cd "$ROOT" && swift build -c release --scratch-path "$SCRATCH" --product urlcache >&2)
fi
case "$SCRATCH" in /*) URLCACHE="$SCRATCH/release/urlcache" ;; *) URLCACHE="$ROOT/$SCRATCH/release/urlcache" ;; esac

# The origin's files.
mkdir -p "$WORK/www" "$WORK/nginx-cache" "$WORK/nginx-tmp"
head -c 1024 /dev/urandom | base64 -w 0 | head -c 1024 > "$WORK/www/1k"
head -c 16384 /dev/urandom | base64 -w 0 | head -c 16384 > "$WORK/www/16k"
head -c 196608 /dev/urandom | base64 -w 0 > "$WORK/www/256k" # 262,144 bytes of base64, none cut (pipefail)
# JSON-like text for the passthrough case (compressible, as API answers are; base64 is not much).
python3 -c 'import sys; sys.stdout.write("".join("{\"id\":%d,\"name\":\"item %d\",\"price\":%d.%02d}\n" % (i, i % 97, i % 500, i % 100) for i in range(7000))[:262144])' > "$WORK/www/json256k"
mkdir -p "$WORK/www/miss" && cp "$WORK/www/1k" "$WORK/www/miss/1k"

cat > "$WORK/nginx.conf" <<CONF
user root;
worker_processes $CORES;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log warn;
events { worker_connections 4096; }
http {
$(nginx_http_basics "$WORK/nginx-tmp")
    keepalive_timeout 75s;
$(nginx_cache_zone "$WORK/nginx-cache")
    # The origin (not measured: every measured request is a cache hit).
$(origin_server_block "$ORIGIN_PORT" "$WORK/www")
$(nginx_cache_server_block "$NGINX_PORT" "$ORIGIN_PORT")
}
CONF
"$NGINX" -t -q -c "$WORK/nginx.conf" -p "$WORK"
"$NGINX" -c "$WORK/nginx.conf" -p "$WORK"

"$URLCACHE" proxy "$WORK/urlcache-cache" --listen "127.0.0.1:$OURS_PORT" --upstream "http://127.0.0.1:$ORIGIN_PORT" \
    --no-access-log --log-level warning --threads "$CORES" --x-cache-status > "$WORK/proxy.out" 2> "$WORK/proxy.err" &
PROXY_PID=$!
for _ in $(seq 1 100); do grep -q "listening on" "$WORK/proxy.out" 2>/dev/null && break; sleep 0.1; done
grep -q "listening on" "$WORK/proxy.out" || { echo "urlcache proxy did not start:" >&2; cat "$WORK/proxy.err" >&2; exit 1; }

cache_status() { curl -s -D - -o /dev/null "http://127.0.0.1:$1/$2" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-cache-status"{print $2}'; }

if [[ " $CASES " == *" procs3 "* ]]; then
    for i in $(seq 1 "$PROCS"); do
        "$URLCACHE" proxy "$WORK/urlcache-mp-cache" --listen "127.0.0.1:$MP_PORT" --upstream "http://127.0.0.1:$ORIGIN_PORT" \
            --no-access-log --log-level warning --threads "$PROC_THREADS" --reuse-port --x-cache-status \
            > "$WORK/mp$i.out" 2> "$WORK/mp$i.err" &
        MP_PIDS+=($!)
        for _ in $(seq 1 100); do grep -q "listening on" "$WORK/mp$i.out" 2>/dev/null && break; sleep 0.1; done
        grep -q "listening on" "$WORK/mp$i.out" || { echo "urlcache proxy $i (--reuse-port) did not start:" >&2; cat "$WORK/mp$i.err" >&2; exit 1; }
    done
fi

# Two disk-only proxies for the passthrough case, on directories of their own.
if [[ " $CASES " == *" passthrough256k "* ]]; then
    for side in identity passthrough; do
        port=$IDENTITY_PORT; extra=()
        [ "$side" = passthrough ] && { port=$PASSTHROUGH_PORT; extra=(--compressed-passthrough); }
        "$URLCACHE" proxy "$WORK/urlcache-$side-cache" --listen "127.0.0.1:$port" --upstream "http://127.0.0.1:$ORIGIN_PORT" \
            --no-access-log --log-level warning --threads "$CORES" --x-cache-status --memory-capacity 0 "${extra[@]}" \
            > "$WORK/$side.out" 2> "$WORK/$side.err" &
        SIDE_PIDS+=($!)
        for _ in $(seq 1 100); do grep -q "listening on" "$WORK/$side.out" 2>/dev/null && break; sleep 0.1; done
        grep -q "listening on" "$WORK/$side.out" || { echo "urlcache proxy ($side) did not start:" >&2; cat "$WORK/$side.err" >&2; exit 1; }
    done
    for port in $IDENTITY_PORT $PASSTHROUGH_PORT; do
        for _ in 1 2 3; do curl -s -o /dev/null "http://127.0.0.1:$port/json256k"; done
        status=$(cache_status "$port" json256k)
        [ "$status" = "HIT" ] || { echo "port $port /json256k answered '$status', not HIT" >&2; exit 1; }
    done
    encoding() { curl -s -D - -o /dev/null -H "Accept-Encoding: gzip" "http://127.0.0.1:$1/json256k" | tr -d '\r' | awk -F': ' 'tolower($1)=="content-encoding"{print $2}'; }
    [ "$(encoding "$PASSTHROUGH_PORT")" = gzip ] || { echo "the passthrough proxy did not answer gzip" >&2; exit 1; }
    [ -z "$(encoding "$IDENTITY_PORT")" ] || { echo "the identity proxy answered with a content coding" >&2; exit 1; }
fi

# Warm the caches and check that they answer from the cache (each curl is a new connection, so
# with several processes on one port every process gets some).
for port in $NGINX_PORT $OURS_PORT; do
    for path in 1k 16k 256k; do
        for _ in 1 2 3; do curl -s -o /dev/null "http://127.0.0.1:$port/$path"; done
        status=$(cache_status "$port" "$path")
        [ "$status" = "HIT" ] || { echo "port $port /$path answered '$status', not HIT" >&2; exit 1; }
    done
    status=$(cache_status "$port" miss/1k)
    [ "$status" != "HIT" ] || { echo "port $port /miss/1k answered HIT" >&2; exit 1; }
done
if [ ${#MP_PIDS[@]} -gt 0 ]; then
    for _ in $(seq 1 $((PROCS * 10))); do curl -s -o /dev/null "http://127.0.0.1:$MP_PORT/1k"; done
    for _ in $(seq 1 $((PROCS * 3))); do
        status=$(cache_status "$MP_PORT" 1k)
        [ "$status" = "HIT" ] || { echo "port $MP_PORT /1k answered '$status', not HIT" >&2; exit 1; }
    done
fi

# wrk's --latency output: "Requests/sec: N" and percentile lines "50%  1.23ms" (us, ms or s).
to_ms() { awk -v v="$1" 'BEGIN{ if (v ~ /us$/) printf "%.3f", v/1000; else if (v ~ /ms$/) printf "%.3f", v+0; else if (v ~ /s$/) printf "%.3f", v*1000; else print v }'; }
run_wrk() { # port path [header] → "rps p50ms p99ms"
    local out rps p50 p99 header=()
    [ -n "${3:-}" ] && header=(-H "$3")
    out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "${header[@]}" "http://127.0.0.1:$1/$2")
    rps=$(awk '/^Requests\/sec:/{print $2}' <<<"$out")
    p50=$(awk '$1=="50%"{print $2}' <<<"$out")
    p99=$(awk '$1=="99%"{print $2}' <<<"$out")
    if grep -q "Non-2xx" <<<"$out"; then echo "wrk saw non-2xx answers on port $1:" >&2; echo "$out" >&2; fi
    echo "$rps $(to_ms "$p50") $(to_ms "$p99")"
}

# case → "label path baseline-port baseline-name ours-port ours-name"
case_spec() {
    case "$1" in
        hit1k) echo "hit-1KiB 1k $NGINX_PORT nginx $OURS_PORT urlcache" ;;
        hit16k) echo "hit-16KiB 16k $NGINX_PORT nginx $OURS_PORT urlcache" ;;
        hit256k) echo "hit-256KiB 256k $NGINX_PORT nginx $OURS_PORT urlcache" ;;
        miss1k) echo "miss-1KiB miss/1k $NGINX_PORT nginx $OURS_PORT urlcache" ;;
        procs3) echo "hit-1KiB-${PROCS}procs 1k $OURS_PORT urlcache-1proc $MP_PORT urlcache-${PROCS}procs" ;;
        passthrough256k) echo "disk-256KiB-gzip json256k $IDENTITY_PORT urlcache-identity $PASSTHROUGH_PORT urlcache-passthrough" ;;
        *) echo "unknown case $1" >&2; exit 1 ;;
    esac
}

RESULTS="$WORK/results" # run case base_rps base_p99 ours_rps ours_p99 ratio
: > "$RESULTS"
echo
echo "wrk -t$THREADS -c$CONNECTIONS -d$DURATION, $RUNS run(s), $CORES cores, $(date -u +%Y-%m-%dT%H:%MZ)"
perf_done=""
for run in $(seq 1 "$RUNS"); do
    echo
    echo "run $run/$RUNS, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    printf '%-20s %-18s %12s %10s %10s\n' "case" "server" "requests/s" "p50 ms" "p99 ms"
    for c in $CASES; do
        read -r label path bport bname oport oname < <(case_spec "$c")
        header=""; [ "$c" = passthrough256k ] && header="Accept-Encoding: gzip"
        # Alternate who goes first, so neither always runs on a machine warmed by the other.
        order="base ours"; [ $((run % 2)) -eq 0 ] && order="ours base"
        for who in $order; do
            if [ "$who" = base ]; then
                read -r b_rps b_p50 b_p99 < <(run_wrk "$bport" "$path" "$header")
            else
                perf_pid=""
                if [ -n "${PERF_OUT:-}" ] && [ "$c" = hit1k ] && [ -z "$perf_done" ]; then
                    perf record -q -F 999 -g -p "$PROXY_PID" -o "$PERF_OUT" -- sleep "${DURATION%s}" 2>/dev/null &
                    perf_pid=$!; perf_done=1
                fi
                read -r o_rps o_p50 o_p99 < <(run_wrk "$oport" "$path" "$header")
                [ -n "$perf_pid" ] && wait "$perf_pid"
            fi
        done
        ratio=$(awk -v a="$o_rps" -v b="$b_rps" 'BEGIN{printf "%.3f", a/b}')
        printf '%-20s %-18s %12s %10s %10s\n' "$label" "$bname" "$b_rps" "$b_p50" "$b_p99"
        printf '%-20s %-18s %12s %10s %10s\n' "$label" "$oname" "$o_rps" "$o_p50" "$o_p99"
        printf '%-20s %-18s %12s\n' "$label" "ratio" "$ratio"
        echo "$run $c $b_rps $b_p99 $o_rps $o_p99 $ratio" >> "$RESULTS"
    done
done

median() { sort -g | awk '{a[NR]=$1} END{ if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2 }'; }
echo
echo "medians of $RUNS run(s) (ratio: the median of the within-run ratios ours/baseline)"
printf '%-20s %-18s %12s %10s %-18s %12s %10s %8s\n' "case" "baseline" "requests/s" "p99 ms" "ours" "requests/s" "p99 ms" "ratio"
for c in $CASES; do
    read -r label path bport bname oport oname < <(case_spec "$c")
    col() { awk -v c="$c" -v k="$1" '$2==c{print $k}' "$RESULTS" | median; }
    printf '%-20s %-18s %12s %10s %-18s %12s %10s %8s\n' "$label" "$bname" "$(col 3)" "$(col 4)" "$oname" "$(col 5)" "$(col 6)" "$(col 7)"
done
