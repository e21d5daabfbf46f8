#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Endpoint failover under load (docs/benchmarks.md, "Endpoint health and retries"): sluice
# against nginx (max_fails + proxy_next_upstream) and haproxy (check + retries/redispatch/
# retry-on), each in front of the same three demo backends, measured in one run.
#
# usage: tests/bench/failover_compare.sh [kill] [flaky]     (default: both)
#   kill   wrk through each target for PHASE1 seconds, killing backend 3 one second in, then
#          PHASE2 seconds more: the client-visible errors (non-2xx and socket errors) of each
#          phase. The first phase covers detection (sluice and haproxy: health checks every
#          500 ms, 2 failures; nginx: passive, max_fails=1); the second is what "losing an
#          instance is a non-event" means: 0 errors. Backend 3 is restarted after each target.
#   flaky  backend 2 fails 10% of its requests with 503 (demo /control, deterministic spread);
#          wrk for DURATION through sluice without retries, sluice with retries (attempts 2,
#          budget 20%), nginx (proxy_next_upstream http_503, 2 tries) and haproxy (retry-on
#          503, retries 1, redispatch). Client-visible error rate, and for sluice the retries
#          sent against the requests proxied (the budget caps retries in flight at 20% of the
#          requests in flight).
#
# Environment: CONNECTIONS [32]  DURATION [10]  PHASE1 [3]  PHASE2 [10]  ROUNDS [3]
#   BIN_DIR [build/bin]  OUT_DIR [build/bench/failover]
# Results: OUT_DIR/results.tsv (section, target, round, phase, requests, errors) and
# OUT_DIR/summary.md (medians over the rounds); logs and configs in OUT_DIR/work/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
readonly CONNECTIONS=${CONNECTIONS:-32} DURATION=${DURATION:-10}
readonly PHASE1=${PHASE1:-3} PHASE2=${PHASE2:-10} ROUNDS=${ROUNDS:-3}
readonly BIN_DIR=${BIN_DIR:-$ROOT/build/bin}
readonly OUT_DIR=${OUT_DIR:-$ROOT/build/bench/failover}
readonly WORK=$OUT_DIR/work
export PATH=$PATH:/usr/sbin:/sbin

log() { printf '[failover] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

declare -a PIDS=()
declare -A BACKEND_PID=()
declare -a BACKEND_PORT=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}" "${BACKEND_PID[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_http() { # wait_http PORT [PATH]
  local i
  for ((i = 0; i < 100; i++)); do
    curl -s -o /dev/null "http://127.0.0.1:$1${2:-/ok}" && return 0
    sleep 0.1
  done
  return 1
}

start_backend() { # start_backend INDEX (on its fixed port)
  local i=$1
  "$BIN_DIR/sluice-demo-backend" --address 127.0.0.1 --port "${BACKEND_PORT[$i]}" --threads 1 \
    >"$WORK/backend$i.log" 2>&1 &
  BACKEND_PID[$i]=$!
  wait_http "${BACKEND_PORT[$i]}" || die "backend $i did not start"
}

stop_backend() {
  kill -9 "${BACKEND_PID[$1]}" 2>/dev/null || true
  wait "${BACKEND_PID[$1]}" 2>/dev/null || true # (bash reports the kill: expected)
}

faults() { curl -s -o /dev/null -X POST "http://127.0.0.1:${BACKEND_PORT[$1]}/control?$2"; }

# The target's config for the section, then the target itself (TARGET_PORT, TARGET_PIDS).
start_sluice() { # start_sluice NAME RETRY(0|1)
  local name=$1 retry='' config=$WORK/$1.json
  [[ $2 == 0 ]] || retry=', "retry": {"attempts": 2, "backoff_ms": 0, "budget_percent": 20, "min_retry_concurrency": 3}'
  cat >"$config" <<EOF
{"listen": {"address": "127.0.0.1", "port": 0},
 "admin": {"address": "127.0.0.1", "port": 0},
 "threads": 1, "access_log": {"enabled": false},
 "backends": {"demo": {
   "endpoints": ["127.0.0.1:${BACKEND_PORT[1]}", "127.0.0.1:${BACKEND_PORT[2]}", "127.0.0.1:${BACKEND_PORT[3]}"],
   "connect_timeout_ms": 250, "timeout_ms": 5000,
   "health_check": {"path": "/healthz", "interval_ms": 500, "timeout_ms": 250,
                    "healthy_threshold": 2, "unhealthy_threshold": 2},
   "outlier": {"consecutive_failures": 5, "base_ejection_ms": 10000, "max_ejection_percent": 34}$retry}},
 "routes": [{"name": "all", "prefix": "/", "backend": "demo"}]}
EOF
  "$BIN_DIR/sluice" --check --config "$config" >/dev/null || die "sluice rejects $config"
  "$BIN_DIR/sluice" --config "$config" >"$WORK/$name.log" 2>&1 &
  TARGET_PIDS=$!
  local i
  for ((i = 0; i < 100; i++)); do
    grep -q 'ready proxy=' "$WORK/$name.log" && break
    sleep 0.1
  done
  TARGET_PORT=$(sed -nE 's/.*ready proxy=[^ ]*:([0-9]+).*/\1/p' "$WORK/$name.log")
  TARGET_ADMIN=$(sed -nE 's/.* admin=[^ ]*:([0-9]+).*/\1/p' "$WORK/$name.log")
  [[ -n $TARGET_PORT ]] || die "sluice did not start: $(tail -5 "$WORK/$name.log")"
}

start_nginx() {
  local dir=$WORK/nginx user=''
  mkdir -p "$dir"
  TARGET_PORT=$(free_port)
  [[ $(id -u) -ne 0 ]] || user="user $(id -un) $(id -gn);"
  cat >"$dir/nginx.conf" <<EOF
$user
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/cb; proxy_temp_path $dir/p; fastcgi_temp_path $dir/f;
  uwsgi_temp_path $dir/u; scgi_temp_path $dir/s;
  keepalive_requests 1000000000;
  upstream demo {
    server 127.0.0.1:${BACKEND_PORT[1]} max_fails=1 fail_timeout=10s;
    server 127.0.0.1:${BACKEND_PORT[2]} max_fails=1 fail_timeout=10s;
    server 127.0.0.1:${BACKEND_PORT[3]} max_fails=1 fail_timeout=10s;
    keepalive 64;
  }
  server {
    listen 127.0.0.1:$TARGET_PORT;
    location / {
      proxy_pass http://demo;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_connect_timeout 250ms;
      proxy_next_upstream error timeout http_502 http_503 http_504;
      proxy_next_upstream_tries 2;
    }
  }
}
EOF
  nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" &
  TARGET_PIDS=$!
  wait_http "$TARGET_PORT" || die "nginx did not start"
}

start_haproxy() {
  local config=$WORK/haproxy.cfg
  TARGET_PORT=$(free_port)
  cat >"$config" <<EOF
global
    nbthread 1
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 250ms
    timeout client 60s
    timeout server 5s
    retries 1
    option redispatch 1
    retry-on conn-failure empty-response response-timeout 502 503 504
frontend proxy
    bind 127.0.0.1:$TARGET_PORT
    default_backend demo
backend demo
    option httpchk GET /healthz
    default-server check inter 500 fall 2 rise 2
    server b1 127.0.0.1:${BACKEND_PORT[1]}
    server b2 127.0.0.1:${BACKEND_PORT[2]}
    server b3 127.0.0.1:${BACKEND_PORT[3]}
EOF
  haproxy -c -q -f "$config" || die "haproxy rejects $config"
  haproxy -db -f "$config" >"$WORK/haproxy.log" 2>&1 &
  TARGET_PIDS=$!
  wait_http "$TARGET_PORT" || die "haproxy did not start"
}

start_target() {
  case $1 in
    sluice) start_sluice sluice 1 ;;
    sluice-noretry) start_sluice sluice-noretry 0 ;;
    nginx) start_nginx ;;
    haproxy) start_haproxy ;;
  esac
  sleep 1.5 # first health checks
}

stop_target() {
  kill "$TARGET_PIDS" 2>/dev/null || true
  wait "$TARGET_PIDS" 2>/dev/null || true
}

# wrk_errors SECONDS OUTFILE: runs wrk and prints "requests errors".
wrk_errors() {
  wrk -t1 -c"$CONNECTIONS" -d"${1}s" "http://127.0.0.1:$TARGET_PORT/ok" >"$2" 2>&1 || true
  awk '
    /requests in/ { requests = $1 }
    /Non-2xx or 3xx responses:/ { errors += $NF }
    /Socket errors:/ { gsub(",", ""); errors += $4 + $6 + $8 + $10 }
    END { printf "%d %d\n", requests, errors }' "$2"
}

record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$OUT_DIR/results.tsv"; }

sluice_retries() { # prints "attempted budget_exhausted upstream_requests" from the admin port
  curl -s "http://127.0.0.1:$TARGET_ADMIN/metrics" | awk '
    /^sluice_retries_total.*result="attempted"/ { a = $NF }
    /^sluice_retries_total.*result="budget_exhausted"/ { b = $NF }
    /^sluice_upstream_requests_total/ { u += $NF }
    END { printf "%d %d %d\n", a, b, u }'
}

kill_section() {
  local target round
  for round in $(seq 1 "$ROUNDS"); do
    for target in sluice nginx haproxy; do
      start_target "$target"
      (
        sleep 1
        stop_backend 3
      ) &
      local killer=$!
      read -r req1 err1 < <(wrk_errors "$PHASE1" "$WORK/kill-$target-$round-1.txt")
      wait "$killer" || true
      read -r req2 err2 < <(wrk_errors "$PHASE2" "$WORK/kill-$target-$round-2.txt")
      record kill "$target" "$round" detect "$req1" "$err1"
      record kill "$target" "$round" after "$req2" "$err2"
      local extra=""
      if [[ $target == sluice ]]; then
        read -r attempted exhausted upstream < <(sluice_retries)
        record kill "$target" "$round" retries "$upstream" "$attempted"
        record kill "$target" "$round" budget_exhausted "$upstream" "$exhausted"
        extra=", retries $attempted, budget_exhausted $exhausted"
      fi
      log "kill $target round $round: detect $err1/$req1 errors, after $err2/$req2$extra"
      stop_target
      start_backend 3
    done
  done
}

flaky_section() {
  local target round
  for round in $(seq 1 "$ROUNDS"); do
    for target in sluice-noretry sluice nginx haproxy; do
      start_target "$target"
      faults 2 "fail_percent=10&fail_status=503"
      read -r req err < <(wrk_errors "$DURATION" "$WORK/flaky-$target-$round.txt")
      record flaky "$target" "$round" run "$req" "$err"
      local extra=""
      if [[ $target == sluice* ]]; then
        read -r attempted exhausted upstream < <(sluice_retries)
        record flaky "$target" "$round" retries "$upstream" "$attempted"
        record flaky "$target" "$round" budget_exhausted "$upstream" "$exhausted"
        extra=" retries $attempted of $upstream upstream requests, budget_exhausted $exhausted"
      fi
      log "flaky $target round $round: $err/$req errors$extra"
      faults 2 "fail_percent=0"
      stop_target
    done
  done
}

summarize() {
  /usr/bin/python3 - "$OUT_DIR/results.tsv" >"$OUT_DIR/summary.md" <<'EOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    section, target, _round, phase, total, count = line.rstrip("\n").split("\t")
    rows[(section, target, phase)].append((int(total), int(count)))
def median_rate(values):
    return statistics.median(c / t if t else 0.0 for t, c in values)
print("| section | target | phase | requests (median) | errors or retries (median) | rate (median) |")
print("| --- | --- | --- | ---: | ---: | ---: |")
for (section, target, phase), values in sorted(rows.items()):
    print(f"| {section} | {target} | {phase} | {statistics.median(t for t, _ in values):.0f} "
          f"| {statistics.median(c for _, c in values):.0f} | {100 * median_rate(values):.3f}% |")
EOF
  cat "$OUT_DIR/summary.md"
}

main() {
  local sections=("$@")
  ((${#sections[@]})) || sections=(kill flaky)
  command -v wrk >/dev/null || die "wrk is not installed (apt-get install wrk)"
  command -v nginx >/dev/null || die "nginx is not installed"
  command -v haproxy >/dev/null || die "haproxy is not installed"
  [[ -x $BIN_DIR/sluice ]] || die "no $BIN_DIR/sluice: ./deploy/dev.sh build"
  rm -rf "$OUT_DIR"
  mkdir -p "$WORK"
  : >"$OUT_DIR/results.tsv"
  local i
  for i in 1 2 3; do
    BACKEND_PORT[$i]=$(free_port)
    start_backend "$i"
  done
  for section in "${sections[@]}"; do
    case $section in
      kill) kill_section ;;
      flaky) flaky_section ;;
      *) die "unknown section $section" ;;
    esac
  done
  summarize
}

main "$@"
