#!/usr/bin/env bash
# What one revalidation of a large cached response costs the proxy: a 48 MiB response with an ETag
# and `max-age=1`, fetched through `urlcache proxy --memory-capacity 0`, then requested again after
# each second, so every request is a conditional request answered 304 by the origin. For each
# revalidation: the bytes the proxy wrote (write_bytes of /proc/PID/io, what reaches the disk), and
# the request's wall time; medians of N. Give two binaries to compare them in one run (the
# requests alternate between two proxies, each on its own directory).
#
#   Benchmarks/proxy/revalidate-large.sh URLCACHE [URLCACHE_B]
#   N=10 SIZE_MIB=48 Benchmarks/proxy/revalidate-large.sh before/urlcache after/urlcache
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=origin-server.sh
. "$ROOT/Benchmarks/proxy/origin-server.sh"
N=${N:-10}
SIZE_MIB=${SIZE_MIB:-48}
ORIGIN_PORT=${ORIGIN_PORT:-18390}
BINARIES=("$@")
[ ${#BINARIES[@]} -ge 1 ] || { echo "usage: $0 URLCACHE [URLCACHE_B]" >&2; exit 1; }
WORK=$(mktemp -d /tmp/suc-reval-XXXXXX)
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
    [ -f "$WORK/nginx.pid" ] && kill -QUIT "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
    sleep 0.3
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/www" "$WORK/tmp"
head -c $((SIZE_MIB << 20)) /dev/urandom > "$WORK/www/large"
# The origin of the other proxy benchmarks, with max-age=1 so each request a second later revalidates.
origin_nginx_conf "$WORK" "$ORIGIN_PORT" "$WORK/www" | sed 's/max-age=3600/max-age=1/' > "$WORK/nginx.conf"
"$NGINX" -c "$WORK/nginx.conf" -p "$WORK"

for i in "${!BINARIES[@]}"; do
    port=$((ORIGIN_PORT + 1 + i))
    "${BINARIES[$i]}" proxy "$WORK/cache$i" --listen "127.0.0.1:$port" --upstream "http://127.0.0.1:$ORIGIN_PORT" \
        --no-access-log --log-level warning --memory-capacity 0 --x-cache-status > "$WORK/proxy$i.out" 2> "$WORK/proxy$i.err" &
    PIDS+=($!)
    for _ in $(seq 1 100); do grep -q "listening on" "$WORK/proxy$i.out" 2>/dev/null && break; sleep 0.1; done
    grep -q "listening on" "$WORK/proxy$i.out" || { echo "proxy $i did not start:" >&2; cat "$WORK/proxy$i.err" >&2; exit 1; }
    curl -s -o /dev/null "http://127.0.0.1:$port/large" # the miss stores it
done
written() { awk '/^write_bytes/ {print $2}' "/proc/$1/io"; }
echo "${SIZE_MIB} MiB body, max-age=1, N=$N revalidations per binary, load: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$N"); do
    sleep 1.1
    for i in "${!BINARIES[@]}"; do
        port=$((ORIGIN_PORT + 1 + i)) pid=${PIDS[$i]}
        before=$(written "$pid")
        out=$(curl -s -o "$WORK/body$i" -D "$WORK/head$i" -w '%{time_total}' "http://127.0.0.1:$port/large")
        sleep 0.5 # a store the answer started settles (a body copied as it is read ends with the answer)
        after=$(written "$pid")
        status=$(tr -d '\r' < "$WORK/head$i" | awk -F': ' 'tolower($1)=="x-cache-status"{print $2}')
        cmp -s "$WORK/body$i" "$WORK/www/large" || { echo "binary $i: the body differs" >&2; exit 1; }
        echo "$i $((after - before)) $out $status" >> "$WORK/samples"
    done
done
median() { sort -g | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else printf "%.6f\n", (a[NR/2]+a[NR/2+1])/2 }'; }
for i in "${!BINARIES[@]}"; do
    bytes=$(awk -v i="$i" '$1==i {print $2}' "$WORK/samples" | median)
    secs=$(awk -v i="$i" '$1==i {print $3}' "$WORK/samples" | median)
    statuses=$(awk -v i="$i" '$1==i {print $4}' "$WORK/samples" | sort | uniq -c | tr -s ' ' | tr '\n' ';')
    printf '%s: median %s bytes written, %s s per revalidation (%s)\n' "${BINARIES[$i]}" "$bytes" "$secs" "$statuses"
done
