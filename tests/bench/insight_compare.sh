#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The data-path cost of operator insight (docs/benchmarks.md, "Operator insight"): the same
# build, one worker, in two modes, measured in interleaved rounds:
#   off  admin.top_users false; nobody on the admin port (no SSE client, no dashboard polling)
#   on   admin.top_users true (every request counted into its policy's heavy hitters);
#        SSE_CLIENTS `curl -N` followers of GET /admin/events; and a poller doing what the
#        dashboard does every POLL_S seconds: GET /admin/routes, /admin/limits, /admin/backends,
#        /admin/backends/demo/endpoints, /admin/insight/breakers, /admin/limits/bench/top?n=10
#        and /metrics
# Load: wrk keep-alive GETs through a rate limit (set far above the load, so it is decided on
# every request and never refuses), each request keyed by X-API-Key over USERS users
# (tests/bench/peers/keys.lua: every user once per USERS requests, the heavy-hitter sketch's
# worst case: nearly every request replaces an entry). The access log is off in both modes, so
# `on` also pays for hashing the user (with the log on, the log's label hash is reused).
# Pinning: the whole sluice process (its worker and its admin thread, the main thread) on cpu 0;
# wrk, the demo backend, curl and the poller on cpu 1, so both modes pay the same for the
# machine and only `on`'s extra work lands on sluice's cpu. One sluice process at a time: each
# mode's run starts its own (warm-up WARMUP first) and stops it, and the order of the two modes
# alternates from round to round.
#
# Two more modes split `on` in its parts (MODES="off sketch watch on"): `sketch` is
# admin.top_users true with nobody on the admin port, `watch` admin.top_users false with the SSE
# clients and the poller.
#
# usage: tests/bench/insight_compare.sh
# Environment: ROUNDS [5]  DURATION [10] (s)  WARMUP [2] (s)  CONNECTIONS [64]  USERS [10000]
#   SSE_CLIENTS [10]  POLL_S [2]  MODES ["off on"]  BIN_DIR [build/bin]
#   OUT_DIR [build/bench/insight]
# Results: OUT_DIR/raw.tsv (mode, round, req/s, p50 µs, p99 µs, requests, sluice CPU µs per
# request, non-2xx), OUT_DIR/summary.md (medians, the on/off ratios, the poller's and the SSE
# clients' tallies); logs, configs and wrk outputs in OUT_DIR/work/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
readonly ROUNDS=${ROUNDS:-5} DURATION=${DURATION:-10} WARMUP=${WARMUP:-2}
readonly CONNECTIONS=${CONNECTIONS:-64} USERS=${USERS:-10000}
readonly SSE_CLIENTS=${SSE_CLIENTS:-10} POLL_S=${POLL_S:-2}
readonly MODES=${MODES:-off on}
readonly BIN_DIR=${BIN_DIR:-$ROOT/build/bin}
readonly OUT_DIR=${OUT_DIR:-$ROOT/build/bench/insight}
readonly WORK=$OUT_DIR/work
readonly TOKEN_ENV=SLUICE_BENCH_ADMIN_TOKEN TOKEN=insight-bench-token
CLK_TCK=$(getconf CLK_TCK)
readonly CLK_TCK

log() { printf '[insight] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

declare -a PIDS=()       # everything started, stopped on exit
declare -a WATCHERS=()   # the `on` mode's SSE clients and poller
SLUICE_PID='' ADMIN_PORT='' PROXY_PORT='' BACKEND_PORT='' SSE_STATUS=''
cleanup() {
  local pid
  for pid in "${WATCHERS[@]}" "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start_backend() {
  BACKEND_PORT=$(free_port)
  taskset -c 1 "$WORK/bin/sluice-demo-backend" --address 127.0.0.1 --port "$BACKEND_PORT" \
    --threads 1 >"$WORK/backend.log" 2>&1 &
  PIDS+=($!)
  local i
  for ((i = 0; i < 100; i++)); do
    curl -s -o /dev/null "http://127.0.0.1:$BACKEND_PORT/ok" && return 0
    sleep 0.1
  done
  die "the demo backend did not start"
}

write_config() { # write_config MODE
  local top=false
  [[ $1 != on && $1 != sketch ]] || top=true
  cat >"$WORK/$1.json" <<EOF
{"listen": {"address": "127.0.0.1", "port": 0},
 "admin": {"address": "127.0.0.1", "port": 0, "token_env": "$TOKEN_ENV", "top_users": $top},
 "threads": 1, "drain_timeout_ms": 1000,
 "http": {"max_connections": 10000, "idle_timeout_ms": 600000},
 "access_log": {"enabled": false},
 "identity": [{"header": "X-API-Key"}],
 "limits": {"bench": {"requests": 1000000000, "window_ms": 60000, "buckets": 60}},
 "backends": {"demo": {"endpoints": ["127.0.0.1:$BACKEND_PORT"], "max_idle_per_endpoint": 128,
                       "breaker": {"enabled": true}}},
 "routes": [{"name": "all", "prefix": "/", "backend": "demo", "limit": "bench"}]}
EOF
  "$WORK/bin/sluice" --check --config "$WORK/$1.json" >/dev/null || die "sluice rejects $1.json"
}

start_sluice() { # start_sluice MODE ROUND
  local out=$WORK/sluice-$1-$2.log i
  env "$TOKEN_ENV=$TOKEN" taskset -c 0 "$WORK/bin/sluice" --config "$WORK/$1.json" >"$out" 2>&1 &
  SLUICE_PID=$!
  PIDS+=("$SLUICE_PID")
  for ((i = 0; i < 150; i++)); do
    grep -q 'ready proxy=' "$out" && break
    sleep 0.1
  done
  PROXY_PORT=$(sed -nE 's/.*ready proxy=[^ ]*:([0-9]+).*/\1/p' "$out")
  ADMIN_PORT=$(sed -nE 's/.* admin=[^ ]*:([0-9]+).*/\1/p' "$out")
  [[ -n $PROXY_PORT && -n $ADMIN_PORT ]] || die "sluice did not start: $(tail -5 "$out")"
}

stop_sluice() {
  kill "$SLUICE_PID" 2>/dev/null || true
  wait "$SLUICE_PID" 2>/dev/null || true
}

admin_get() { # admin_get PATH [curl options...]: the HTTP status
  local path=$1
  shift
  curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$@" \
    "http://127.0.0.1:$ADMIN_PORT$path" || true
}

# The dashboard's load: SSE followers (when the endpoint exists) and the poller, all on cpu 1.
start_watchers() { # start_watchers ROUND
  local i
  SSE_STATUS=$(admin_get /admin/events --max-time 1)
  if [[ $SSE_STATUS == 200 ]]; then
    for ((i = 1; i <= SSE_CLIENTS; i++)); do
      taskset -c 1 curl -sN -H "Authorization: Bearer $TOKEN" \
        "http://127.0.0.1:$ADMIN_PORT/admin/events" >"$WORK/sse-$1-$i.txt" 2>/dev/null &
      WATCHERS+=($!)
    done
  else
    log "GET /admin/events answers HTTP $SSE_STATUS: no SSE clients in this run"
  fi
  poll >>"$WORK/poller-$1.txt" 2>&1 & # on cpu 1, as this script (main)
  WATCHERS+=($!)
}

# poll: what the dashboard asks every POLL_S seconds, one line "PATH STATUS" per call.
poll() {
  local p paths=(/admin/routes /admin/limits /admin/backends /admin/backends/demo/endpoints
    /admin/insight/breakers "/admin/limits/bench/top?n=10" /metrics)
  while :; do
    for p in "${paths[@]}"; do
      printf '%s %s\n' "$p" "$(admin_get "$p")"
    done
    sleep "$POLL_S"
  done
}

stop_watchers() {
  local pid
  for pid in "${WATCHERS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${WATCHERS[@]}"; do wait "$pid" 2>/dev/null || true; done
  WATCHERS=()
}

cpu_ticks() { # utime + stime of one process, all threads
  local stat fields
  stat=$(<"/proc/$1/stat")
  read -ra fields <<<"${stat##*) }"
  echo $((fields[11] + fields[12]))
}

wrk_run() { # wrk_run SECONDS OUT
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${1}s" --latency -s "$ROOT/tests/bench/peers/keys.lua" \
    "http://127.0.0.1:$PROXY_PORT/ok" -- "$USERS" >"$2" 2>&1 || log "wrk exited non-zero ($2)"
}

# wrk_parse FILE: "rps p50_us p99_us requests non2xx" (as peer_compare.sh reads wrk).
wrk_parse() {
  awk '
    function us(v) {
      if (v ~ /us$/) return v + 0
      if (v ~ /ms$/) return v * 1000
      if (v ~ /[0-9]s$/) return v * 1000000
      return v + 0
    }
    /^ +50% / { p50 = us($2) }
    /^ +99% / { p99 = us($2) }
    / requests in / { requests = $1 }
    /^Requests\/sec:/ { rps = $2 }
    /Non-2xx or 3xx responses:/ { non2xx = $NF }
    END { printf "%s %.0f %.0f %d %d\n", rps == "" ? "nan" : rps, p50, p99, requests, non2xx }' "$1"
}

measure() { # measure MODE ROUND
  local mode=$1 round=$2 out cpu0 cpu1 rps p50 p99 requests non2xx cpu_req
  write_config "$mode"
  start_sluice "$mode" "$round"
  [[ $mode != on && $mode != watch ]] || start_watchers "$round"
  wrk_run "$WARMUP" "$WORK/warmup-$mode-$round.txt"
  out=$WORK/wrk-$mode-$round.txt
  cpu0=$(cpu_ticks "$SLUICE_PID")
  wrk_run "$DURATION" "$out"
  cpu1=$(cpu_ticks "$SLUICE_PID")
  read -r rps p50 p99 requests non2xx < <(wrk_parse "$out")
  cpu_req=$(awk -v t=$((cpu1 - cpu0)) -v hz="$CLK_TCK" -v n="$requests" \
    'BEGIN { printf "%.2f", (n > 0 ? t * 1e6 / hz / n : 0) }')
  if [[ $mode == on ]]; then
    curl -s -H "Authorization: Bearer $TOKEN" \
      "http://127.0.0.1:$ADMIN_PORT/admin/limits/bench/top?n=3" >"$WORK/top-$round.json" || true
  fi
  stop_watchers
  stop_sluice
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$round" "$rps" "$p50" "$p99" "$requests" \
    "$cpu_req" "$non2xx" >>"$OUT_DIR/raw.tsv"
  log "$(printf 'round %s %-3s %10s req/s  p50 %5s µs  p99 %6s µs  cpu %6s µs/req  non-2xx %s' \
    "$round" "$mode" "$rps" "$p50" "$p99" "$cpu_req" "$non2xx")"
}

summarize() {
  local sse_events=0 f
  for f in "$WORK"/sse-*.txt; do
    [[ -e $f ]] || continue
    sse_events=$((sse_events + $(grep -c '^event:' "$f" || true)))
  done
  /usr/bin/python3 - "$OUT_DIR/raw.tsv" "$WORK" "$SSE_STATUS" "$sse_events" "$SSE_CLIENTS" \
    >"$OUT_DIR/summary.md" <<'EOF'
import collections, glob, json, os, statistics, sys
raw, work, sse_status, sse_events, sse_clients = sys.argv[1:6]
rows = collections.defaultdict(dict)
for line in open(raw):
    mode, rnd, rps, p50, p99, requests, cpu, non2xx = line.rstrip("\n").split("\t")
    rows[mode][int(rnd)] = dict(rps=float(rps), p50=float(p50), p99=float(p99),
                                requests=int(requests), cpu=float(cpu), non2xx=int(non2xx))
med = {m: {k: statistics.median(r[k] for r in rows[m].values()) for k in
           ("rps", "p50", "p99", "cpu")} for m in rows}
print("| mode | rounds | req/s (median) | req/s (min-max) | p50 µs | p99 µs | sluice CPU µs/req |")
print("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
for m in ("off", "sketch", "watch", "on"):
    if m not in rows:
        continue
    rps = [r["rps"] for r in rows[m].values()]
    print(f"| {m} | {len(rps)} | {med[m]['rps']:,.0f} | {min(rps):,.0f}-{max(rps):,.0f} "
          f"| {med[m]['p50']:.0f} | {med[m]['p99']:.0f} | {med[m]['cpu']:.2f} |")
print()
for m in ("on", "sketch", "watch"):
    if m not in med or "off" not in med:
        continue
    paired = [rows[m][r]["rps"] / rows["off"][r]["rps"] for r in rows[m] if r in rows["off"]]
    target = " (target >= 0.98)" if m == "on" else ""
    print(f"- {m}/off req/s, ratio of the medians: **{med[m]['rps'] / med['off']['rps']:.4f}**"
          f"{target}; median of the per-round ratios: {statistics.median(paired):.4f} "
          f"(rounds: {', '.join(f'{p:.3f}' for p in paired)})")
    print(f"- {m}/off p99: {med[m]['p99'] / med['off']['p99']:.3f}; "
          f"{m}/off CPU per request: {med[m]['cpu'] / med['off']['cpu']:.3f} "
          f"({med[m]['cpu'] - med['off']['cpu']:+.2f} µs)")
print(f"- non-2xx answers: {sum(r['non2xx'] for m in rows for r in rows[m].values())}")
polls = collections.Counter()
for f in glob.glob(os.path.join(work, "poller-*.txt")):
    for line in open(f):
        parts = line.split()
        if len(parts) == 2:
            polls[(parts[0], parts[1])] += 1
if polls:
    print("- poller answers (path status count): " +
          "; ".join(f"{p} {s} x{n}" for (p, s), n in sorted(polls.items())))
if sse_status == "200":
    print(f"- SSE: {sse_clients} clients per `on` run, {sse_events} events received in all")
else:
    print(f"- SSE: GET /admin/events answered {sse_status or 'nothing'}: runs without SSE clients")
tops = sorted(glob.glob(os.path.join(work, "top-*.json")))
if tops:
    try:
        top = json.load(open(tops[-1]))
        print(f"- last `on` run's GET /admin/limits/bench/top?n=3: tracked {top.get('tracked')}, "
              f"error_bound {top.get('error_bound')}, users {top.get('users')}")
    except ValueError:
        pass
EOF
  cat "$OUT_DIR/summary.md"
}

main() {
  local tool
  for tool in wrk curl taskset getconf; do
    command -v "$tool" >/dev/null || die "$tool is required"
  done
  if (($(nproc) < 2)) || ! taskset -c 0 true || ! taskset -c 1 true; then
    die "needs cpus 0 and 1"
  fi
  # Everything this script starts runs on cpu 1 (sluice is started on cpu 0 explicitly).
  taskset -pc 1 $$ >/dev/null
  [[ -x $BIN_DIR/sluice && -x $BIN_DIR/sluice-demo-backend ]] || die "build sluice first"
  rm -rf "$OUT_DIR"
  mkdir -p "$WORK/bin"
  cp "$BIN_DIR/sluice" "$BIN_DIR/sluice-demo-backend" "$WORK/bin/"  # a rebuild cannot swap them
  : >"$OUT_DIR/raw.tsv"
  log "load average $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds of ${DURATION}s per mode"
  start_backend
  local round mode modes
  read -ra modes <<<"$MODES"
  for ((round = 1; round <= ROUNDS; round++)); do
    for mode in "${modes[@]}"; do
      measure "$mode" "$round"
    done
    mapfile -t modes < <(printf '%s\n' "${modes[@]}" | tac) # the other order next round
  done
  log "load average $(cut -d' ' -f1-3 /proc/loadavg)"
  summarize
}

main "$@"
