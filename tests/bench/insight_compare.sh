#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The data-path cost of operator insight (docs/benchmarks.md, "Operator insight"): the same
# build, one worker, `off` against each mode of MODES, the two side by side at the same time.
#   off      admin.top_users false; nobody on the admin port (no SSE client, no dashboard)
#   on       admin.top_users true (every request counted into its policy's heavy hitters);
#            SSE_CLIENTS `curl -N` followers of GET /admin/events; and a poller doing what the
#            dashboard does every POLL_S seconds: GET /admin/routes, /admin/limits,
#            /admin/backends, /admin/backends/demo/endpoints, /admin/insight/breakers,
#            /admin/limits/bench/top?n=10 and /metrics
#   sketch   admin.top_users true, nobody on the admin port (the first half of `on`)
#   watch    admin.top_users false, the SSE clients and the poller (the second half)
#   control  the same as `off`: an A/A pair, which shows how finely the method can tell two
#            equal builds apart on this machine
#   fleet    the fleet on (docs/fleet.md): a fleet of its own per process on a local
#            redis-server (heartbeat every second, the fleet thread waiting on the change log).
#            When MODES has `fleet`, every config of the run (`off` too) uses that redis-server
#            as its store and proxies without a limit: the plain data path, the same on both
#            sides but for the fleet
# Load: wrk keep-alive GETs through a rate limit (set far above the load, so it is decided on
# every request and never refuses), each request keyed by X-API-Key over USERS users
# (tests/bench/peers/keys.lua: every user once per USERS requests, the heavy-hitter sketch's
# worst case: nearly every request replaces an entry). The access log is off in both modes, so
# `on` also pays for hashing the user (with the log on, the log's label hash is reused).
#
# Method. This machine is shared: its speed drifts by 10-20% over minutes, more than the 2% to
# be shown, so runs one after the other cannot be compared that finely. Each round therefore runs
# both processes of a pair AT THE SAME TIME, each with its own wrk, so whatever the machine does
# it does to both:
# - both sluice processes (every thread: the worker, the admin thread) are pinned to cpu 0, each
#   in its own cpu cgroup capped at QUOTA percent of one cpu (CFS bandwidth, 10 ms period);
# - wrk, the shared demo backend, curl and the poller run on cpu 1.
# The cap makes each sluice its own bottleneck, with the same budget: without it, the load side
# (cpu 1) runs out first and req/s measures wrk, not sluice; and the two processes would share
# cpu 0 by the scheduler's fairness, not by their cost. Capped, a process's req/s is its budget
# over its cost per request, so the ratio of the pair's req/s is the ratio of their costs. Each
# round records how often the cap held a process back (throttled periods: near 100% means the
# process was the bottleneck) and how busy cpu 1 was (well under 100%: the load side was not).
# The two sides are not quite equal (an A/A pair shows a few % between them), so `off` takes
# side 0 in odd rounds and side 1 in even ones, and the headline figure is the median of the
# side-balanced ratios: the geometric mean of rounds 2k-1 and 2k. Which side's wrk starts first
# alternates every two rounds. Each round starts fresh processes (warm-up WARMUP first).
#
# usage: tests/bench/insight_compare.sh
# Environment: ROUNDS [10] (even: whole side-balanced pairs)  DURATION [10] (s)  WARMUP [2] (s)  CONNECTIONS [64] (per wrk)
#   USERS [10000]  SSE_CLIENTS [10]  POLL_S [2]  MODES ["on"] (each measured against `off`)
#   QUOTA [25] (% of one cpu per sluice process)  BIN_DIR [build/bin]
#   OUT_DIR [build/bench/insight]
# Results: OUT_DIR/raw.tsv (pair, round, mode, req/s, p50 µs, p99 µs, requests, sluice CPU µs
# per request, non-2xx, % of periods throttled, cpu 1 busy %), OUT_DIR/summary.md (per pair: the
# median and spread of the side-balanced and the per-round req/s ratios, the ratio of all
# requests, CPU per request;
# the poller's and the SSE clients' tallies); logs, configs and wrk outputs in OUT_DIR/work/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
readonly ROUNDS=${ROUNDS:-10} DURATION=${DURATION:-10} WARMUP=${WARMUP:-2}
readonly CONNECTIONS=${CONNECTIONS:-64} USERS=${USERS:-10000}
readonly SSE_CLIENTS=${SSE_CLIENTS:-10} POLL_S=${POLL_S:-2}
readonly MODES=${MODES:-on} QUOTA=${QUOTA:-25}
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

# Per side (0 and 1) of the running pair.
declare -a SIDE_MODE=() SIDE_PID=() SIDE_PROXY=() SIDE_ADMIN=() CGROUPS=()
declare -a PIDS=()     # everything started, stopped on exit
declare -a WATCHERS=() # the SSE clients and pollers of the running pair
BACKEND_PORT='' SSE_STATUS=''
cleanup() {
  local pid cg
  for pid in "${WATCHERS[@]}" "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for cg in "${CGROUPS[@]}"; do rmdir "$cg" 2>/dev/null || true; done
}
trap cleanup EXIT

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start_backend() {
  BACKEND_PORT=$(free_port)
  "$WORK/bin/sluice-demo-backend" --address 127.0.0.1 --port "$BACKEND_PORT" --threads 1 \
    >"$WORK/backend.log" 2>&1 &
  PIDS+=($!)
  local i
  for ((i = 0; i < 100; i++)); do
    curl -s -o /dev/null "http://127.0.0.1:$BACKEND_PORT/ok" && return 0
    sleep 0.1
  done
  die "the demo backend did not start"
}

# make_cgroups: CGROUPS[0] and [1], cpu cgroups capped at QUOTA% of one cpu (v1 `cpu` or v2).
make_cgroups() {
  local period=10000 quota=$((QUOTA * 100)) v1=/sys/fs/cgroup/cpu v2=/sys/fs/cgroup side cg
  for side in 0 1; do
    cg=sluice-insight-bench-$$-$side
    if [[ -w $v1/cpu.cfs_quota_us ]] && mkdir "$v1/$cg" 2>/dev/null; then
      CGROUPS[side]=$v1/$cg
      echo "$period" >"${CGROUPS[side]}/cpu.cfs_period_us"
      echo "$quota" >"${CGROUPS[side]}/cpu.cfs_quota_us"
    elif [[ -f $v2/cgroup.subtree_control ]] && grep -qw cpu "$v2/cgroup.subtree_control" &&
      mkdir "$v2/$cg" 2>/dev/null; then
      CGROUPS[side]=$v2/$cg
      echo "$quota $period" >"${CGROUPS[side]}/cpu.max"
    else
      die "cannot make a cpu cgroup (needs a writable cgroup cpu controller, v1 or v2)"
    fi
  done
  log "each sluice capped at $QUOTA% of one cpu (${CGROUPS[*]})"
}

throttle_counts() { # throttle_counts SIDE: "periods throttled" of its cgroup so far
  awk '$1 == "nr_periods" { p = $2 } $1 == "nr_throttled" { t = $2 } END { print p + 0, t + 0 }' \
    "${CGROUPS[$1]}/cpu.stat"
}

cpu1_ticks() { # "busy total" jiffies of cpu 1 so far
  awk '$1 == "cpu1" { idle = $5 + $6; total = 0; for (i = 2; i <= 9; i++) total += $i
                      print total - idle, total }' /proc/stat
}

cpu_ticks() { # utime + stime of one process, all threads
  local stat fields
  stat=$(<"/proc/$1/stat")
  read -ra fields <<<"${stat##*) }"
  echo $((fields[11] + fields[12]))
}

REDIS_PORT=''
start_redis() { # for MODES with fleet
  REDIS_PORT=$(free_port)
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    >"$WORK/redis.log" 2>&1 &
  PIDS+=($!)
  local i
  for ((i = 0; i < 100; i++)); do
    grep -q 'Ready to accept connections' "$WORK/redis.log" && return 0
    sleep 0.1
  done
  die "redis-server did not start: $(tail -3 "$WORK/redis.log")"
}

write_config() { # write_config MODE
  local top=false extra='' limit='"bench"'
  [[ $1 != on && $1 != sketch ]] || top=true
  if [[ -n $REDIS_PORT ]]; then
    extra="\"store\": {\"type\": \"redis\", \"host\": \"127.0.0.1\", \"port\": $REDIS_PORT},"
    limit=null
  fi
  if [[ $1 == fleet ]]; then
    extra="$extra \"fleet\": {\"enabled\": true, \"name\": \"bench-$RANDOM$RANDOM\"},"
  fi
  cat >"$WORK/$1.json" <<EOF
{"listen": {"address": "127.0.0.1", "port": 0},
 "admin": {"address": "127.0.0.1", "port": 0, "token_env": "$TOKEN_ENV", "top_users": $top},
 "threads": 1, "drain_timeout_ms": 1000, $extra
 "http": {"max_connections": 10000, "idle_timeout_ms": 600000},
 "access_log": {"enabled": false},
 "identity": [{"header": "X-API-Key"}],
 "limits": {"bench": {"requests": 1000000000, "window_ms": 60000, "buckets": 60}},
 "backends": {"demo": {"endpoints": ["127.0.0.1:$BACKEND_PORT"], "max_idle_per_endpoint": 128,
                       "breaker": {"enabled": true}}},
 "routes": [{"name": "all", "prefix": "/", "backend": "demo", "limit": $limit}]}
EOF
  "$WORK/bin/sluice" --check --config "$WORK/$1.json" >/dev/null || die "sluice rejects $1.json"
}

start_sluice() { # start_sluice SIDE MODE ROUND
  local side=$1 mode=$2 out=$WORK/sluice-$3-$1-$2.log i
  # The shell joins the cgroup before it becomes sluice, so no thread of sluice runs uncapped.
  env "$TOKEN_ENV=$TOKEN" CGROUP_PROCS="${CGROUPS[side]}/cgroup.procs" \
    bash -c 'echo $$ >"$CGROUP_PROCS"; exec "$@"' sluice \
    taskset -c 0 "$WORK/bin/sluice" --config "$WORK/$mode.json" >"$out" 2>&1 &
  SIDE_PID[side]=$!
  SIDE_MODE[side]=$mode
  PIDS+=("${SIDE_PID[side]}")
  for ((i = 0; i < 150; i++)); do
    grep -q 'ready proxy=' "$out" && break
    sleep 0.1
  done
  SIDE_PROXY[side]=$(sed -nE 's/.*ready proxy=[^ ]*:([0-9]+).*/\1/p' "$out")
  SIDE_ADMIN[side]=$(sed -nE 's/.* admin=[^ ]*:([0-9]+).*/\1/p' "$out")
  [[ -n ${SIDE_PROXY[side]} && -n ${SIDE_ADMIN[side]} ]] ||
    die "sluice ($mode) did not start: $(tail -5 "$out")"
}

stop_sluices() {
  local side
  for side in 0 1; do kill "${SIDE_PID[side]}" 2>/dev/null || true; done
  for side in 0 1; do wait "${SIDE_PID[side]}" 2>/dev/null || true; done
}

admin_get() { # admin_get PORT PATH [curl options...]: the HTTP status
  local port=$1 path=$2
  shift 2
  curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$@" \
    "http://127.0.0.1:$port$path" || true
}

# The dashboard's load on one side's admin port: SSE followers (when the endpoint exists) and
# the poller, all on cpu 1 like this script.
start_watchers() { # start_watchers SIDE ROUND
  local port=${SIDE_ADMIN[$1]} i
  SSE_STATUS=$(admin_get "$port" /admin/events --max-time 1)
  if [[ $SSE_STATUS == 200 ]]; then
    for ((i = 1; i <= SSE_CLIENTS; i++)); do
      curl -sN -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$port/admin/events" \
        >"$WORK/sse-$2-$i.txt" 2>/dev/null &
      WATCHERS+=($!)
    done
  else
    log "GET /admin/events answers HTTP $SSE_STATUS: no SSE clients in this run"
  fi
  poll "$port" >>"$WORK/poller-$2.txt" 2>&1 &
  WATCHERS+=($!)
}

# poll PORT: what the dashboard asks every POLL_S seconds, one line "PATH STATUS" per call.
poll() {
  local p paths=(/admin/routes /admin/limits /admin/backends /admin/backends/demo/endpoints
    /admin/insight/breakers "/admin/limits/bench/top?n=10" /metrics)
  while :; do
    for p in "${paths[@]}"; do
      printf '%s %s\n' "$p" "$(admin_get "$1" "$p")"
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

wrk_run() { # wrk_run SECONDS PORT OUT
  wrk -t1 -c"$CONNECTIONS" -d"${1}s" --latency -s "$ROOT/tests/bench/peers/keys.lua" \
    "http://127.0.0.1:$2/ok" -- "$USERS" >"$3" 2>&1 || log "wrk exited non-zero ($3)"
}

# wrk_both SECONDS TAG ROUND: both sides' wrk at once. Which side starts first alternates
# every two rounds, so that over four rounds each mode starts first on each side once.
wrk_both() {
  local first=$((($3 + 1) / 2 % 2)) side pids=()
  for side in "$first" $((1 - first)); do
    wrk_run "$1" "${SIDE_PROXY[side]}" "$WORK/$2-$side-${SIDE_MODE[side]}.txt" &
    pids+=($!)
  done
  wait "${pids[@]}"
}

# wrk_parse FILE: "rps p50_us p99_us requests non2xx socket_errors" (tests/bench/wrk_parse.awk).
wrk_parse() {
  awk -f "$ROOT/tests/bench/wrk_parse.awk" "$1"
}

measure_pair() { # measure_pair MODE ROUND: `off` and MODE side by side
  local mode=$1 round=$2 tag side busy0 tot0 busy1 tot1 load_busy
  local -a cpu0 cpu1 per0 thr0 per1 thr1
  tag=$mode-$round
  # `off` takes side 0 in odd rounds and side 1 in even ones, so neither mode keeps a cgroup,
  # and the side whose wrk starts first alternates with it.
  if ((round % 2)); then
    start_sluice 0 off "$tag"
    start_sluice 1 "$mode" "$tag"
  else
    start_sluice 0 "$mode" "$tag"
    start_sluice 1 off "$tag"
  fi
  for side in 0 1; do
    [[ ${SIDE_MODE[side]} != on && ${SIDE_MODE[side]} != watch ]] || start_watchers "$side" "$tag"
  done
  wrk_both "$WARMUP" "warmup-$tag" "$round"
  for side in 0 1; do
    cpu0[side]=$(cpu_ticks "${SIDE_PID[side]}")
    read -r "per0[side]" "thr0[side]" < <(throttle_counts "$side")
  done
  read -r busy0 tot0 < <(cpu1_ticks)
  wrk_both "$DURATION" "wrk-$tag" "$round"
  read -r busy1 tot1 < <(cpu1_ticks)
  for side in 0 1; do
    cpu1[side]=$(cpu_ticks "${SIDE_PID[side]}")
    read -r "per1[side]" "thr1[side]" < <(throttle_counts "$side")
  done
  load_busy=$(awk -v b=$((busy1 - busy0)) -v t=$((tot1 - tot0)) \
    'BEGIN { printf "%.0f", (t > 0 ? 100 * b / t : 0) }')
  for side in 0 1; do
    if [[ ${SIDE_MODE[side]} == on || ${SIDE_MODE[side]} == sketch ]]; then
      curl -s -H "Authorization: Bearer $TOKEN" \
        "http://127.0.0.1:${SIDE_ADMIN[side]}/admin/limits/bench/top?n=3" \
        >"$WORK/top-$tag.json" || true
    fi
  done
  stop_watchers
  stop_sluices
  for side in 0 1; do
    local m=${SIDE_MODE[side]} rps p50 p99 requests non2xx cpu_req throttled
    read -r rps p50 p99 requests non2xx _ < <(wrk_parse "$WORK/wrk-$tag-$side-$m.txt")
    cpu_req=$(awk -v t=$((cpu1[side] - cpu0[side])) -v hz="$CLK_TCK" -v n="$requests" \
      'BEGIN { printf "%.2f", (n > 0 ? t * 1e6 / hz / n : 0) }')
    throttled=$(awk -v p=$((per1[side] - per0[side])) -v t=$((thr1[side] - thr0[side])) \
      'BEGIN { printf "%.0f", (p > 0 ? 100 * t / p : 0) }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$round" "$m" "$rps" "$p50" \
      "$p99" "$requests" "$cpu_req" "$non2xx" "$throttled" "$load_busy" >>"$OUT_DIR/raw.tsv"
    log "$(printf 'round %2s %-7s side %s %-7s %9s req/s  p99 %6s µs  cpu %6s µs/req  non-2xx %s  throttled %3s%%  cpu1 %s%%' \
      "$round" "$mode" "$side" "$m" "$rps" "$p99" "$cpu_req" "$non2xx" "$throttled" "$load_busy")"
  done
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
# rows[pair][round]["off" | "mode"] = one process's figures
rows = collections.defaultdict(lambda: collections.defaultdict(dict))
for line in open(raw):
    (pair, rnd, mode, rps, p50, p99, requests, cpu, non2xx, throttled,
     load_busy) = line.rstrip("\n").split("\t")
    side = "off" if mode == "off" else "mode"
    rows[pair][int(rnd)][side] = dict(rps=float(rps), p50=float(p50), p99=float(p99),
                                      requests=int(requests), cpu=float(cpu),
                                      non2xx=int(non2xx), throttled=float(throttled),
                                      load_busy=float(load_busy))
print("| pair | rounds | req/s off (median) | req/s mode (median) | p99 µs off / mode "
      "| CPU µs/req off / mode | periods throttled off / mode | cpu 1 busy |")
print("| --- | ---: | ---: | ---: | --- | --- | --- | ---: |")
lines = []
for pair, rounds in rows.items():
    full = [r for r in rounds.values() if "off" in r and "mode" in r]
    if not full:
        continue
    med = lambda side, k: statistics.median(r[side][k] for r in full)
    print(f"| off / {pair} | {len(full)} | {med('off', 'rps'):,.0f} | {med('mode', 'rps'):,.0f} "
          f"| {med('off', 'p99'):.0f} / {med('mode', 'p99'):.0f} "
          f"| {med('off', 'cpu'):.2f} / {med('mode', 'cpu'):.2f} "
          f"| {med('off', 'throttled'):.0f}% / {med('mode', 'throttled'):.0f}% "
          f"| {med('off', 'load_busy'):.0f}% |")
    ratios = [r["mode"]["rps"] / r["off"]["rps"] for r in full]
    # The two sides are not quite equal (an A/A pair shows a few % between them); `off` takes
    # side 0 in odd rounds and side 1 in even ones, so the geometric mean of rounds 2k-1 and 2k
    # cancels the side's share.
    by_round = sorted((n, r["mode"]["rps"] / r["off"]["rps"]) for n, r in rounds.items()
                      if "off" in r and "mode" in r)
    ratio_of = dict(by_round)
    balanced = [(ratio_of[n] * ratio_of[n + 1]) ** 0.5 for n, _ in by_round
                if n % 2 == 1 and n + 1 in ratio_of]
    cpu = [r["mode"]["cpu"] / r["off"]["cpu"] for r in full if r["off"]["cpu"] > 0]
    total = sum(r["mode"]["requests"] for r in full) / sum(r["off"]["requests"] for r in full)
    target = " (target >= 0.98)" if pair == "on" else ""
    lines.append(f"- {pair}/off req/s, median of the per-round ratios: "
                 f"{statistics.median(ratios):.4f}; all requests: {total:.4f}; "
                 f"rounds {min(ratios):.3f}-{max(ratios):.3f} "
                 f"({', '.join(f'{x:.3f}' for x in ratios)})")
    if balanced:
        lines.append(f"- {pair}/off req/s, side-balanced (geometric mean of rounds 2k-1 and 2k), "
                     f"median: **{statistics.median(balanced):.4f}**{target}; "
                     f"{min(balanced):.3f}-{max(balanced):.3f} "
                     f"({', '.join(f'{x:.3f}' for x in balanced)})")
    if cpu:
        lines.append(f"- {pair}/off CPU per request, median of the per-round ratios: "
                     f"{statistics.median(cpu):.4f}")
print()
print("\n".join(lines))
print(f"- non-2xx answers: "
      f"{sum(s['non2xx'] for rs in rows.values() for r in rs.values() for s in r.values())}")
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
    print(f"- SSE: {sse_clients} clients per run with them, {sse_events} events received in all")
elif sse_status:
    print(f"- SSE: GET /admin/events answered {sse_status}: runs without SSE clients")
tops = sorted(glob.glob(os.path.join(work, "top-*.json")), key=os.path.getmtime)
if tops:
    try:
        top = json.load(open(tops[-1]))
        print(f"- last run's GET /admin/limits/bench/top?n=3: tracked {top.get('tracked')}, "
              f"error_bound {top.get('error_bound')}, users {top.get('users')}")
    except ValueError:
        pass
EOF
  cat "$OUT_DIR/summary.md"
}

main() {
  local tool mode
  for tool in wrk curl taskset getconf; do
    command -v "$tool" >/dev/null || die "$tool is required"
  done
  if (($(nproc) < 2)) || ! taskset -c 0 true || ! taskset -c 1 true; then
    die "needs cpus 0 and 1"
  fi
  [[ $QUOTA =~ ^[0-9]+$ ]] && ((QUOTA >= 1 && QUOTA <= 50)) ||
    die "QUOTA must be 1-50 (% of one cpu for each of the two processes on cpu 0)"
  for mode in $MODES; do
    [[ $mode =~ ^(on|sketch|watch|control|fleet)$ ]] ||
      die "unknown mode '$mode' (on sketch watch control fleet)"
  done
  # Everything this script starts runs on cpu 1 (sluice is started on cpu 0 explicitly).
  taskset -pc 1 $$ >/dev/null
  [[ -x $BIN_DIR/sluice && -x $BIN_DIR/sluice-demo-backend ]] || die "build sluice first"
  rm -rf "$OUT_DIR"
  mkdir -p "$WORK/bin"
  cp "$BIN_DIR/sluice" "$BIN_DIR/sluice-demo-backend" "$WORK/bin/" # a rebuild cannot swap them
  : >"$OUT_DIR/raw.tsv"
  make_cgroups
  log "load average $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds of ${DURATION}s per pair"
  start_backend
  [[ " $MODES " != *" fleet "* ]] || start_redis
  write_config off
  for mode in $MODES; do [[ $mode == control ]] || write_config "$mode"; done
  cp "$WORK/off.json" "$WORK/control.json"
  local round
  for ((round = 1; round <= ROUNDS; round++)); do
    for mode in $MODES; do
      measure_pair "$mode" "$round"
    done
  done
  log "load average $(cut -d' ' -f1-3 /proc/loadavg)"
  summarize
}

main "$@"
