#!/usr/bin/env bash
# Instructions and malloc calls per request of `urlcache proxy` (one event loop thread) under
# callgrind, for a fixed number of keep-alive requests: a 1 KiB hit and a 1 KiB miss (the origin
# says no-store). Counts do not depend on the machine's load, so this is the before/after measure
# while other work runs; wall-clock speed is wrk-vs-nginx.sh's. Counters are zeroed after warm-up
# and dumped after the requests, so start-up is not counted.
#
#   Benchmarks/proxy/callgrind-per-request.sh                 # 2,000 requests a case, .build-proxy-rel
#   REQUESTS=5000 SCRATCH=.build-rel Benchmarks/proxy/callgrind-per-request.sh
#   KEEP=/tmp/cg Benchmarks/proxy/callgrind-per-request.sh    # keep the callgrind files
#   TOP=20 Benchmarks/proxy/callgrind-per-request.sh          # also the top symbols by own instructions
#   CASES=256k PROXY_ARGS="--memory-capacity 0 --compressed-passthrough" \
#     CURL_HEADER="Accept-Encoding: gzip" Benchmarks/proxy/callgrind-per-request.sh
#                                    # a 256 KiB disk hit sent gzip-encoded from the stored stream
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
case "$SCRATCH" in /*) URLCACHE="$SCRATCH/release/urlcache" ;; *) URLCACHE="$ROOT/$SCRATCH/release/urlcache" ;; esac
[ -x "$URLCACHE" ] || { echo "no release urlcache in $SCRATCH (swift build -c release --scratch-path $SCRATCH --product urlcache)" >&2; exit 1; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
PROXY_PID=""
cleanup() {
    [ -n "$PROXY_PID" ] && kill -TERM "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null || true
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
requests() { # path count
    local config="$WORK/curl.cfg"
    : > "$config"
    # Once for every URL of the file (repeated per URL, curl would send it once more each time).
    if [ -n "${CURL_HEADER:-}" ]; then printf 'header = "%s"\n' "$CURL_HEADER" >> "$config"; fi
    for _ in $(seq 1 "$2"); do printf 'url = "http://127.0.0.1:%s/%s"\noutput = /dev/null\n' "$OURS_PORT" "$1" >> "$config"; done
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

printf '%-10s %22s %18s\n' "case" "instructions/request" "mallocs/request"
for case in ${CASES:-1k miss/1k}; do
    requests "$case" 20 # warm: stored (hit) and connections pooled (miss)
    callgrind_control -z "$PROXY_PID" >/dev/null 2>&1
    requests "$case" "$REQUESTS"
    before=$(ls "$WORK"/callgrind.out.* | wc -l)
    callgrind_control -d "$PROXY_PID" >/dev/null 2>&1
    for _ in $(seq 1 100); do [ "$(ls "$WORK"/callgrind.out.* | wc -l)" -gt "$before" ] && break; sleep 0.1; done
    sleep 1
    file=$(ls -t "$WORK"/callgrind.out.* | head -1)
    [ -n "${KEEP:-}" ] && cp "$file" "$WORK/callgrind.out.${case//\//-}"
    read -r ir mallocs < <(summarise "$file" "$REQUESTS")
    printf '%-10s %22s %18s\n' "${case/miss\/1k/miss 1k}" "$ir" "$mallocs"
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
[ "$(curl -s -D - -o /dev/null "http://127.0.0.1:$OURS_PORT/1k" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-cache-status"{print $2}')" = HIT ] ||
    echo "warning: /1k was not a HIT" >&2
