#!/usr/bin/env bash
# A byte range deep in a large cached body, through `urlcache proxy`: the wall time of one
# `Range: bytes=S-E` request (1,000 bytes near the end of a 48 MiB body), for a body stored
# uncompressed (random bytes, as media are) and one stored compressed (text), median of N
# requests on one keep-alive-free curl each. The proxy runs with --memory-capacity 0, so every
# answer reads the store.
#
#   Benchmarks/proxy/range-deep.sh                        # $SCRATCH/release/urlcache (.build-rel)
#   URLCACHE=path/to/urlcache N=30 Benchmarks/proxy/range-deep.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=origin-server.sh
. "$ROOT/Benchmarks/proxy/origin-server.sh"
SCRATCH=${SCRATCH:-.build-rel}
URLCACHE=${URLCACHE:-$ROOT/$SCRATCH/release/urlcache}
N=${N:-20}
SIZE_MIB=${SIZE_MIB:-48}
ORIGIN_PORT=${ORIGIN_PORT:-18380}
OURS_PORT=${OURS_PORT:-18382}
[ -x "$URLCACHE" ] || { echo "no urlcache at $URLCACHE" >&2; exit 1; }
WORK=$(mktemp -d /tmp/suc-range-XXXXXX)
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
PROXY_PID=""
cleanup() {
    [ -n "$PROXY_PID" ] && kill -TERM "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null || true
    [ -f "$WORK/nginx.pid" ] && kill -QUIT "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
    sleep 0.3
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/www" "$WORK/tmp"
head -c $((SIZE_MIB << 20)) /dev/urandom > "$WORK/www/media"
python3 -c "
import sys
line = ''.join('{\"id\":%d,\"name\":\"item %d\",\"price\":%d.%02d}\n' % (i, i % 97, i % 500, i % 100) for i in range(20000))
out = sys.stdout
left = $SIZE_MIB << 20
while left > 0:
    out.write(line[:left]); left -= len(line[:left])
" > "$WORK/www/text"
origin_nginx_conf "$WORK" "$ORIGIN_PORT" "$WORK/www" > "$WORK/nginx.conf"
"$NGINX" -c "$WORK/nginx.conf" -p "$WORK"
"$URLCACHE" proxy "$WORK/cache" --listen "127.0.0.1:$OURS_PORT" --upstream "http://127.0.0.1:$ORIGIN_PORT" \
    --no-access-log --log-level warning --memory-capacity 0 --x-cache-status > "$WORK/proxy.out" 2> "$WORK/proxy.err" &
PROXY_PID=$!
for _ in $(seq 1 100); do grep -q "listening on" "$WORK/proxy.out" 2>/dev/null && break; sleep 0.1; done
grep -q "listening on" "$WORK/proxy.out" || { echo "urlcache proxy did not start:" >&2; cat "$WORK/proxy.err" >&2; exit 1; }

size=$((SIZE_MIB << 20))
start=$((size - 5000)); end=$((start + 999))
median() { sort -g | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else printf "%.6f\n", (a[NR/2]+a[NR/2+1])/2 }'; }
echo "urlcache: $URLCACHE"
echo "bytes=$start-$end of a ${SIZE_MIB} MiB body, median of $N requests (seconds), load: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "${HOLD:-}" ] && { echo "work: $WORK"; }
for name in media text; do
    curl -s -o /dev/null "http://127.0.0.1:$OURS_PORT/$name" # the miss stores it
    sleep 1
    status=$(curl -s -D - -o /dev/null "http://127.0.0.1:$OURS_PORT/$name" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-cache-status"{print $2}')
    [ "$status" = HIT ] || { echo "/$name answered '$status', not HIT" >&2; exit 1; }
    curl -s -r "$start-$end" "http://127.0.0.1:$OURS_PORT/$name" | cmp -s - <(tail -c +$((start + 1)) "$WORK/www/$name" | head -c 1000) \
        || { echo "/$name: the range's bytes differ from the file's" >&2; exit 1; }
    t=$(for _ in $(seq 1 "$N"); do curl -s -o /dev/null -r "$start-$end" -w '%{time_total}\n' "http://127.0.0.1:$OURS_PORT/$name"; done | median)
    printf '%-6s %s s\n' "$name" "$t"
done
[ -n "${HOLD:-}" ] && sleep "$HOLD"
