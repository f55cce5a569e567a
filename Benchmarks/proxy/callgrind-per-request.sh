#!/usr/bin/env bash
# Instructions and malloc calls per request of `urlcache proxy` (one event loop thread) under
# callgrind, for a fixed number of keep-alive requests: a 1 KiB hit and a 1 KiB miss (the origin
# says no-store). Counts do not depend on the machine's load, so this is the before/after measure
# while other work runs; wall-clock speed is wrk-vs-nginx.sh's. Counters are zeroed after warm-up
# and dumped after the requests, so start-up is not counted. Then the same requests to nginx
# proxy_cache (one process, configured as in wrk-vs-nginx.sh), for the user-space work per request
# of the cache we are measured against.
#
#   Benchmarks/proxy/callgrind-per-request.sh                 # 2,000 requests a case, .build-proxy-rel
#   REQUESTS=5000 SCRATCH=.build-rel Benchmarks/proxy/callgrind-per-request.sh
#   KEEP=/tmp/cg Benchmarks/proxy/callgrind-per-request.sh    # keep the callgrind files
#   TOP=20 Benchmarks/proxy/callgrind-per-request.sh          # also the top symbols by own instructions
#   CASES=256k PROXY_ARGS="--memory-capacity 0 --compressed-passthrough" \
#     CURL_HEADER="Accept-Encoding: gzip" Benchmarks/proxy/callgrind-per-request.sh
#                                    # a 256 KiB disk hit sent gzip-encoded from the stored stream
#   NGINX_SIDE=0 Benchmarks/proxy/callgrind-per-request.sh    # urlcache proxy only
# CASES: any of 1k, miss/1k (default both) and 256k (JSON-like text, compressible).
set -euo pipefail
REQUESTS=${REQUESTS:-2000}
SCRATCH=${SCRATCH:-.build-proxy-rel}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=origin-server.sh
. "$ROOT/Benchmarks/proxy/origin-server.sh"
WORK=$(mktemp -d /tmp/suc-cg-XXXXXX)
ORIGIN_PORT=${ORIGIN_PORT:-18090}
OURS_PORT=${OURS_PORT:-18092}
NGINX_PORT=${NGINX_PORT:-18093}
case "$SCRATCH" in /*) URLCACHE="$SCRATCH/release/urlcache" ;; *) URLCACHE="$ROOT/$SCRATCH/release/urlcache" ;; esac
[ -x "$URLCACHE" ] || { echo "no release urlcache in $SCRATCH (swift build -c release --scratch-path $SCRATCH --product urlcache)" >&2; exit 1; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
PROXY_PID=""
NGINX_CG_PID=""
cleanup() {
    [ -n "$PROXY_PID" ] && kill -TERM "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null || true
    [ -n "$NGINX_CG_PID" ] && kill -TERM "$NGINX_CG_PID" 2>/dev/null && wait "$NGINX_CG_PID" 2>/dev/null || true
    [ -f "$WORK/nginx.pid" ] && kill -QUIT "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
    sleep 0.3
    if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$WORK"/callgrind.out.* "$KEEP"/ 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/www/miss" "$WORK/tmp"
head -c 1024 /dev/urandom | base64 -w 0 | head -c 1024 > "$WORK/www/1k"
cp "$WORK/www/1k" "$WORK/www/miss/1k"
python3 -c 'import sys; sys.stdout.write("".join("{\"id\":%d,\"name\":\"item %d\",\"price\":%d.%02d}\n" % (i, i % 97, i % 500, i % 100) for i in range(7000))[:262144])' > "$WORK/www/256k"
origin_nginx_conf "$WORK" "$ORIGIN_PORT" "$WORK/www" > "$WORK/nginx.conf"
"$NGINX" -c "$WORK/nginx.conf" -p "$WORK"

# Valgrind's DWARF reader gives up on the Swift toolchain's debug info; function names come from
# the symbol table, which a copy without debug sections keeps.
objcopy --strip-debug "$URLCACHE" "$WORK/urlcache"
URLCACHE="$WORK/urlcache"
valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out.%p" --dump-instr=no --compress-strings=no --compress-pos=no \
    "$URLCACHE" proxy "$WORK/cache" --listen "127.0.0.1:$OURS_PORT" --upstream "http://127.0.0.1:$ORIGIN_PORT" \
    --no-access-log --log-level warning --threads 1 --x-cache-status ${PROXY_ARGS:-} > "$WORK/proxy.out" 2> "$WORK/proxy.err" &
PROXY_PID=$!
for _ in $(seq 1 600); do grep -q "listening on" "$WORK/proxy.out" 2>/dev/null && break; sleep 0.1; done
grep -q "listening on" "$WORK/proxy.out" || { echo "proxy did not start" >&2; cat "$WORK/proxy.err" >&2; exit 1; }

# One curl, one keep-alive connection, REQUESTS requests.
requests() { # port path count
    local config="$WORK/curl.cfg"
    : > "$config"
    # Once for every URL of the file (repeated per URL, curl would send it once more each time).
    if [ -n "${CURL_HEADER:-}" ]; then printf 'header = "%s"\n' "$CURL_HEADER" >> "$config"; fi
    for _ in $(seq 1 "$3"); do printf 'url = "http://127.0.0.1:%s/%s"\noutput = /dev/null\n' "$1" "$2" >> "$config"; done
    curl -s -K "$config"
}
# Sums the instructions (summary line) and the calls to malloc in a callgrind file.
summarise() { # file count → "instructions/request mallocs/request"
    python3 - "$1" "$2" <<'PY'
import re, sys
path, n = sys.argv[1], int(sys.argv[2])
names, total, mallocs, cfn, pending = {}, 0, 0, None, None
for line in open(path, errors="replace"):
    line = line.rstrip("\n")
    if line.startswith("summary:") or line.startswith("totals:"):
        total = max(total, int(line.split()[1]))
    elif line.startswith("cfn="):
        m = re.match(r"cfn=\((\d+)\)(?: (.*))?", line)
        if m:
            if m.group(2): names[m.group(1)] = m.group(2)
            cfn = names.get(m.group(1), "")
        else:
            cfn = line[4:]
    elif line.startswith("calls="):
        if cfn in ("malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc"):
            mallocs += int(line[6:].split()[0])
    elif line.startswith("fn="):
        m = re.match(r"fn=\((\d+)\)(?: (.*))?", line)
        if m and m.group(2): names[m.group(1)] = m.group(2)
print(f"{total / n:.0f} {mallocs / n:.1f}")
PY
}

# Runs the cases against one side under callgrind: warm-up, counters zeroed, REQUESTS requests,
# counters dumped into a new file OUT_PREFIX.<pid>.<n>, summarised.
measure() { # side pid port out_prefix
    local side=$1 pid=$2 port=$3 prefix=$4 case before file ir mallocs
    for case in ${CASES:-1k miss/1k}; do
        requests "$port" "$case" 20 # warm: stored (hit) and connections pooled (miss)
        callgrind_control -z "$pid" >/dev/null 2>&1
        requests "$port" "$case" "$REQUESTS"
        before=$(ls "$prefix".* | wc -l)
        callgrind_control -d "$pid" >/dev/null 2>&1
        for _ in $(seq 1 100); do [ "$(ls "$prefix".* | wc -l)" -gt "$before" ] && break; sleep 0.1; done
        sleep 1
        file=$(ls -t "$prefix".* | head -1)
        [ -n "${KEEP:-}" ] && cp "$file" "$WORK/callgrind.out.$side-${case//\//-}"
        read -r ir mallocs < <(summarise "$file" "$REQUESTS")
        printf '%-10s %-9s %22s %18s\n' "$side" "${case/miss\/1k/miss 1k}" "$ir" "$mallocs"
        if [ -n "${TOP:-}" ]; then
            # Own (exclusive) instructions per function: cost lines under fn=, less the inclusive
            # cost line that follows each calls= line.
            python3 - "$file" "$TOP" <<'PY' | { swift demangle --simplified 2>/dev/null || cat; } | cut -c1-160
import collections, sys
own, fn, skip = collections.Counter(), None, False
for line in open(sys.argv[1], errors="replace"):
    line = line.rstrip("\n")
    if line.startswith("fn="): fn = line[3:]; continue
    if line.startswith("calls="): skip = True; continue
    if line and (line[0].isdigit() or line[0] in "+-*"):
        if skip: skip = False; continue
        parts = line.split()
        if len(parts) >= 2 and fn: own[fn] += int(parts[1])
total = sum(own.values())
for name, count in own.most_common(int(sys.argv[2])):
    print(f"    {100 * count / total:5.1f}%  {name}")
PY
        fi
    done
}

printf '%-10s %-9s %22s %18s\n' "side" "case" "instructions/request" "mallocs/request"
measure urlcache "$PROXY_PID" "$OURS_PORT" "$WORK/callgrind.out"
status() { curl -s -D - -o /dev/null "http://127.0.0.1:$1/1k" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-cache-status"{print $2}'; }
[[ " ${CASES:-1k} " != *" 1k "* ]] || [ "$(status "$OURS_PORT")" = HIT ] || echo "warning: urlcache proxy's /1k was not a HIT" >&2
kill -TERM "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null || true
PROXY_PID=""
[ "${NGINX_SIDE:-1}" = 0 ] && exit 0

# nginx proxy_cache, one process (no master) so that callgrind follows the worker.
mkdir -p "$WORK/nginx-cache"
cat > "$WORK/nginx-cache.conf" <<CONF
user root;
daemon off;
master_process off;
worker_processes 1;
pid $WORK/nginx-cache.pid;
error_log $WORK/nginx-cache-error.log warn;
events { worker_connections 1024; }
http {
$(nginx_http_basics "$WORK/tmp")
$(nginx_cache_zone "$WORK/nginx-cache")
$(nginx_cache_server_block "$NGINX_PORT" "$ORIGIN_PORT")
}
CONF
valgrind --tool=callgrind --callgrind-out-file="$WORK/nginx-callgrind.out.%p" --dump-instr=no --compress-strings=no \
    --compress-pos=no "$NGINX" -c "$WORK/nginx-cache.conf" -p "$WORK" > "$WORK/nginx-cg.out" 2>&1 &
NGINX_CG_PID=$!
for _ in $(seq 1 300); do curl -s -o /dev/null "http://127.0.0.1:$NGINX_PORT/1k" && break; sleep 0.1; done
measure nginx "$NGINX_CG_PID" "$NGINX_PORT" "$WORK/nginx-callgrind.out"
[[ " ${CASES:-1k} " != *" 1k "* ]] || [ "$(status "$NGINX_PORT")" = HIT ] || echo "warning: nginx's /1k was not a HIT" >&2
