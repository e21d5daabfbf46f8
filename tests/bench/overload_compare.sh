#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Overload (docs/benchmarks.md, "Overload (adaptive concurrency)"; docs/latency-protection.md):
# what each proxy makes of a backend offered OVERLOAD times what it can serve, all measured in
# ONE run. The backend is the demo backend with `--capacity CAPACITY --service-ms SERVICE_MS`
# (16 requests at once, 10 ms each: 1,600 requests/s; the rest wait in its FIFO queue), started
# afresh for every target; each proxy runs one worker pinned on cpu 0, the load generator and
# the backend share cpu 1.
#
# usage: tests/bench/overload_compare.sh [unloaded] [adaptive] [breaker] [nginx] [haproxy]
#                                         [halving] [cost]          (default: all, in this order)
#   unloaded  the latency through sluice (breaker only) at low load: UNLOADED_CONNECTIONS
#             connections at UNLOADED_RPS requests/s in all (open loop), p50 and p99. The ratio
#             columns of the other sections divide by these (a section that needs them runs
#             `unloaded` first when it was not asked for).
#   adaptive  sluice-adaptive: the backend's "concurrency": {"enabled": true, "min": 4,
#             "max": 1000} with the breaker as usual; needs a sluice that knows the key
#   breaker   sluice-breaker: the same config without the concurrency object
#   nginx     nginx-max_conns: `server ... max_conns=CAPACITY` with a keep-alive upstream; open
#             source nginx has no upstream queue, so a request finding all busy gets 502 at once
#   haproxy   haproxy-maxconn: `server ... maxconn CAPACITY`, the excess waits in haproxy's
#             backend queue; `timeout queue` HAPROXY_QUEUE_TIMEOUT_MS (1 s: far above the
#             longest wait this load can make, CONNECTIONS / capacity = 80 ms, so nothing is
#             refused for waiting; it only bounds a run gone wrong), past which haproxy answers 503
#   halving   sluice-adaptive under the same load, the backend's capacity halved at the middle
#             of the measurement (POST /control?capacity=CAPACITY/2): 2xx/s and their p99 in
#             1-second slices around the change, and sluice's
#             sluice_backend_concurrency_limit{backend="demo"} scraped every second
#   cost      what the concurrency object costs when nothing is overloaded: against the demo
#             backend with no capacity limit, closed-loop wrk keep-alive (COST_CONNECTIONS
#             connections), ROUNDS interleaved rounds of sluice-limit-off (no concurrency
#             object), sluice-limit-on (sluice-adaptive's) and sluice-limit-fixed (min = max =
#             1000: the bookkeeping of a limit that never refuses); median 2xx/s and req/s of
#             each and their ratios to sluice-limit-off. A closed loop saturates the backend's
#             CPU and so raises its latency, which an adaptive limit may read as a queue: its
#             refusals are shown
#
# Load of the overload sections (adaptive, breaker, nginx, haproxy, halving): OPEN loop, so that
# answers refused at once do not turn into a flood. h2load -p http/1.1 --rps (OVERLOAD x
# capacity / CONNECTIONS per connection) for WARMUP (not measured) then DURATION, with its
# per-request log (start, status, µs to the end of the response); the CONNECTIONS connections
# are spread over H2LOAD_PROCESSES h2load processes started a fraction of the request period
# apart, because one process sends on all its connections at the same instant (h2load_run).
# h2load sends at most one request at a time per connection: a request that comes due while its
# connection still waits holds until that answer, so a proxy that queues sees at most
# CONNECTIONS in flight and is sent less than offered (the `sent/s` column shows what was sent).
# Per target: sent/s; goodput (2xx/s, and as % of the nominal capacity); rejected/s (503 and 502
# answers); other answers and failed requests; p50 and p99 of the ADMITTED (2xx) requests; p99
# over the unloaded p99 and over the unloaded p50; the proxy's CPU as % of one core.
#
# Environment (defaults in brackets):
#   DURATION [60] (s, measured per overload target and halving)  WARMUP [5] (s, unmeasured)
#   ROUNDS [5] (cost)  CAPACITY [16]  SERVICE_MS [10]  OVERLOAD [3]  CONNECTIONS [128]
#   UNLOADED_CONNECTIONS [4]  UNLOADED_RPS [200]  UNLOADED_DURATION [DURATION]
#   COST_CONNECTIONS [64]  COST_DURATION [10] (s)  COST_SERVICE_MS [1]  HAPROXY_QUEUE_TIMEOUT_MS [1000]
#   H2LOAD_PROCESSES [16] (the load's connections spread over this many h2load processes)
#   LOAD_NICE [10] (the h2load processes' niceness: the single-threaded backend shares their
#             cpu, and sixteen busy load processes at equal priority starved it, so that requests
#             waited in its socket buffers, uncounted by its capacity, and goodput fell)
#   SLUICE_BIN [build/bin/sluice]  DEMO_BIN [build/bin/sluice-demo-backend]
#   OUT_DIR [build/bench/overload]
# Results: OUT_DIR/results.tsv (section, target, metric, value), OUT_DIR/halving.tsv (one line
# per second around the change) and OUT_DIR/summary.md; logs, configs, h2load's and wrk's
# outputs in OUT_DIR/work/. Exit status 1 when a section could not run (it says why).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
readonly PEERS_DIR=$ROOT/tests/bench/peers
readonly DURATION=${DURATION:-60} WARMUP=${WARMUP:-5} ROUNDS=${ROUNDS:-5}
readonly CAPACITY=${CAPACITY:-16} SERVICE_MS=${SERVICE_MS:-10} OVERLOAD=${OVERLOAD:-3}
readonly CONNECTIONS=${CONNECTIONS:-128}
readonly UNLOADED_CONNECTIONS=${UNLOADED_CONNECTIONS:-4} UNLOADED_RPS=${UNLOADED_RPS:-200}
readonly UNLOADED_DURATION=${UNLOADED_DURATION:-$DURATION}
readonly COST_CONNECTIONS=${COST_CONNECTIONS:-64} COST_DURATION=${COST_DURATION:-10} COST_SERVICE_MS=${COST_SERVICE_MS:-1}
readonly H2LOAD_PROCESSES=${H2LOAD_PROCESSES:-16}
readonly LOAD_NICE=${LOAD_NICE:-10}
readonly HAPROXY_QUEUE_TIMEOUT_MS=${HAPROXY_QUEUE_TIMEOUT_MS:-1000}
readonly SLUICE_SOURCE=${SLUICE_BIN:-$ROOT/build/bin/sluice}
readonly DEMO_SOURCE=${DEMO_BIN:-$ROOT/build/bin/sluice-demo-backend}
readonly OUT_DIR=${OUT_DIR:-$ROOT/build/bench/overload}
readonly WORK=$OUT_DIR/work
readonly REQ_PATH=/ok
# The backend's nominal capacity (requests/s) and the offered load, in all and per connection.
readonly CAPACITY_RPS=$((CAPACITY * 1000 / SERVICE_MS))
readonly OFFERED_RPS=$((OVERLOAD * CAPACITY_RPS))
PER_CONNECTION_RPS=$(awk -v r="$OFFERED_RPS" -v c="$CONNECTIONS" 'BEGIN { printf "%.3f", r / c }')
readonly PER_CONNECTION_RPS
# The backend's concurrency object of sluice-adaptive (and sluice-limit-on in `cost`), and of
# sluice-limit-fixed: a limit that can neither refuse COST_CONNECTIONS nor move.
readonly ADAPTIVE='{"enabled": true, "min": 4, "max": 1000}'
readonly FIXED='{"enabled": true, "min": 1000, "max": 1000}'
export PATH=$PATH:/usr/sbin:/sbin

# shellcheck disable=SC2034 # read by bench_lib.sh
BENCH_TAG=overload
# shellcheck source=tests/bench/bench_lib.sh
source "$ROOT/tests/bench/bench_lib.sh"

SLUICE=$WORK/bin/sluice # snapshots (snapshot_binaries)
DEMO=$WORK/bin/sluice-demo-backend
FAILED_SECTIONS=()

# ---------------------------------------------------------------------------------------------
# Setup.

check_setup() {
  local tool
  for tool in h2load wrk nginx haproxy curl taskset python3 getconf; do
    command -v "$tool" >/dev/null ||
      die "$tool is missing (apt-get install nghttp2-client wrk nginx haproxy curl util-linux)"
  done
  for tool in "$SLUICE_SOURCE" "$DEMO_SOURCE"; do
    [[ -x $tool ]] || die "$tool is missing: build it, or point SLUICE_BIN / DEMO_BIN at one"
  done
  grep -q -- --capacity <<<"$("$DEMO_SOURCE" --help)" ||
    die "$DEMO_SOURCE has no --capacity: build the demo backend of this tree"
  local n
  for n in DURATION WARMUP ROUNDS CAPACITY SERVICE_MS OVERLOAD CONNECTIONS UNLOADED_CONNECTIONS \
    UNLOADED_RPS UNLOADED_DURATION COST_CONNECTIONS COST_DURATION HAPROXY_QUEUE_TIMEOUT_MS \
    H2LOAD_PROCESSES; do
    [[ ${!n} =~ ^[1-9][0-9]*$ ]] || die "$n must be a positive whole number, got '${!n}'"
  done
  ((CAPACITY >= 2)) || die "CAPACITY must be at least 2 (halving halves it)"
}

# snapshot_binaries: copies the binaries into WORK, so a rebuild during the run cannot swap them
# between two start-ups.
snapshot_binaries() {
  mkdir -p "$WORK/bin"
  cp "$SLUICE_SOURCE" "$SLUICE"
  cp "$DEMO_SOURCE" "$DEMO"
}

PROXY_CPU="" OTHER_CPU=""
choose_pinning() {
  if pinning_available; then
    PROXY_CPU=0 OTHER_CPU=1
  else
    warn "cannot pin to cpus 0 and 1 ($(nproc) usable): nothing is pinned"
  fi
}

result() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$OUT_DIR/results.tsv"; }

# fail_section SECTION REASON: the section cannot run; said now, in the summary and the exit code.
fail_section() {
  warn "$1: $2"
  FAILED_SECTIONS+=("$1")
  printf '### %s: not run\n\n%s\n\n' "$1" "$2" >>"$OUT_DIR/summary.md"
}

# ---------------------------------------------------------------------------------------------
# Servers. Each start_* sets TARGET_PORT and TARGET_PID (the process whose CPU is measured), and
# ADMIN_PORT for sluice; or returns 1 after saying why.

TARGET_PORT='' TARGET_PID='' ADMIN_PORT='' BACKEND_PORT=''

# start_backend [CAPACITY]: the demo backend on OTHER_CPU, with that capacity (default
# CAPACITY; 0 = unlimited) and SERVICE_MS (none when unlimited).
start_backend() {
  local capacity=${1:-$CAPACITY} service=${2:-$SERVICE_MS}
  ((capacity > 0)) || service=${2:-0}
  pin_cmd "$OTHER_CPU"
  spawn backend "${PIN[@]}" "$DEMO" --address 127.0.0.1 --port 0 --threads 1 \
    --capacity "$capacity" --service-ms "$service"
  wait_for_line backend "$SPAWNED_PID" '^listening ' || die "the demo backend did not start"
  BACKEND_PORT=${READY_LINE##*:}
  log "backend: capacity $capacity, service $service ms, port $BACKEND_PORT"
}

# sluice_config NAME [CONCURRENCY]: writes LOGDIR/NAME.json, the backend with that concurrency
# object (none without); fails with sluice's reasons when this build rejects it (a build
# without the concurrency object, for one).
sluice_config() {
  local name=$1 extra=""
  [[ -z ${2:-} ]] || extra=", \"concurrency\": $2"
  render "$PEERS_DIR/sluice-overload.json.in" "$LOGDIR/$name.json" \
    "BACKEND_PORT=$BACKEND_PORT" "CONCURRENCY=$extra"
  "$SLUICE" --check --config "$LOGDIR/$name.json" >"$LOGDIR/$name.check.log" 2>&1
}

START_FAILURE= # why the last start_* failed

# start_sluice NAME [CONCURRENCY]
start_sluice() {
  local name=$1 concurrency=${2:-}
  START_FAILURE="$name did not start (configs and logs in $LOGDIR)"
  sluice_config "$name" "$concurrency" || {
    START_FAILURE="$SLUICE_SOURCE rejects $LOGDIR/$name.json ($(head -n 2 "$LOGDIR/$name.check.log" | tr '\n' ' '))"
    if [[ -n $concurrency ]]; then
      START_FAILURE+=": the backend's \"concurrency\" object needs a sluice built with adaptive concurrency (docs/latency-protection.md); point SLUICE_BIN at one"
    fi
    return 1
  }
  pin_cmd "$PROXY_CPU"
  spawn "$name" "${PIN[@]}" "$SLUICE" --config "$LOGDIR/$name.json"
  wait_for_line "$name" "$SPAWNED_PID" 'ready proxy=' || return 1
  TARGET_PID=$SPAWNED_PID
  TARGET_PORT=$(sed -E 's/.*ready proxy=[^ ]*:([0-9]+).*/\1/' <<<"$READY_LINE")
  ADMIN_PORT=$(sed -nE 's/.* admin=[^ ]*:([0-9]+).*/\1/p' <<<"$READY_LINE")
  wait_for_http "$name" "$TARGET_PID" "$TARGET_PORT" || return 1
  if [[ -n $concurrency ]] && ! curl -fsS "http://127.0.0.1:$ADMIN_PORT/admin/backends" | grep -q concurrency; then
    warn "$name: GET /admin/backends shows no concurrency state: is the limit in this build?"
  fi
}

# nginx_user_directive is bench_lib's; the config keeps the workers as this user under root.
start_nginx() {
  local dir=$LOGDIR/nginx
  START_FAILURE="nginx did not start (config and logs in $dir)"
  mkdir -p "$dir"
  TARGET_PORT=$(free_port)
  render "$PEERS_DIR/nginx-max-conns.conf.in" "$dir/nginx.conf" "DIR=$dir" \
    "PORT=$TARGET_PORT" "BACKEND_PORT=$BACKEND_PORT" "CAPACITY=$CAPACITY" \
    "USER_DIRECTIVE=$(nginx_user_directive)"
  nginx -t -q -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" >"$LOGDIR/nginx.check.log" 2>&1 || {
    warn "nginx rejects $dir/nginx.conf: $(cat "$LOGDIR/nginx.check.log")"
    return 1
  }
  pin_cmd "$PROXY_CPU"
  spawn nginx "${PIN[@]}" nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
  TARGET_PID=$SPAWNED_PID # the master: cpu_ticks adds its worker
  wait_for_http nginx "$TARGET_PID" "$TARGET_PORT"
}

start_haproxy() {
  local config=$LOGDIR/haproxy.cfg
  START_FAILURE="haproxy did not start (config and logs in $LOGDIR)"
  TARGET_PORT=$(free_port)
  render "$PEERS_DIR/haproxy-maxconn.cfg.in" "$config" "PORT=$TARGET_PORT" \
    "BACKEND_PORT=$BACKEND_PORT" "CAPACITY=$CAPACITY" \
    "QUEUE_TIMEOUT_MS=$HAPROXY_QUEUE_TIMEOUT_MS"
  haproxy -c -q -f "$config" >"$LOGDIR/haproxy.check.log" 2>&1 || {
    warn "haproxy rejects $config: $(cat "$LOGDIR/haproxy.check.log")"
    return 1
  }
  pin_cmd "$PROXY_CPU"
  spawn haproxy "${PIN[@]}" haproxy -db -f "$config"
  TARGET_PID=$SPAWNED_PID
  wait_for_http haproxy "$TARGET_PID" "$TARGET_PORT"
}

# start_target NAME: one of the proxies of the overload sections.
start_target() {
  case $1 in
    sluice-adaptive) start_sluice "$1" "$ADAPTIVE" ;;
    sluice-breaker) start_sluice "$1" ;;
    nginx-max_conns) start_nginx ;;
    haproxy-maxconn) start_haproxy ;;
  esac
}

# ---------------------------------------------------------------------------------------------
# Load and its figures.

# h2load_run NAME CONNECTIONS RPS_PER_CONNECTION SECONDS: open-loop load on TARGET_PORT from
# OTHER_CPU, WARMUP unmeasured seconds first; per-request log in LOGDIR/NAME.h2load.tsv.
# One h2load process sends on all its connections in the same instant, once per 1/RPS (its
# connections' timers start together): 128 connections at 37.5/s each are a pulse of 128
# requests every 26.7 ms, not 4,800 requests a second, and a limit of about the capacity
# refuses most of each pulse and then idles until the next. So the connections are spread over
# H2LOAD_PROCESSES processes started a fraction of that period apart.
h2load_run() {
  local name=$1 connections=$2 rps=$3 seconds=$4 procs i n gap pids=() rc=0
  procs=$((connections < H2LOAD_PROCESSES ? connections : H2LOAD_PROCESSES))
  gap=$(awk -v r="$rps" -v p="$procs" 'BEGIN { printf "%.4f", 1 / r / p }')
  pin_cmd "$OTHER_CPU"
  for ((i = 0; i < procs; i++)); do
    n=$((connections / procs + (i < connections % procs ? 1 : 0)))
    "${PIN[@]}" nice -n "$LOAD_NICE" h2load -p http/1.1 -t 1 -c "$n" --rps "$rps" --warm-up-time "$WARMUP" \
      -D "$seconds" --log-file="$LOGDIR/$name.h2load.$i.tsv" \
      "http://127.0.0.1:$TARGET_PORT$REQ_PATH" >"$LOGDIR/$name.h2load.$i.txt" 2>&1 &
    pids+=("$!")
    sleep "$gap"
  done
  for i in "${pids[@]}"; do wait "$i" || rc=$?; done
  ((rc == 0)) || warn "an h2load exited non-zero (see $LOGDIR/$name.h2load.*.txt)"
  cat "$LOGDIR/$name.h2load."*.tsv >"$LOGDIR/$name.h2load.tsv"
}

# log_stats LOG SECONDS: "sent/s 2xx/s rejected/s others p50_ms p99_ms" of an h2load
# per-request log (columns: start µs, status, µs to the end of the response; status -1: failed).
# Percentiles by nearest rank over the 2xx.
log_stats() {
  local log=$1 seconds=$2 counts pcts
  counts=$(awk -F'\t' -v s="$seconds" '
    { n++ } $2 >= 200 && $2 < 300 { ok++ } $2 == 502 || $2 == 503 { rej++ }
    END { printf "%.1f %.1f %.1f %d", n / s, ok / s, rej / s, n - ok - rej }' "$log")
  pcts=$(awk -F'\t' '$2 >= 200 && $2 < 300 { print $3 }' "$log" | sort -n | percentiles)
  echo "$counts $pcts"
}

# percentiles: "p50_ms p99_ms" of the µs values on stdin, sorted (nearest rank); "nan nan" if
# none.
percentiles() {
  awk 'function rank(p,  i) { i = int(p * NR); if (i < p * NR) i++; return v[i < 1 ? 1 : i] }
       { v[NR] = $1 }
       END { if (NR == 0) print "nan nan"; else printf "%.2f %.2f\n", rank(0.50) / 1000, rank(0.99) / 1000 }'
}

UNLOADED_P50="" UNLOADED_P99=""

# unloaded_section: sluice-breaker at low load; sets UNLOADED_P50 and UNLOADED_P99 (ms).
unloaded_section() {
  enter_phase unloaded
  start_backend
  start_sluice sluice-breaker || die "$START_FAILURE"
  local per_connection sent ok rej other p50 p99
  per_connection=$(awk -v r="$UNLOADED_RPS" -v c="$UNLOADED_CONNECTIONS" 'BEGIN { printf "%.3f", r / c }')
  log "unloaded: $UNLOADED_CONNECTIONS connections, $UNLOADED_RPS requests/s, ${UNLOADED_DURATION}s"
  h2load_run unloaded "$UNLOADED_CONNECTIONS" "$per_connection" "$UNLOADED_DURATION"
  read -r sent ok rej other p50 p99 < <(log_stats "$LOGDIR/unloaded.h2load.tsv" "$UNLOADED_DURATION")
  stop_all
  [[ $p99 != nan ]] || die "the unloaded run got no 2xx (see $LOGDIR/unloaded.h2load.*.txt)"
  UNLOADED_P50=$p50 UNLOADED_P99=$p99
  result unloaded sluice-breaker p50_ms "$p50"
  result unloaded sluice-breaker p99_ms "$p99"
  log "unloaded: p50 $p50 ms, p99 $p99 ms ($ok 2xx/s of $sent sent/s, $rej rejected/s, $other others)"
  {
    echo "### unloaded: sluice-breaker, $UNLOADED_CONNECTIONS connections, $UNLOADED_RPS requests/s (open loop), ${UNLOADED_DURATION}s"
    echo
    echo "| target | sent/s | 2xx/s | p50 ms | p99 ms |"
    echo "| --- | ---: | ---: | ---: | ---: |"
    echo "| sluice-breaker | $sent | $ok | $p50 | $p99 |"
    echo
  } >>"$OUT_DIR/summary.md"
}

ensure_unloaded() { [[ -n $UNLOADED_P99 ]] || unloaded_section; }

OVERLOAD_ROWS=()

# overload_section SECTION TARGET: the target under OVERLOAD x capacity for DURATION.
overload_section() {
  local section=$1 target=$2 c0 c1 sent ok rej other p50 p99 cpu extra=""
  ensure_unloaded
  enter_phase "$target"
  start_backend
  start_target "$target" || {
    stop_all
    fail_section "$section" "$START_FAILURE"
    return 0
  }
  log "$target: $OFFERED_RPS requests/s offered from $CONNECTIONS connections, ${WARMUP}s + ${DURATION}s"
  c0=$(cpu_ticks "$TARGET_PID")
  h2load_run "$target" "$CONNECTIONS" "$PER_CONNECTION_RPS" "$DURATION"
  c1=$(cpu_ticks "$TARGET_PID")
  [[ $target != sluice-* ]] || extra=$(sluice_notes)
  is_alive "$TARGET_PID" || extra+=" DIED during the run (see $LOGDIR)"
  stop_all
  read -r sent ok rej other p50 p99 < <(log_stats "$LOGDIR/$target.h2load.tsv" "$DURATION")
  # CPU over warm-up and measurement alike, as % of one core.
  cpu=$(awk -v t=$((c1 - c0)) -v hz="$CLK_TCK" -v s=$((WARMUP + DURATION)) \
    'BEGIN { printf "%.0f", t / hz / s * 100 }')
  local row
  row=$(awk -v t="$target" -v sent="$sent" -v ok="$ok" -v rej="$rej" -v other="$other" \
    -v p50="$p50" -v p99="$p99" -v u50="$UNLOADED_P50" -v u99="$UNLOADED_P99" \
    -v cap="$CAPACITY_RPS" -v cpu="$cpu" -v extra="$extra" 'BEGIN {
      r99 = (p99 == "nan") ? "nan" : sprintf("%.1fx", p99 / u99)
      r50 = (p99 == "nan") ? "nan" : sprintf("%.1fx", p99 / u50)
      printf "| %s | %s | %s | %.0f%% | %s | %s | %s | %s | %s | %s | %s%% | %s |", t, sent, ok,
        ok / cap * 100, rej, other, p50, p99, r99, r50, cpu, extra }')
  OVERLOAD_ROWS+=("$row")
  for metric in sent ok rej other p50 p99 cpu; do
    result "$section" "$target" "$metric" "${!metric}"
  done
  log "$target: ${ok} 2xx/s of ${sent} sent/s, ${rej} rejected/s, p50 ${p50} ms, p99 ${p99} ms, cpu ${cpu}%${extra:+, $extra}"
}

# sluice_metric NAME [TEXT]: the value of NAME{backend="demo"} in TEXT (default: a scrape of
# ADMIN_PORT's /metrics), or "n/a" when the series (or the scrape) is missing.
sluice_metric() {
  local text=${2:-}
  if [[ -z $text ]]; then
    text=$(curl -fsS --max-time 1 "http://127.0.0.1:$ADMIN_PORT/metrics" 2>/dev/null) || {
      echo n/a
      return 0
    }
  fi
  awk -v name="$1" 'index($0, name "{") == 1 && /backend="demo"/ { v = $NF }
       END { print v == "" ? "n/a" : v }' <<<"$text"
}

concurrency_limit() { sluice_metric sluice_backend_concurrency_limit; }

# sluice_notes: what sluice says of the run (warm-up included): its concurrency limit now, the
# requests the limit refused and those the breaker dropped. Its /metrics goes to LOGDIR.
sluice_notes() {
  local text
  text=$(curl -fsS --max-time 2 "http://127.0.0.1:$ADMIN_PORT/metrics" 2>/dev/null) || {
    echo "no /metrics"
    return 0
  }
  printf '%s\n' "$text" >"$LOGDIR/metrics.txt"
  printf 'limit %s, limit refusals %s, breaker drops %s' \
    "$(sluice_metric sluice_backend_concurrency_limit "$text")" \
    "$(sluice_metric sluice_concurrency_rejections_total "$text")" \
    "$(sluice_metric sluice_breaker_drops_total "$text")"
}

# summarize_overload: the table of the overload targets measured since the last one.
summarize_overload() {
  ((${#OVERLOAD_ROWS[@]} > 0)) || return 0
  {
    echo "### overload: $OFFERED_RPS requests/s offered (${OVERLOAD}x the capacity of $CAPACITY_RPS/s), $CONNECTIONS connections, ${DURATION}s each"
    echo
    echo "Unloaded: p50 $UNLOADED_P50 ms, p99 $UNLOADED_P99 ms. Latencies are of the 2xx answers only."
    echo
    echo "| target | sent/s | goodput 2xx/s | of capacity | rejected/s | others | p50 ms | p99 ms | p99 / unloaded p99 | p99 / unloaded p50 | proxy CPU | notes |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    printf '%s\n' "${OVERLOAD_ROWS[@]}"
    echo
  } >>"$OUT_DIR/summary.md"
  OVERLOAD_ROWS=()
}

# sample_limit OUT: every second until stopped, "epoch_µs limit in_flight in_service queued":
# sluice's concurrency limit and requests in flight to the backend, and what the backend's
# /control says it serves and holds in its queue.
sample_limit() {
  local text load
  while true; do
    text=$(curl -fsS --max-time 1 "http://127.0.0.1:$ADMIN_PORT/metrics" 2>/dev/null) || text=
    load=$(curl -fsS --max-time 1 "http://127.0.0.1:$BACKEND_PORT/control" 2>/dev/null |
      python3 -c 'import json, sys; d = json.load(sys.stdin); print(d.get("in_service", "n/a"), d.get("queued", "n/a"))' 2>/dev/null) || load=
    printf '%s %s %s %s\n' "$(date +%s%6N)" \
      "$(sluice_metric sluice_backend_concurrency_limit "${text:-none}")" \
      "$(sluice_metric sluice_backend_inflight "${text:-none}")" "${load:-n/a n/a}" >>"$1"
    sleep 1
  done
}

# halving_section: sluice-adaptive under the overload; the backend's capacity halves at the
# middle of the measurement.
halving_section() {
  local target=sluice-adaptive half=$((CAPACITY / 2)) changed_us sampler
  ensure_unloaded
  enter_phase halving
  start_backend
  start_sluice "$target" "$ADAPTIVE" || {
    stop_all
    fail_section halving "$START_FAILURE"
    return 0
  }
  spawn limit-sampler sample_limit "$LOGDIR/limit.txt"
  sampler=$SPAWNED_PID
  log "halving: $OFFERED_RPS requests/s, ${WARMUP}s + ${DURATION}s; capacity $CAPACITY -> $half after $((DURATION / 2))s"
  h2load_run halving "$CONNECTIONS" "$PER_CONNECTION_RPS" "$DURATION" &
  local load=$!
  sleep $((WARMUP + DURATION / 2))
  changed_us=$(date +%s%6N)
  curl -fsS -X POST "http://127.0.0.1:$BACKEND_PORT/control?capacity=$half" >"$LOGDIR/control.json" ||
    warn "POST /control?capacity=$half failed"
  wait "$load" || true
  stop_pid "$sampler"
  stop_all
  halving_table "$changed_us" "$half"
}

# halving_table CHANGED_US HALF: 1-second slices of the 2xx by the end of their response,
# relative to the change, with the limit sampled in each.
halving_table() {
  local changed_us=$1 half=$2 threshold
  threshold=$(awk -v u="$UNLOADED_P99" 'BEGIN { printf "%.2f", 2 * u }')
  awk -F'\t' -v c="$changed_us" '$2 >= 200 && $2 < 300 {
      end = $1 + $3; s = (end >= c) ? int((end - c) / 1e6) : -int((c - end) / 1e6) - 1
      print s "\t" $3 }' "$LOGDIR/halving.h2load.tsv" | sort -k1,1n -k2,2n >"$LOGDIR/slices.tsv"
  awk -v c="$changed_us" '$2 != "n/a" { s = ($1 >= c) ? int(($1 - c) / 1e6) : -int((c - $1) / 1e6) - 1
      print s "\t" $2 "\t" $3 "\t" $4 "\t" $5 }' "$LOGDIR/limit.txt" 2>/dev/null >"$LOGDIR/limit-slices.tsv" || true
  # Refusals (503) by the second their answer came, for the table's last column.
  awk -F'\t' -v c="$changed_us" '$2 == 503 {
      end = $1 + $3; s = (end >= c) ? int((end - c) / 1e6) : -int((c - end) / 1e6) - 1
      n[s]++ } END { for (s in n) print s "\t" n[s] }' "$LOGDIR/halving.h2load.tsv" >"$LOGDIR/refused-slices.tsv"
  awk -F'\t' -v thr="$threshold" -v from=-5 '
    FILENAME ~ /limit-slices/ { limit[$1] = $2 "\t" $3 "\t" $4 "\t" $5; next }
    FILENAME ~ /refused-slices/ { refused[$1] = $2; next }
    { n[$1]++; v[$1, n[$1]] = $2; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
    END {
      for (i = 1; i <= k; i++) {
        s = order[i]; if (s < from) continue
        r = int(0.99 * n[s]); if (r < 0.99 * n[s]) r++; if (r < 1) r = 1
        p99 = v[s, r] / 1000
        printf "%d\t%d\t%.2f\t%s\t%d\n", s, n[s], p99,
          (s in limit) ? limit[s] : "n/a\tn/a\tn/a\tn/a", refused[s]
      }
    }' "$LOGDIR/limit-slices.tsv" "$LOGDIR/refused-slices.tsv" "$LOGDIR/slices.tsv" >"$OUT_DIR/halving.tsv"
  local first settled
  # The first second after the change with p99 under the threshold, and the second from which
  # every later one stays under it (the last slice, cut short by the end of the run, excluded).
  read -r first settled < <(awk -F'\t' -v thr="$threshold" '
    $1 >= 0 { s[++n] = $1; p[n] = $3 }
    END {
      first = "never"; settled = "never"
      for (i = 1; i < n; i++) if (p[i] < thr) { first = s[i]; break }
      for (i = n - 1; i >= 1 && p[i] < thr; i--) settled = s[i]
      print first, settled }' "$OUT_DIR/halving.tsv")
  result halving sluice-adaptive first_second_under_2x_unloaded_p99 "$first"
  result halving sluice-adaptive settled_second_under_2x_unloaded_p99 "$settled"
  {
    echo "### halving: sluice-adaptive, $OFFERED_RPS requests/s, capacity $CAPACITY -> $half (POST /control) after $((DURATION / 2))s of ${DURATION}s"
    echo
    echo "Second 0 is the first second after the change; 2xx counted by the end of their response."
    echo "2x unloaded p99 = $threshold ms: p99 first under it in second $first, under it for good from second $settled."
    echo
    echo "Sampled once a second: sluice's limit and requests in flight to the backend, the backend's"
    echo "requests in service and in its queue (its /control)."
    echo
    echo "| second | 2xx/s | p99 ms | concurrency limit | in flight | backend in service | backend queued | 503/s |"
    echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8 }' "$OUT_DIR/halving.tsv"
    echo
  } >>"$OUT_DIR/summary.md"
  log "halving: p99 under 2x unloaded ($threshold ms) first in second $first, for good from $settled (table: $OUT_DIR/halving.tsv)"
}

# cost_section: sluice with and without the concurrency object, closed-loop wrk against an
# unlimited demo backend, ROUNDS interleaved rounds. A limit that refuses requests (its 503s
# are cheap) would make req/s say nothing about the cost: the ratio is taken over 2xx/s, and
# the refusals are shown.
cost_section() {
  enter_phase cost
  # A healthy backend: no capacity, every answer after COST_SERVICE_MS whatever the load, so
  # its latency does not grow with the 64 connections (a backend that answers at once, on the
  # load generator's cpu, queues on that cpu, and an adaptive limit rightly sees the queue).
  start_backend 0 "$COST_SERVICE_MS"
  local -A port=()
  local t round out rps ok p99 requests non2xx sock
  local targets=(sluice-limit-off sluice-limit-on sluice-limit-fixed)
  local -A concurrency=([sluice-limit-off]="" [sluice-limit-on]=$ADAPTIVE [sluice-limit-fixed]=$FIXED)
  for t in "${targets[@]}"; do
    start_sluice "$t" "${concurrency[$t]}" || {
      stop_all
      fail_section cost "$START_FAILURE"
      return 0
    }
    port[$t]=$TARGET_PORT
  done
  pin_cmd "$OTHER_CPU"
  for t in "${targets[@]}"; do
    "${PIN[@]}" wrk -t1 -c"$COST_CONNECTIONS" -d2s "http://127.0.0.1:${port[$t]}$REQ_PATH" \
      >"$LOGDIR/warmup-$t.txt" 2>&1 || true
  done
  for ((round = 1; round <= ROUNDS; round++)); do
    for t in "${targets[@]}"; do
      out=$LOGDIR/wrk-$t-$round.txt
      "${PIN[@]}" wrk -t1 -c"$COST_CONNECTIONS" -d"${COST_DURATION}s" --latency \
        "http://127.0.0.1:${port[$t]}$REQ_PATH" >"$out" 2>&1 || warn "wrk failed (see $out)"
      read -r rps _ p99 requests non2xx sock < <(awk -f "$ROOT/tests/bench/wrk_parse.awk" "$out")
      ok=$(awk -v r="$rps" -v n="$requests" -v bad="$non2xx" \
        'BEGIN { printf "%.2f", (n > 0 ? r * (n - bad) / n : 0) }')
      result cost "$t" "rps.$round" "$rps"
      result cost "$t" "ok_rps.$round" "$ok"
      result cost "$t" "non2xx.$round" "$non2xx"
      log "cost: round $round $t $rps req/s ($ok 2xx/s), p99 $p99 µs, non-2xx $non2xx," \
        "socket errors $sock"
    done
  done
  stop_all
  cost_table "${targets[@]}"
}

# cost_value TARGET METRIC: the median over the rounds of METRIC (rps, ok_rps) or, for
# non2xx, the sum.
cost_value() {
  local values
  values=$(awk -F'\t' -v t="$1" -v m="$2" '$1 == "cost" && $2 == t && index($3, m ".") == 1 { print $4 }' \
    "$OUT_DIR/results.tsv")
  if [[ $2 == non2xx ]]; then
    awk '{ n += $1 } END { print n + 0 }' <<<"$values"
  else
    median <<<"$values"
  fi
}

# cost_ratio A B METRIC: A's median METRIC over B's.
cost_ratio() {
  awk -v a="$(cost_value "$1" "$3")" -v b="$(cost_value "$2" "$3")" 'BEGIN { printf "%.3f", a / b }'
}

cost_table() {
  local off=$1 on=$2 fixed=$3 t ratio ratio_all ratio_fixed
  ratio=$(cost_ratio "$on" "$off" ok_rps)
  ratio_all=$(cost_ratio "$on" "$off" rps)
  ratio_fixed=$(cost_ratio "$fixed" "$off" ok_rps)
  result cost ratio ok_rps_on_over_off "$ratio"
  result cost ratio rps_on_over_off "$ratio_all"
  result cost ratio ok_rps_fixed_over_off "$ratio_fixed"
  {
    echo "### cost: the concurrency object when nothing is overloaded (wrk -t1 -c$COST_CONNECTIONS, ${COST_DURATION}s, medians of $ROUNDS interleaved rounds, demo backend without a capacity, answering after ${COST_SERVICE_MS} ms)"
    echo
    echo "| target | 2xx/s (median) | req/s (median) | non-2xx (all rounds) | 2xx/s of each round |"
    echo "| --- | ---: | ---: | ---: | --- |"
    for t in "$off" "$on" "$fixed"; do
      printf '| %s | %s | %s | %s | %s |\n' "$t" "$(cost_value "$t" ok_rps)" "$(cost_value "$t" rps)" \
        "$(cost_value "$t" non2xx)" \
        "$(awk -F'\t' -v t="$t" '$1 == "cost" && $2 == t && $3 ~ /^ok_rps\./ { printf "%s ", $4 }' "$OUT_DIR/results.tsv")"
    done
    echo
    echo "$on / $off: ${ratio}x in 2xx/s (target: at least 0.99x), ${ratio_all}x in req/s."
    echo "$fixed / $off: ${ratio_fixed}x in 2xx/s (the bookkeeping alone: a limit of 1000 never refuses $COST_CONNECTIONS connections)."
    if [[ $(cost_value "$on" non2xx) != 0 ]]; then
      echo "$on refused requests: under this closed loop the backend's latency rose and the limit"
      echo "shrank, so its ratio measures refusals as well as the cost of the limit."
    fi
    echo
  } >>"$OUT_DIR/summary.md"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# ---------------------------------------------------------------------------------------------

main() {
  local sections=("$@") s
  ((${#sections[@]} > 0)) || sections=(unloaded adaptive breaker nginx haproxy halving cost)
  for s in "${sections[@]}"; do
    [[ $s =~ ^(unloaded|adaptive|breaker|nginx|haproxy|halving|cost)$ ]] ||
      die "unknown section '$s' (unloaded adaptive breaker nginx haproxy halving cost)"
  done
  check_setup
  mkdir -p "$OUT_DIR"
  if [[ -d $WORK && ! -e $WORK/.overload_compare ]] && [[ -n $(ls -A "$WORK") ]]; then
    die "$WORK exists and was not made by this script: refusing to clear it"
  fi
  rm -rf "$WORK"
  mkdir -p "$WORK"
  touch "$WORK/.overload_compare"
  rm -f "$OUT_DIR"/{results.tsv,halving.tsv,summary.md}
  printf 'section\ttarget\tmetric\tvalue\n' >"$OUT_DIR/results.tsv"
  snapshot_binaries
  choose_pinning
  {
    echo "## Overload comparison, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "sluice $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo '+uncommitted changes'), $(nginx -v 2>&1 | sed 's/.*: //'), haproxy $(haproxy -v 2>&1 | head -n1 | awk '{print $3}'), $(h2load --version | head -n1), $(wrk --version 2>&1 | head -n1 | cut -d' ' -f1-2); $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "Backend: sluice-demo-backend --threads 1 --capacity $CAPACITY --service-ms $SERVICE_MS ($CAPACITY_RPS requests/s); proxies with one worker${PROXY_CPU:+ on cpu $PROXY_CPU, load and backend on cpu $OTHER_CPU}."
    echo
  } >"$OUT_DIR/summary.md"
  log "load average now: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs; results need a quiet machine)"

  for s in "${sections[@]}"; do
    case $s in
      unloaded) ensure_unloaded ;;
      adaptive) overload_section adaptive sluice-adaptive ;;
      breaker) overload_section breaker sluice-breaker ;;
      nginx) overload_section nginx nginx-max_conns ;;
      haproxy) overload_section haproxy haproxy-maxconn ;;
      halving) summarize_overload && halving_section ;;
      cost) summarize_overload && cost_section ;;
    esac
  done
  summarize_overload
  echo
  cat "$OUT_DIR/summary.md"
  log "results: $OUT_DIR/summary.md, results.tsv, halving.tsv; logs in $WORK"
  if ((${#FAILED_SECTIONS[@]} > 0)); then
    die "not run: ${FAILED_SECTIONS[*]} (see above)"
  fi
}

main "$@"
