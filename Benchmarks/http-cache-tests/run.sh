#!/usr/bin/env bash
# `urlcache proxy` through the HTTP cache test suite of cache-tests.fyi (http-tests/cache-tests,
# Mark Nottingham's suite that nginx, Varnish, Squid, Traffic Server, Apache, Caddy, HAProxy and
# Fastly are published against), measured from outside: the suite's own origin server, our proxy
# in front of it as a reverse proxy, the suite's own client. Then a table of our results beside
# the published results that ship in the suite's repository, classified by the suite's own code.
#
#   Benchmarks/http-cache-tests/run.sh                    # clones the suite at the pinned commit
#   CACHE_TESTS=/path/to/cache-tests Benchmarks/http-cache-tests/run.sh   # a clone you have
#   URLCACHE=.build/release/urlcache Benchmarks/http-cache-tests/run.sh   # a built binary
#   OUT=results.json Benchmarks/http-cache-tests/run.sh   # keep our raw results
#
# Needs Node.js 18+ (its built-in fetch) and git; no npm packages: the four interim-response
# (1xx) tests import the `undici` package and are reported as harness errors without it
# (`npm i` in the clone installs it). Not part of CI: it clones a repository from the network.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PIN=${PIN:-b55b8bd}
SERVER_PORT=${SERVER_PORT:-18700}
PROXY_PORT=${PROXY_PORT:-18702}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/suc-cache-tests-XXXXXX")
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

command -v node >/dev/null || { echo "needs Node.js 18+ (apt-get install nodejs)" >&2; exit 1; }
SUITE=${CACHE_TESTS:-$WORK/cache-tests}
if [ -z "${CACHE_TESTS:-}" ]; then
    git clone -q https://github.com/http-tests/cache-tests.git "$SUITE"
    git -C "$SUITE" checkout -q "$PIN"
fi
if [ -z "${URLCACHE:-}" ]; then
    (cd "$ROOT" && swift build -c release --product urlcache >&2)
    URLCACHE=$ROOT/.build/release/urlcache
fi

# The suite's origin server (its npm scripts read these from package.json's config).
(cd "$SUITE" && npm_config_protocol=http npm_config_port=$SERVER_PORT npm_config_pidfile=$WORK/server.pid \
    exec node test-engine/server/server.mjs >"$WORK/server.log" 2>&1) &
PIDS+=($!)
"$URLCACHE" proxy "$WORK/cache" --listen "127.0.0.1:$PROXY_PORT" --upstream "http://127.0.0.1:$SERVER_PORT" \
    2>"$WORK/proxy.log" >/dev/null &
PIDS+=($!)
for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$PROXY_PORT/" && break
    sleep 0.2
done

results=${OUT:-$WORK/urlcache-proxy.json}
(cd "$SUITE" && npm_config_base="http://127.0.0.1:$PROXY_PORT" npm_package_config_id='' \
    node --no-warnings test-engine/cli.mjs >"$results")
node "$ROOT/Benchmarks/http-cache-tests/summary.mjs" "$SUITE" "$results"
