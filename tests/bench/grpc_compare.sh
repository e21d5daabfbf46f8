#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gRPC and HTTP/2 to backends (docs/benchmarks.md, "gRPC"; docs/grpc.md): sluice against nginx
# in one run, each with one worker pinned to CPU 1, in front of the same backend
# (sluice-h2-backend: h2c and HTTP/1.1 on one port, one thread; tests/bench/h2_backend.cpp) with
# the load on CPU 0.
#
# usage: tests/bench/grpc_compare.sh [unary] [h1-to-h2]     (default: both)
#   unary     unary gRPC calls: h2load (Debian nghttp2-client) with gRPC framing (a POST of one
#             5-byte gRPC message, content-type application/grpc, te: trailers), H2_CONNS
#             connections x H2_STREAMS streams, one thread, through sluice (h2c listener, an
#             `h2c` backend) and nginx (`listen ... http2`, `grpc_pass` with a keep-alive pool);
#             req/s, p50/p99 from h2load's per-request log, proxy CPU µs per call.
#   h1-to-h2  HTTP/1.1 clients (wrk, H1_CONNS connections, one thread) through sluice to the
#             backend spoken to over `h2c`, and the same backend over HTTP/1.1 (`http1`); req/s,
#             p99, CPU, and the upstream connections open during the h2c run (ss).
#
# Environment: ROUNDS [5] (interleaved: each round runs every target once)  DURATION [10]
#   H2_CONNS [64] H2_STREAMS [10] H1_CONNS [256]  BIN_DIR [build/bin]
#   OUT_DIR [build/bench/grpc]
# Results: OUT_DIR/results.tsv (section, target, round, rps, p50_us, p99_us, cpu_us_per_req,
# extra) and OUT_DIR/summary.md (medians and ratios); logs and configs in OUT_DIR/work/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
readonly ROUNDS=${ROUNDS:-5} DURATION=${DURATION:-10}
readonly H2_CONNS=${H2_CONNS:-64} H2_STREAMS=${H2_STREAMS:-10} H1_CONNS=${H1_CONNS:-256}
readonly BIN_DIR=${BIN_DIR:-$ROOT/build/bin}
readonly OUT_DIR=${OUT_DIR:-$ROOT/build/bench/grpc}
readonly WORK=$OUT_DIR/work
readonly CLK_TCK=$(getconf CLK_TCK)
export PATH=$PATH:/usr/sbin:/sbin

log() { printf '[grpc] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

declare -a PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_line FILE PATTERN: waits up to 10 s for a line matching PATTERN in FILE.
wait_line() {
  local i
  for ((i = 0; i < 100; i++)); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  die "no /$2/ in $1: $(tail -n 5 "$1" 2>/dev/null)"
}

# cpu_ticks PID: utime + stime of the process and its threads, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

for tool in h2load wrk nginx taskset ss; do
  command -v "$tool" >/dev/null || die "$tool is missing (apt-get install nghttp2-client wrk nginx util-linux iproute2)"
done
[[ -x $BIN_DIR/sluice && -x $BIN_DIR/sluice-h2-backend ]] ||
  die "build first: cmake --build --preset release --target sluice sluice_h2_backend"

sections=("$@")
((${#sections[@]} > 0)) || sections=(unary h1-to-h2)
rm -rf "$WORK"
mkdir -p "$WORK"
: >"$OUT_DIR/results.tsv"

# -- the backend and the proxies -------------------------------------------------------------

BACKEND_PORT=$(free_port)
taskset -c 0 "$BIN_DIR/sluice-h2-backend" "$BACKEND_PORT" >"$WORK/backend.log" 2>&1 &
PIDS+=($!)
wait_line "$WORK/backend.log" listening

declare -A PORT=() PID=()

# start_sluice NAME PROTOCOL: sluice with one worker on CPU 1, its backend spoken to over
# PROTOCOL (h2c or http1), an h2c listener (HTTP/1.1 clients are served on it too).
start_sluice() {
  local name=$1 protocol=$2 port
  port=$(free_port)
  cat >"$WORK/$name.json" <<EOF
{"listeners": [{"name": "h2c", "address": "127.0.0.1", "port": $port,
                "http2": {"enabled": true, "max_concurrent_streams": 128}}],
 "admin": {"address": "127.0.0.1", "port": 0},
 "threads": 1,
 "access_log": {"enabled": false},
 "http": {"max_connections": 20000},
 "backends": {"b": {"endpoints": ["127.0.0.1:$BACKEND_PORT"], "protocol": "$protocol",
                    "max_idle_per_endpoint": 1024}},
 "routes": [{"name": "all", "prefix": "/", "backend": "b"}]}
EOF
  taskset -c 1 "$BIN_DIR/sluice" --config "$WORK/$name.json" --log-level warn \
    >"$WORK/$name.log" 2>&1 &
  PID[$name]=$!
  PIDS+=($!)
  PORT[$name]=$port
  sleep 0.5
  kill -0 "${PID[$name]}" || die "$name did not start: $(tail -n 5 "$WORK/$name.log")"
}

# start_nginx: nginx with one worker on CPU 1, h2c (`listen ... http2` without ssl: nginx 1.22's
# prior-knowledge HTTP/2) and grpc_pass over a keep-alive pool.
start_nginx() {
  local port dir=$WORK/nginx
  port=$(free_port)
  mkdir -p "$dir"
  cat >"$dir/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
worker_cpu_affinity 10;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
$( [[ $(id -u) -eq 0 ]] && echo "user root;")
events { worker_connections 20000; }
http {
    access_log off;
    client_body_temp_path $dir/client_body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    keepalive_requests 1000000000;
    http2_max_requests 1000000000;
    upstream grpc_backend {
        server 127.0.0.1:$BACKEND_PORT;
        keepalive 1024;
        keepalive_requests 1000000000;
    }
    server {
        listen 127.0.0.1:$port http2;
        location / { grpc_pass grpc://grpc_backend; }
    }
}
EOF
  nginx -c "$dir/nginx.conf" >"$dir/stdout.log" 2>&1 &
  PIDS+=($!)
  sleep 0.5
  PID[nginx]=$(pgrep -f "nginx: worker process" -n) || die "nginx did not start: $(cat "$dir/error.log")"
  PORT[nginx]=$port
}

# -- measuring -------------------------------------------------------------------------------

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# record SECTION TARGET ROUND RPS P50 P99 CPU_US EXTRA
record() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$OUT_DIR/results.tsv"
  log "$(printf '%-8s round %s %-12s %10s req/s  p50 %7s µs  p99 %7s µs  cpu %6s µs/req  %s' \
    "$1" "$3" "$2" "$4" "$5" "$6" "$7" "$8")"
}

GRPC_FRAME=$WORK/unary.bin
printf '\x00\x00\x00\x00\x05hello' >"$GRPC_FRAME"

# unary_run TARGET ROUND: one h2load run of DURATION seconds against TARGET (round 0: a
# 2-second warm-up, not recorded).
unary_run() {
  local target=$1 round=$2 out=$WORK/h2load-$1-$2.txt reqlog=$WORK/h2load-$1-$2.tsv
  local c0 c1 rps requests p50 p99 cpu duration=$DURATION
  ((round > 0)) || duration=2
  c0=$(cpu_ticks "${PID[$target]}")
  taskset -c 0 h2load -c "$H2_CONNS" -m "$H2_STREAMS" -t 1 -D "$duration" \
    --log-file="$reqlog" -d "$GRPC_FRAME" -H 'content-type: application/grpc' \
    -H 'te: trailers' "http://127.0.0.1:${PORT[$target]}/test.Echo/Unary" >"$out" 2>&1 || true
  c1=$(cpu_ticks "${PID[$target]}")
  rps=$(awk '/^finished in / { print $4 }' "$out")
  requests=$(awk '/^requests: / { print $8 }' "$out")  # succeeded
  read -r p50 p99 < <(awk -F'\t' '$2 > 0 { print $3 }' "$reqlog" | sort -n |
    awk 'function rank(p,  i) { i = int(p * NR); if (i < p * NR) i++; return v[i < 1 ? 1 : i] }
         { v[NR] = $1 }
         END { if (NR == 0) print "nan nan"; else print rank(0.50), rank(0.99) }')
  cpu=$(awk -v t=$((c1 - c0)) -v hz="$CLK_TCK" -v n="${requests:-0}" \
    'BEGIN { if (n > 0) printf "%.2f", t / hz * 1e6 / n; else print "nan" }')
  ((round > 0)) || return 0
  # Every call must have ended with grpc-status 0: h2load counts 2xx, so check the backend
  # answered (a proxy error would be a non-200 or a trailers-only answer without a message).
  record unary "$target" "$round" "${rps:-nan}" "$p50" "$p99" "$cpu" \
    "succeeded=${requests:-0} $(grep -E '^status codes:' "$out" | tr -s ' ')"
}

# h1_run TARGET ROUND: one wrk run (HTTP/1.1, H1_CONNS connections) against TARGET.
h1_run() {
  local target=$1 round=$2 out=$WORK/wrk-$1-$2.txt c0 c1 rps requests p99 cpu conns=0
  c0=$(cpu_ticks "${PID[$target]}")
  taskset -c 0 wrk -t1 -c "$H1_CONNS" -d "${DURATION}s" --latency \
    "http://127.0.0.1:${PORT[$target]}/ok" >"$out" 2>&1 &
  local wrk_pid=$!
  sleep $((DURATION / 2))
  conns=$(ss -Htnp state established "( dport = :$BACKEND_PORT )" | grep -c "pid=${PID[$target]},") || true
  wait "$wrk_pid" || true
  c1=$(cpu_ticks "${PID[$target]}")
  rps=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
  requests=$(awk '/requests in/ { print $1 }' "$out")
  p99=$(awk '$1 == "99%" { v = $2; if (v ~ /ms$/) { sub(/ms$/, "", v); v *= 1000 } else if (v ~ /us$/) { sub(/us$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1e6 } print v }' "$out")
  cpu=$(awk -v t=$((c1 - c0)) -v hz="$CLK_TCK" -v n="${requests:-0}" \
    'BEGIN { if (n > 0) printf "%.2f", t / hz * 1e6 / n; else print "nan" }')
  record h1-to-h2 "$target" "$round" "${rps:-nan}" nan "${p99:-nan}" "$cpu" \
    "upstream_connections=$conns $(grep -E 'Non-2xx|Socket errors' "$out" | tr '\n' ' ')"
}

summarize() { # summarize SECTION TARGET_A TARGET_B: medians and A/B ratios
  local section=$1 a=$2 b=$3 t
  {
    echo "### $section (medians of $ROUNDS rounds, $DURATION s each)"
    echo
    echo "| target | req/s | p99 µs | CPU µs/req |"
    echo "| --- | --- | --- | --- |"
    for t in "$a" "$b"; do
      printf '| %s | %s | %s | %s |\n' "$t" \
        "$(awk -F'\t' -v s="$section" -v t="$t" '$1 == s && $2 == t { print $4 }' "$OUT_DIR/results.tsv" | median)" \
        "$(awk -F'\t' -v s="$section" -v t="$t" '$1 == s && $2 == t { print $6 }' "$OUT_DIR/results.tsv" | median)" \
        "$(awk -F'\t' -v s="$section" -v t="$t" '$1 == s && $2 == t { print $7 }' "$OUT_DIR/results.tsv" | median)"
    done
    local ra rb pa pb ca cb
    ra=$(awk -F'\t' -v s="$section" -v t="$a" '$1 == s && $2 == t { print $4 }' "$OUT_DIR/results.tsv" | median)
    rb=$(awk -F'\t' -v s="$section" -v t="$b" '$1 == s && $2 == t { print $4 }' "$OUT_DIR/results.tsv" | median)
    pa=$(awk -F'\t' -v s="$section" -v t="$a" '$1 == s && $2 == t { print $6 }' "$OUT_DIR/results.tsv" | median)
    pb=$(awk -F'\t' -v s="$section" -v t="$b" '$1 == s && $2 == t { print $6 }' "$OUT_DIR/results.tsv" | median)
    ca=$(awk -F'\t' -v s="$section" -v t="$a" '$1 == s && $2 == t { print $7 }' "$OUT_DIR/results.tsv" | median)
    cb=$(awk -F'\t' -v s="$section" -v t="$b" '$1 == s && $2 == t { print $7 }' "$OUT_DIR/results.tsv" | median)
    echo
    awk -v a="$a" -v b="$b" -v ra="$ra" -v rb="$rb" -v pa="$pa" -v pb="$pb" -v ca="$ca" -v cb="$cb" \
      'BEGIN { printf "%s/%s: req/s %.3fx, p99 %.3fx, CPU per request %.3fx\n", a, b, ra / rb, pa / pb, ca / cb }'
    echo
  } >>"$OUT_DIR/summary.md"
}

{
  echo "# grpc_compare.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo
  echo "nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), $(h2load --version 2>&1 | head -n1), 1 worker each on CPU 1, load and backend on CPU 0"
  echo
} >"$OUT_DIR/summary.md"

for section in "${sections[@]}"; do
  case $section in
    unary)
      start_sluice sluice-grpc h2c
      start_nginx
      log "unary: warm-up"
      unary_run sluice-grpc 0
      unary_run nginx 0
      for ((round = 1; round <= ROUNDS; round++)); do
        unary_run sluice-grpc "$round"
        unary_run nginx "$round"
      done
      summarize unary sluice-grpc nginx
      ;;
    h1-to-h2)
      start_sluice sluice-h2c h2c
      start_sluice sluice-http1 http1
      for ((round = 1; round <= ROUNDS; round++)); do
        h1_run sluice-h2c "$round"
        h1_run sluice-http1 "$round"
      done
      summarize h1-to-h2 sluice-h2c sluice-http1
      ;;
    *) die "unknown section: $section" ;;
  esac
done
cat "$OUT_DIR/summary.md"
