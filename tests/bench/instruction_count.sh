#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# User-space instructions a server spends per request, counted by callgrind: a figure this
# shared VM's noise does not move (docs/benchmarks.md, "Instructions per h2 stream beside
# haproxy"). The server runs under `valgrind --tool=callgrind` on cpu 0 while h2load (cpu 1)
# sends a warm-up, then a fixed number of requests; that is done twice (SMALL and LARGE
# requests) and the difference of the two profiles' totals, divided by LARGE - SMALL, is the
# cost of one request with start-up and warm-up cancelled out. The kernel's share is not
# counted (compare system calls with `peer_compare.sh syscalls`).
#
# usage: tests/bench/instruction_count.sh URL -- SERVER_COMMAND [ARGS...]
#   e.g. tests/bench/instruction_count.sh https://127.0.0.1:8443/ok -- build/bin/sluice --config c.json
#        H1=1 CONNS=256 tests/bench/instruction_count.sh http://127.0.0.1:8080/ok -- \
#          nginx -p DIR -c DIR/nginx.conf        (nginx: `daemon off; master_process off;`)
# Environment (defaults in brackets):
#   CONNS [64]  STREAMS [10] (h2 only)  H1 [unset: h2; 1: HTTP/1.1, h2load --h1]
#   SMALL [10000]  LARGE [30000]  WARMUP [5000] requests
#   CACHE [unset; 1: --cache-sim=yes, also prints cache misses per request]
#   OUT_DIR [build/bench/instructions]  the profiles and h2load's outputs
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
readonly CONNS=${CONNS:-64} STREAMS=${STREAMS:-10} SMALL=${SMALL:-10000} LARGE=${LARGE:-30000}
readonly WARMUP=${WARMUP:-5000} OUT_DIR=${OUT_DIR:-$ROOT/build/bench/instructions}
# shellcheck source=tests/bench/callgrind_server.sh
source "$ROOT/tests/bench/callgrind_server.sh"

[[ $# -ge 3 && $2 == -- ]] || die "usage: $0 URL -- SERVER_COMMAND [ARGS...]"
readonly URL=$1
shift 2
require_tools "apt-get install valgrind nghttp2-client curl" \
  valgrind callgrind_control callgrind_annotate h2load curl taskset
mkdir -p "$OUT_DIR"

load_opts=(-c "$CONNS" -t 1)
if [[ -n ${H1:-} ]]; then load_opts+=(--h1); else load_opts+=(-m "$STREAMS"); fi
CALLGRIND_OPTS=()
[[ -z ${CACHE:-} ]] || CALLGRIND_OPTS=(--cache-sim=yes)

# profile REQUESTS: the totals line of a profile taken after REQUESTS measured requests.
profile() {
  local requests=$1 out=$OUT_DIR/callgrind.$1
  rm -f "$out" "$out".*
  start_server "$out" "$OUT_DIR/server.$requests.log" "$URL" -- "${SERVER[@]}"
  taskset -c 1 h2load "${load_opts[@]}" -n "$WARMUP" "$URL" >/dev/null 2>&1
  taskset -c 1 h2load "${load_opts[@]}" -n "$requests" "$URL" >"$OUT_DIR/h2load.$requests.txt" 2>&1
  grep -q "succeeded, 0 failed, 0 errored" "$OUT_DIR/h2load.$requests.txt" ||
    die "requests failed: $OUT_DIR/h2load.$requests.txt"
  callgrind_control -d "$SERVER_PID" >/dev/null 2>&1
  stop_server
  callgrind_annotate --auto=no "$out.1" | grep "PROGRAM TOTALS"
}

SERVER=("$@")
readonly SERVER
echo "[instructions] ${SERVER[*]}: ${SMALL} then ${LARGE} requests (${load_opts[*]}) to $URL" >&2
small=$(profile "$SMALL")
large=$(profile "$LARGE")
python3 - "$small" "$large" $((LARGE - SMALL)) "${CACHE:-}" <<'EOF'
import re, sys
def counts(line):
    return [int(x.replace(",", "")) for x in re.findall(r"([\d,]+) \(", line)]
small, large, n = counts(sys.argv[1]), counts(sys.argv[2]), int(sys.argv[3])
names = ["instructions"] if not sys.argv[4] else [
    "instructions", "data reads", "data writes", "I1 misses", "D1 read misses",
    "D1 write misses", "LL instruction misses", "LL read misses", "LL write misses"]
for name, a, b in zip(names, small, large):
    print(f"{name} per request: {(b - a) / n:.0f}")
EOF
