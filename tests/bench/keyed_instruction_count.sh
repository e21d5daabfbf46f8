#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# User-space instructions a server spends per request when every request carries another user
# key (`X-API-Key: user-N` over KEYS keys, tests/bench/peers/keys.lua): the figure behind the
# hybrid Redis mode's cost per key exchanged (docs/benchmarks.md, "Hybrid mode, 2026-12-02
# 07:00"). Like instruction_count.sh it counts with callgrind, which this shared VM's noise does
# not move; unlike it, the load is wrk with keys.lua for DURATION seconds: the counters are
# zeroed after a warm-up, dumped after the measured run, and divided by the requests wrk
# completed. The server runs on cpu 0, wrk on cpu 1; whatever the server needs (a backend,
# redis-server) must already be up.
#
# Under callgrind the server runs some 15x slower, so a key comes up that much less often:
# to keep as many requests per key and exchange period as at full speed, scale KEYS down by
# the same factor (800 here for the 10,000 keys of `peer_compare.sh redis`).
#
# usage: tests/bench/keyed_instruction_count.sh URL -- SERVER_COMMAND [ARGS...]
#   e.g. KEYS=800 tests/bench/keyed_instruction_count.sh http://127.0.0.1:18101/ok -- \
#          build/bin/sluice --config hybrid.json
# Environment (defaults in brackets):
#   KEYS [800]  DURATION [15] seconds measured  WARMUP [5] seconds  CONNS [64]
#   CACHE [unset; 1: --cache-sim=yes, also prints cache misses per request]
#   OUT_DIR [build/bench/keyed-instructions]  the profile, wrk's output and the server's log
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
readonly KEYS=${KEYS:-800} DURATION=${DURATION:-15} WARMUP=${WARMUP:-5} CONNS=${CONNS:-64}
readonly OUT_DIR=${OUT_DIR:-$ROOT/build/bench/keyed-instructions}

# shellcheck source=tests/bench/callgrind_server.sh
source "$ROOT/tests/bench/callgrind_server.sh"

[[ $# -ge 3 && $2 == -- ]] || die "usage: $0 URL -- SERVER_COMMAND [ARGS...]"
readonly URL=$1
shift 2
require_tools "apt-get install valgrind wrk curl" valgrind callgrind_control wrk curl taskset
mkdir -p "$OUT_DIR"
readonly PROFILE=$OUT_DIR/callgrind.out
rm -f "$PROFILE" "$PROFILE".*

CALLGRIND_OPTS=()
[[ -z ${CACHE:-} ]] || CALLGRIND_OPTS=(--cache-sim=yes)
start_server "$PROFILE" "$OUT_DIR/server.log" "$URL" -H 'X-API-Key: warm-up' -- "$@"
load() {
  taskset -c 1 wrk -t1 -c"$CONNS" -d"$1"s -s "$ROOT/tests/bench/peers/keys.lua" "$URL" -- "$KEYS"
}
load "$WARMUP" >"$OUT_DIR/wrk.warmup.txt"
callgrind_control -z "$SERVER_PID" >/dev/null 2>&1
load "$DURATION" >"$OUT_DIR/wrk.txt"
callgrind_control -d "$SERVER_PID" >/dev/null 2>&1
stop_server
grep -q "Non-2xx" "$OUT_DIR/wrk.txt" && die "some requests failed: $OUT_DIR/wrk.txt"
requests=$(awk '/requests in/ {print $1}' "$OUT_DIR/wrk.txt")
[[ -n $requests && $requests -gt 0 ]] || die "no requests completed: $OUT_DIR/wrk.txt"

# The dump taken after the measured run holds exactly that run (the counters were zeroed).
python3 - "$PROFILE.1" "$requests" <<'EOF'
import sys
events, totals = None, None
with open(sys.argv[1]) as profile:
    for line in profile:
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:"):
            totals = [int(v) for v in line.split()[1:]]
if not events or not totals:
    sys.exit(f"no totals in {sys.argv[1]}")
n = int(sys.argv[2])
names = {"Ir": "instructions", "Dr": "data reads", "Dw": "data writes", "I1mr": "I1 misses",
         "D1mr": "D1 read misses", "D1mw": "D1 write misses", "ILmr": "LL instruction misses",
         "DLmr": "LL read misses", "DLmw": "LL write misses"}
print(f"requests: {n}")
for event, total in zip(events, totals):
    print(f"{names.get(event, event)} per request: {total / n:.0f}")
EOF
echo "profile: $PROFILE.1 (callgrind_annotate it for where they go)"
