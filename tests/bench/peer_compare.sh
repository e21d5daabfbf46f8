#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Peer comparison: sluice against nginx and haproxy as keep-alive reverse proxies, and against
# the backend alone, all measured in ONE run on this machine (docs/benchmarks.md, "Peer
# comparison (proxy)"). Absolute figures on a shared 2-core VM are noisy; the ratios between
# targets measured in interleaved rounds of the same run are what to read.
#
# usage: tests/bench/peer_compare.sh [throughput] [pinned] [limits] [accesslog] [redis] [idle]
#                                     [stream] [tls] [websocket] [h2] [keys] [syscalls]
#                                     [tlssyscalls]
#        (default: the first ten; `keys` runs only when named: it holds a million keys, and
#        `syscalls` and `tlssyscalls` only when named: they need strace and ptrace rights)
#   throughput  wrk keep-alive load through every target, no CPU pinning, rounds interleaved
#               (direct sluice-1 sluice-2 nginx-1 nginx-2 haproxy-1 haproxy-2, then again ...)
#   pinned      the same for the 1-worker targets: proxy on cpu 0, wrk + backend on cpu 1
#   limits      pinned like `pinned`, every request keyed by X-API-Key over LIMIT_KEYS keys
#               (wrk -s peers/keys.lua, the same script for every target): sluice-1 (plain),
#               sluice-limits (policy + breaker), nginx-limit_req, haproxy-stick-table; each
#               limit is set far above the load, so it is evaluated on every request and never
#               rejects (any 429 shows up as a non-2xx error)
#   accesslog   pinned like `pinned`, each proxy writing its access log to a file: sluice-log
#               (one JSON line per request, docs/access-log.md) against nginx-log (a JSON
#               log_format with the same fields, `buffer=64k flush=1s`: like sluice, lines reach
#               the file within a second); the lines each wrote are counted afterwards
#   redis       pinned like `limits`, the same keys: sluice-limits (memory store) against
#               sluice-redis (store.type redis on a local redis-server, pinned with wrk and the
#               backend) and sluice-hybrid (the same, store.mode hybrid, sync_ms 100); Redis
#               commands per proxied request of each from INFO commandstats; and
#               redis-benchmark running the same EVALSHA directly (on the proxy's cpu) as the
#               ceiling
#   keys        key cardinality, pinned like `limits`: for each count in KEY_COUNTS, a FRESH
#               sluice-limits (60 buckets, store.max_keys twice the keys) and nginx-limit_req
#               (its zone sized for the keys),
#               driven by keys.lua over that many keys in ROUNDS interleaved rounds; req/s per
#               round, then each one's RSS growth since it started over the keys it holds
#               (sluice: sluice_ratelimit_tracked_keys; nginx, which does not say: the distinct
#               keys sent in the last minute, as both forget a key 60 s after its last request)
#   syscalls    pinned like `pinned`: sluice-1, nginx-1 and haproxy-1 (and base-1 with
#               BASELINE_BIN) each once under `strace -c -f` for DURATION: system calls per
#               proxied request by name and how many of them failed (a read that found nothing
#               is a failed receive, EAGAIN). strace slows what it traces: only the counts per
#               request mean something here, not the rates (syscalls.tsv)
#   tlssyscalls the same for sluice-tls and nginx-tls under the tlsnew load (one request per
#               TLS connection): system calls per new TLS connection
#   idle        RSS of sluice (and nginx) holding IDLE_CONNS idle keep-alive client connections
#   stream      sluice's peak RSS growth while STREAM_BYTES stream down (/bytes) and up (/echo)
#   tls         HTTPS, pinned like `pinned`, sluice-tls against nginx-tls (1 worker each, the same
#               ECDSA P-256 certificate, TLS 1.3 only): keep-alive req/s (variant tls), new TLS
#               connections per second with one request each (variant tlsnew: wrk sends
#               `Connection: close`, so every request is a full handshake), and the RSS of each
#               holding IDLE_CONNS idle TLS connections (idle_clients.py --tls)
#   websocket   WebSocket (HTTP/1.1 Upgrade) tunnels to the demo backend's /ws/echo, pinned like
#               `pinned`, sluice-ws (1 worker, a /ws route) against nginx-ws (1 worker,
#               `location /ws` with Upgrade/Connection passed on), load from sluice_ws_load
#               (binary messages, closed loop: each connection sends one and waits for its
#               echo): variant ws-1k (64 connections x 1 KiB: messages/s, p99), variant ws-1m
#               (8 connections x 1 MiB: MiB/s), ROUNDS interleaved rounds each; then the RSS of
#               each proxy before and while holding WS_IDLE idle tunnels (sluice_ws_load --idle,
#               held WS_HOLD seconds), as KiB per tunnel
#   h2          HTTP/2 downstream over TLS (ALPN h2), pinned like `pinned`: sluice-h2 (1 worker, a
#               TLS listener with alpn ["h2", "http/1.1"]) against nginx-h2 (1 worker, `listen ...
#               ssl http2`) and haproxy-h2 (1 thread, `bind ... ssl alpn h2,http/1.1`), the tls
#               section's certificate, each proxying over keep-alive HTTP/1.1
#               to the backend (idle upstream pools of 1024, above the 640 requests in flight);
#               load from h2load (Debian package nghttp2-client) with 64 connections x 10
#               streams, one thread, on cpu 1 with the backend (variant h2-64x10: one unmeasured
#               WARMUP run per target, then ROUNDS interleaved runs of DURATION; req/s from
#               h2load, p50/p99 from its --log-file); then the RSS of each holding H2_IDLE idle
#               h2 connections (idle_clients.py --h2: ALPN h2, the client preface and SETTINGS
#               exchanged, no stream opened; both proxies' header and idle timeouts are set far
#               beyond the hold), as KiB per connection
#
# Environment (defaults in brackets):
#   ROUNDS [3]  DURATION [10s]  WARMUP [2s]  CONNECTIONS [64]  WRK_THREADS [1]  REQ_PATH [/ok]
#   IDLE_CONNS [10000]  STREAM_BYTES [1073741824]  LIMIT_KEYS [10000]  WS_IDLE [1000]  WS_HOLD [5]
#   IDLE_SETTLE [11]  seconds between the idle clients being ready and the RSS reading
#   KEY_COUNTS ["1 100000 1000000"]  SYNC_MS [100] (sluice-hybrid's store.sync_ms)
#   H2_IDLE [IDLE_CONNS]  PYTHON [/usr/bin/python3, else python3: runs idle_clients.py]
#   BACKEND [auto]   nginx = nginx static (1 worker), demo = sluice-demo-backend --threads 1,
#                    auto = nginx when installed, else demo (why: docs/benchmarks.md)
#   BIN_DIR [build/bin]  OUT_DIR [build/bench/peers]
#   BASELINE_BIN [unset]  another sluice binary (say the build before a change), measured beside
#                    BIN_DIR's as base-1 and base-2 in the throughput section, base-1 in the
#                    pinned and syscalls ones, base-tls in the tls and tlssyscalls ones and
#                    base-redis and base-hybrid (store redis, exact and hybrid) in the redis
#                    one, in
#                    the same interleaved rounds: a before/after comparison whose ratio
#                    (sluice-N / base-N per round) the summary prints
#   TARGETS [all]    space-separated target names: the throughput, pinned, limits, websocket and
#                    h2 sections measure only those of their targets (e.g. TARGETS="nginx-limit_req
#                    haproxy-stick-table" limits; TARGETS=nginx-ws websocket, which also holds
#                    the idle tunnels through nginx only; likewise TARGETS=sluice-h2 h2)
# Results: OUT_DIR/{raw.tsv,memory.tsv,meta.tsv,syscalls.tsv,summary.json,summary.md}; logs,
# configs and every wrk output in OUT_DIR/work/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
readonly PEERS_DIR=$ROOT/tests/bench/peers
readonly ROUNDS=${ROUNDS:-3}
readonly DURATION=${DURATION:-10s}
readonly WARMUP=${WARMUP:-2s}
readonly CONNECTIONS=${CONNECTIONS:-64}
readonly WRK_THREADS=${WRK_THREADS:-1}
readonly REQ_PATH=${REQ_PATH:-/ok}
readonly IDLE_CONNS=${IDLE_CONNS:-10000}
readonly STREAM_BYTES=${STREAM_BYTES:-1073741824}
readonly LIMIT_KEYS=${LIMIT_KEYS:-10000}
readonly KEY_COUNTS=${KEY_COUNTS:-1 100000 1000000}
readonly WS_IDLE=${WS_IDLE:-1000}
readonly WS_HOLD=${WS_HOLD:-5}
readonly H2_IDLE=${H2_IDLE:-$IDLE_CONNS}
# The h2 section's load: h2load connections x concurrent streams on each (the variant's name).
readonly H2_CONNS=64 H2_STREAMS=10
readonly H2_VARIANT=h2-${H2_CONNS}x$H2_STREAMS
# The most idle connections any section holds (sluice's max_connections, the descriptors).
readonly MAX_IDLE=$((IDLE_CONNS > H2_IDLE ? IDLE_CONNS : H2_IDLE))
# idle_clients.py runs on Debian's interpreter (its ssl module, its OpenSSL) unless told otherwise.
if [[ -z ${PYTHON:-} ]]; then
  if [[ -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
readonly PYTHON
readonly TARGETS=${TARGETS:-}
readonly BASELINE_BIN=${BASELINE_BIN:-}
# nginx's limit_req for the `limits` section: a rate no run here can reach, far below the point
# where nginx's fixed-point arithmetic overflows (peers/nginx-limits.conf.in explains both).
readonly NGINX_LIMIT_RATE=10000000r/s
BACKEND=${BACKEND:-auto}
readonly BIN_DIR=${BIN_DIR:-$ROOT/build/bin}
readonly OUT_DIR=${OUT_DIR:-$ROOT/build/bench/peers}
readonly WORK=$OUT_DIR/work
# shellcheck disable=SC2034 # read by bench_lib.sh
readonly READY_TIMEOUT_S=15
# Distro daemons live in sbin, which a non-root PATH may lack.
export PATH=$PATH:/usr/sbin:/sbin

# Logging, processes, readiness waits, rendering, pinning and /proc readings (shared with
# overload_compare.sh); it reads BENCH_TAG, WORK and READY_TIMEOUT_S.
# shellcheck disable=SC2034
BENCH_TAG=bench
# shellcheck source=tests/bench/bench_lib.sh
source "$ROOT/tests/bench/bench_lib.sh"

# ---------------------------------------------------------------------------------------------
# Setup.

HAVE_NGINX=0
HAVE_HAPROXY=0
SKIP_REASON=

# service_running NAME: the distro's own daemon of that name runs (pid file of its package).
service_running() {
  local pidfile=/run/$1.pid
  [[ -r $pidfile ]] && is_alive "$(<"$pidfile")" 2>/dev/null
}

# ensure_tools: wrk is required; nginx and haproxy are installed when missing, skipped if that
# fails. apt may start the distro services: those are stopped again (they would only add noise;
# every peer here runs from its own generated config on its own port).
ensure_tools() {
  local tool missing=() running_before=()
  for tool in curl python3 taskset getconf pgrep; do
    command -v "$tool" >/dev/null || die "'$tool' is required and missing"
  done
  for tool in wrk nginx haproxy; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  if ((${#missing[@]} > 0)); then
    for tool in nginx haproxy; do
      if service_running "$tool"; then running_before+=("$tool"); fi
    done
    log "installing ${missing[*]} with apt"
    if as_root apt-get update -q >&2 &&
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "${missing[@]}" >&2; then
      for tool in nginx haproxy; do
        if service_running "$tool" && [[ " ${running_before[*]} " != *" $tool "* ]]; then
          log "stopping the distro $tool service apt just started (not used here)"
          as_root service "$tool" stop >&2 || as_root systemctl stop "$tool" >&2 || true
        fi
      done
    else
      warn "apt-get could not install ${missing[*]}"
    fi
  fi
  command -v wrk >/dev/null || die "wrk is missing and could not be installed"
  if command -v nginx >/dev/null; then HAVE_NGINX=1; else warn "nginx unavailable: skipping it"; fi
  if command -v haproxy >/dev/null; then HAVE_HAPROXY=1; else warn "haproxy unavailable: skipping it"; fi
  if [[ $BACKEND == nginx ]] && ((!HAVE_NGINX)); then
    die "BACKEND=nginx needs nginx"
  fi
  # The backend shares the 2 cores with wrk and the proxy, so the cheaper one leaves the proxy
  # more CPU: nginx's static reply costs ~3.5 µs of CPU a request here, the demo backend ~9.
  if [[ $BACKEND == auto ]]; then
    if ((HAVE_NGINX)); then BACKEND=nginx; else BACKEND=demo; fi
  fi
  readonly BACKEND
}

FD_LIMIT=

# raise_fd_limit: IDLE_CONNS (or H2_IDLE) idle connections need that many descriptors in the
# client and in the proxy (plus upstream and spare ones); asks for twice that. A WebSocket tunnel
# holds two in the proxy, so WS_IDLE counts twice. Root may raise the hard limit.
raise_fd_limit() {
  local conns=$((MAX_IDLE > 2 * WS_IDLE ? MAX_IDLE : 2 * WS_IDLE))
  local want=$((2 * conns + 4096)) need=$((conns + 1024)) hard
  hard=$(ulimit -Hn)
  if [[ $hard != unlimited ]] && ((hard < want)) && [[ $(id -u) -eq 0 ]]; then
    ulimit -Hn "$want" 2>/dev/null || true
    hard=$(ulimit -Hn)
  fi
  if [[ $hard == unlimited ]] || ((hard >= want)); then
    ulimit -Sn "$want"
  else
    ulimit -Sn "$hard"
    ((hard >= need)) || warn "open-file limit is $hard: the idle tests will fall short of $conns"
  fi
  FD_LIMIT=$(ulimit -Sn)
  log "open-file limit: $FD_LIMIT"
}

SLUICE_BIN=
BASE_SLUICE_BIN= # snapshot_binaries, with BASELINE_BIN
DEMO_BIN=
CERT_DIR= # make_cert
WS_LOAD_BIN=
NEED_WS_LOAD=0 # set by main when the websocket section runs

# snapshot_binaries: copies the binaries into WORK, so a rebuild during the run (another shell)
# cannot swap or truncate them between two start-ups.
snapshot_binaries() {
  local bin bins=(sluice sluice-demo-backend)
  ((!NEED_WS_LOAD)) || bins+=(sluice_ws_load)
  for bin in "${bins[@]}"; do
    [[ -x $BIN_DIR/$bin ]] || die "$BIN_DIR/$bin is missing: build first (./deploy/dev.sh build)"
    cp "$BIN_DIR/$bin" "$WORK/bin/$bin"
  done
  SLUICE_BIN=$WORK/bin/sluice
  DEMO_BIN=$WORK/bin/sluice-demo-backend
  if [[ -n $BASELINE_BIN ]]; then
    [[ -x $BASELINE_BIN ]] || die "BASELINE_BIN $BASELINE_BIN is not an executable"
    cp "$BASELINE_BIN" "$WORK/bin/sluice-base"
    BASE_SLUICE_BIN=$WORK/bin/sluice-base
  fi
  WS_LOAD_BIN=$WORK/bin/sluice_ws_load
}

meta() { printf '%s\t%s\n' "$1" "$2" >>"$OUT_DIR/meta.tsv"; }

versions() {
  local v=() rev
  if rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null); then
    git -C "$ROOT" diff --quiet HEAD 2>/dev/null || rev+="+uncommitted changes"
    v+=("sluice $rev")
  fi
  v+=("$(wrk --version 2>&1 | head -n1 | cut -d' ' -f1-2)")
  if ((HAVE_NGINX)); then v+=("$(nginx -v 2>&1 | sed 's/.*: //')"); fi
  if ((HAVE_HAPROXY)); then v+=("haproxy $(haproxy -v 2>&1 | head -n1 | awk '{print $3}')"); fi
  local IFS=,
  echo "${v[*]}"
}

# ---------------------------------------------------------------------------------------------
# Servers. Each start_* sets TARGET_PORT[name] and TARGET_PID[name] (the process to measure),
# or returns 1 after explaining why it could not start.

declare -A TARGET_PORT=() TARGET_PID=() TARGET_DEAD=() TARGET_ADMIN=() TARGET_SOCKET=()
BACKEND_PORT=
BACKEND_PID=

# start_backend NAME CPUS [KIND]: the upstream every proxy forwards to (and the "direct"
# target). KIND is demo or nginx (default: $BACKEND).
start_backend() {
  local name=$1 cpus=$2 kind=${3:-$BACKEND}
  pin_cmd "$cpus"
  if [[ $kind == nginx ]]; then
    local dir=$LOGDIR/$name port
    port=$(free_port)
    mkdir -p "$dir"
    render "$PEERS_DIR/nginx-static.conf.in" "$dir/nginx.conf" "DIR=$dir" "PORT=$port" \
      "FD_LIMIT=$FD_LIMIT" "WORKER_CONNECTIONS=$((FD_LIMIT - 64))" \
      "USER_DIRECTIVE=$(nginx_user_directive)"
    spawn "$name" "${PIN[@]}" nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
    wait_for_http "$name" "$SPAWNED_PID" "$port" || die "the backend did not start"
    BACKEND_PORT=$port
  else
    spawn "$name" "${PIN[@]}" "$DEMO_BIN" --address 127.0.0.1 --port 0 --threads 1
    wait_for_line "$name" "$SPAWNED_PID" '^listening ' || die "the demo backend did not start"
    BACKEND_PORT=${READY_LINE##*:}
  fi
  BACKEND_PID=$SPAWNED_PID
  TARGET_PORT[direct]=$BACKEND_PORT
  TARGET_PID[direct]=$BACKEND_PID
  log "backend ($kind${cpus:+, cpu $cpus}) on port $BACKEND_PORT"
}

# start_sluice NAME THREADS CPUS [TIMEOUT_MS] [TEMPLATE] [ACCESS_LOG_FILE]
#   (TEMPLATE: sluice.json.in; without ACCESS_LOG_FILE the access log is off)
start_sluice() {
  local name=$1 threads=$2 cpus=$3 timeout_ms=${4:-30000} template=${5:-sluice.json.in}
  local config=$LOGDIR/$1.json access_log='{"enabled": false, "path": "-"}'
  [[ -z ${6:-} ]] || access_log="{\"enabled\": true, \"path\": \"$6\"}"
  render "$PEERS_DIR/$template" "$config" "THREADS=$threads" "BACKEND_PORT=$BACKEND_PORT" \
    "MAX_CONNECTIONS=$((MAX_IDLE + 10000))" "MAX_BODY_BYTES=$((2 * STREAM_BYTES))" \
    "TIMEOUT_MS=$timeout_ms" "REDIS_PORT=${REDIS_PORT:-0}" "ACCESS_LOG=$access_log" \
    "CERT_DIR=${CERT_DIR:-}" "MAX_KEYS=${SLUICE_MAX_KEYS:-1000000}" "SYNC_MS=${SYNC_MS:-100}"
  if ! "$SLUICE_BIN" --check --config "$config" >"$LOGDIR/$name.check.log" 2>&1; then
    warn "sluice rejects $config:"
    sed 's/^/    | /' "$LOGDIR/$name.check.log" >&2
    return 1
  fi
  pin_cmd "$cpus"
  spawn "$name" "${PIN[@]}" "$SLUICE_BIN" --config "$config"
  wait_for_line "$name" "$SPAWNED_PID" 'ready proxy=' || return 1
  local port
  port=$(sed -E 's/.*ready proxy=[^ ]*:([0-9]+).*/\1/' <<<"$READY_LINE")
  local scheme=http
  [[ $template != sluice-tls.json.in && $template != sluice-h2.json.in ]] || scheme=https
  wait_for_http "$name" "$SPAWNED_PID" "$port" "$scheme" || return 1
  TARGET_PORT[$name]=$port
  TARGET_PID[$name]=$SPAWNED_PID
  TARGET_ADMIN[$name]=$(sed -nE 's/.* admin=[^ ]*:([0-9]+).*/\1/p' <<<"$READY_LINE")
}

# start_nginx NAME WORKERS CPUS [TEMPLATE] [ACCESS_LOG_FILE]
#   (TEMPLATE: nginx-proxy.conf.in; without ACCESS_LOG_FILE the access log is off)
start_nginx() {
  local name=$1 workers=$2 cpus=$3 template=${4:-nginx-proxy.conf.in} dir=$LOGDIR/$1 port
  local access_log="access_log off;"
  # The fields of sluice's line (docs/access-log.md), as nginx has them; buffered like sluice's
  # batches and flushed at least every second, as sluice's lines reach the file within one.
  [[ -z ${5:-} ]] || access_log="log_format bench_json escape=json '{\"ts\":\"\$time_iso8601\",\"request_id\":\"\$sluice_bench_request_id\",\"method\":\"\$request_method\",\"path\":\"\$uri\",\"route\":\"all\",\"backend\":\"demo\",\"endpoint\":\"\$upstream_addr\",\"user\":\"\$remote_addr\",\"status\":\$status,\"bytes_in\":\$request_length,\"bytes_out\":\$body_bytes_sent,\"duration_ms\":\$request_time,\"upstream_ms\":\"\$upstream_response_time\",\"limit\":\"none\",\"breaker\":\"off\",\"client_ip\":\"\$remote_addr\",\"host\":\"\$host\",\"protocol\":\"\$server_protocol\"}'; access_log $5 bench_json buffer=64k flush=1s;"
  port=$(free_port)
  mkdir -p "$dir"
  # RATE and BURST are used by nginx-limits.conf.in only: a key's requests within one event-loop
  # pass (at most CONNECTIONS) must fit in the burst.
  render "$PEERS_DIR/$template" "$dir/nginx.conf" "DIR=$dir" "PORT=$port" \
    "WORKERS=$workers" "BACKEND_PORT=$BACKEND_PORT" "FD_LIMIT=$FD_LIMIT" \
    "WORKER_CONNECTIONS=$((FD_LIMIT - 64))" "USER_DIRECTIVE=$(nginx_user_directive)" \
    "RATE=$NGINX_LIMIT_RATE" "BURST=$((10 * CONNECTIONS))" "ACCESS_LOG=$access_log" \
    "CERT_DIR=${CERT_DIR:-}" "ZONE_MB=${NGINX_ZONE_MB:-10}"
  if ! nginx -t -q -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" >"$LOGDIR/$name.check.log" 2>&1; then
    warn "nginx rejects $dir/nginx.conf:"
    sed 's/^/    | /' "$LOGDIR/$name.check.log" >&2
    return 1
  fi
  pin_cmd "$cpus"
  spawn "$name" "${PIN[@]}" nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
  local scheme=http
  [[ $template != nginx-tls.conf.in && $template != nginx-h2.conf.in ]] || scheme=https
  wait_for_http "$name" "$SPAWNED_PID" "$port" "$scheme" || return 1
  TARGET_PORT[$name]=$port
  TARGET_PID[$name]=$SPAWNED_PID # the master: cpu_ticks/rss_kb add its workers
}

# start_haproxy NAME THREADS CPUS [TEMPLATE]   (TEMPLATE: haproxy.cfg.in)
start_haproxy() {
  local name=$1 threads=$2 cpus=$3 template=${4:-haproxy.cfg.in} config=$LOGDIR/$1.cfg port
  local socket=$LOGDIR/$1.sock
  port=$(free_port)
  # A unix socket path has room for 107 bytes.
  ((${#socket} < 100)) || socket=/tmp/peer-compare-$$-$1.sock
  rm -f "$socket"
  # Two descriptors per proxied connection, some to spare. SOCKET: haproxy-limits.cfg.in only.
  render "$PEERS_DIR/$template" "$config" "THREADS=$threads" "PORT=$port" \
    "BACKEND_PORT=$BACKEND_PORT" "MAXCONN=$(((FD_LIMIT - 256) / 2))" "SOCKET=$socket" \
    "CERT_PEM=${CERT_DIR:-}/tls.pem"
  if ! haproxy -c -q -f "$config" >"$LOGDIR/$name.check.log" 2>&1; then
    warn "haproxy rejects $config:"
    sed 's/^/    | /' "$LOGDIR/$name.check.log" >&2
    return 1
  fi
  pin_cmd "$cpus"
  spawn "$name" "${PIN[@]}" haproxy -db -f "$config"
  local scheme=http
  [[ $template != haproxy-h2.cfg.in ]] || scheme=https
  wait_for_http "$name" "$SPAWNED_PID" "$port" "$scheme" || return 1
  TARGET_PORT[$name]=$port
  TARGET_PID[$name]=$SPAWNED_PID
  TARGET_SOCKET[$name]=$socket
}

# start_target NAME CPUS: dispatches on the name (sluice-N, nginx-N, haproxy-N, direct, and the
# 1-worker limit targets of the `limits` section). On failure SKIP_REASON says why.
start_target() {
  local name=$1 cpus=$2 workers=${1##*-}
  SKIP_REASON="did not start (see the warnings above; its config and logs are in $LOGDIR)"
  case $name in
    direct) return 0 ;;
    sluice-limits) start_sluice "$name" 1 "$cpus" 30000 sluice-limits.json.in ;;
    sluice-tls | sluice-tls-idle) start_sluice "$name" 1 "$cpus" 30000 sluice-tls.json.in ;;
    sluice-ws | sluice-ws-idle) start_sluice "$name" 1 "$cpus" 30000 sluice-ws.json.in ;;
    sluice-h2 | sluice-h2-idle) start_sluice "$name" 1 "$cpus" 30000 sluice-h2.json.in ;;
    sluice-log) start_sluice "$name" 1 "$cpus" 30000 sluice.json.in "$LOGDIR/$name.access.log" ;;
    sluice-redis | sluice-hybrid | base-redis | base-hybrid)
      local bin=$SLUICE_BIN config=$name.json.in
      [[ $name != base-redis ]] || bin=$BASE_SLUICE_BIN config=sluice-redis.json.in
      [[ $name != base-hybrid ]] || bin=$BASE_SLUICE_BIN config=sluice-hybrid.json.in
      SLUICE_BIN=$bin start_sluice "$name" 1 "$cpus" 30000 "$config" || return 1
      # Decisions go to Redis only once its connection is up: wait for the "ready" line.
      wait_for_line "$name" "${TARGET_PID[$name]}" 'redis store ready' || return 1
      [[ $name == base-* ]] || REDIS_SHA=$(sed -nE 's/.*window_script=([0-9a-f]+).*/\1/p' <<<"$READY_LINE")
      ;;
    sluice-*) start_sluice "$name" "$workers" "$cpus" ;;
    base-tls) SLUICE_BIN=$BASE_SLUICE_BIN start_sluice "$name" 1 "$cpus" 30000 sluice-tls.json.in ;;
    base-*) SLUICE_BIN=$BASE_SLUICE_BIN start_sluice "$name" "$workers" "$cpus" ;;
    nginx-*)
      ((HAVE_NGINX)) || {
        SKIP_REASON="nginx is not installed"
        return 1
      }
      if [[ $name == nginx-tls || $name == nginx-tls-idle ]]; then
        start_nginx "$name" 1 "$cpus" nginx-tls.conf.in
      elif [[ $name == nginx-ws || $name == nginx-ws-idle ]]; then
        start_nginx "$name" 1 "$cpus" nginx-ws.conf.in
      elif [[ $name == nginx-h2 || $name == nginx-h2-idle ]]; then
        start_nginx "$name" 1 "$cpus" nginx-h2.conf.in
      elif [[ $name == nginx-limit_req ]]; then
        start_nginx "$name" 1 "$cpus" nginx-limits.conf.in
      elif [[ $name == nginx-log ]]; then
        start_nginx "$name" 1 "$cpus" nginx-proxy.conf.in "$LOGDIR/$name.access.log"
      else
        start_nginx "$name" "$workers" "$cpus"
      fi
      ;;
    haproxy-*)
      ((HAVE_HAPROXY)) || {
        SKIP_REASON="haproxy is not installed"
        return 1
      }
      if [[ $name == haproxy-stick-table ]]; then
        start_haproxy "$name" 1 "$cpus" haproxy-limits.cfg.in
      elif [[ $name == haproxy-h2 || $name == haproxy-h2-idle ]]; then
        start_haproxy "$name" 1 "$cpus" haproxy-h2.cfg.in
      else
        start_haproxy "$name" "$workers" "$cpus"
      fi
      ;;
    *) die "unknown target $name" ;;
  esac
}

# ---------------------------------------------------------------------------------------------
# Throughput.

# wrk_parse FILE: prints "rps p50_us p99_us requests non2xx socket_errors" from wrk --latency
# output (latencies converted to µs; socket errors as "connect/read/write/timeout" or 0).
wrk_parse() {
  awk -f "$ROOT/tests/bench/wrk_parse.awk" "$1"
}

WRK_PIN=()
WRK_SCRIPT=() # wrk -s SCRIPT: set for every target of a section alike (keys.lua for `limits`)
WRK_SCRIPT_ARGS=() # after the URL: `-- ARGS...` for the script
WRK_SCHEME=http    # https for the tls variants
WRK_HEADERS=()     # -H ... for every target of a section alike (Connection: close for tlsnew)

# wrk_run DURATION TARGET [wrk options...]: wrk against TARGET with this section's pinning and
# script.
wrk_run() {
  local duration=$1 target=$2
  shift 2
  "${WRK_PIN[@]}" wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"$duration" "${WRK_SCRIPT[@]}" \
    "${WRK_HEADERS[@]}" "$@" "$WRK_SCHEME://127.0.0.1:${TARGET_PORT[$target]}$REQ_PATH" \
    "${WRK_SCRIPT_ARGS[@]}"
}

# measure VARIANT TARGET ROUND: one wrk run, one line in raw.tsv.
measure() {
  local variant=$1 target=$2 round=$3 out pid=${TARGET_PID[$2]}
  local cpu0 cpu1 be0 be1 rps p50 p99 requests non2xx sock cpu_req be_req
  out=$LOGDIR/wrk-$target-$round.txt
  cpu0=$(cpu_ticks "$pid")
  be0=$(cpu_ticks "$BACKEND_PID")
  wrk_run "$DURATION" "$target" --latency >"$out" 2>&1 || warn "wrk exited non-zero for $target (see $out)"
  cpu1=$(cpu_ticks "$pid")
  be1=$(cpu_ticks "$BACKEND_PID")
  read -r rps p50 p99 requests non2xx sock < <(wrk_parse "$out")
  if ((requests > 0)); then
    cpu_req=$(per_unit_us "$((cpu1 - cpu0))" "$requests")
    be_req=$(per_unit_us "$((be1 - be0))" "$requests")
  else
    cpu_req=nan be_req=nan
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$variant" "$target" "$round" "$rps" \
    "$p50" "$p99" "$requests" "$cpu_req" "$be_req" "$non2xx" "$sock" >>"$OUT_DIR/raw.tsv"
  log "$(printf '%-7s round %s %-10s %10s req/s  p50 %6s µs  p99 %6s µs  cpu %6s µs/req' \
    "$variant" "$round" "$target" "$rps" "$p50" "$p99" "$cpu_req")"
  if [[ $non2xx != 0 || $sock != 0 ]]; then
    warn "$target ($variant, round $round): wrk reported errors:"
    grep -E 'Non-2xx|Socket errors' "$out" | sed 's/^ */    | /' >&2
  fi
  mark_if_dead "$pid" "$target" "$variant" "$round"
}

# backend_alive: true while the backend runs; once it died, says so (with its log) and is false,
# and the caller skips the rest of its phase.
backend_alive() {
  is_alive "$BACKEND_PID" && return 0
  warn "the backend died: the rest of this phase is skipped. Its log:"
  show_log backend
  return 1
}

# per_unit_us TICKS N: CPU ticks spent on N units of work, as microseconds per unit.
per_unit_us() {
  awk -v t="$1" -v hz="$CLK_TCK" -v n="$2" 'BEGIN { printf "%.2f", t * 1e6 / hz / n }'
}

# mark_if_dead PID TARGET VARIANT ROUND: a target that died mid-run is logged, its log shown, and
# its remaining rounds skipped.
mark_if_dead() {
  local pid=$1 target=$2 variant=$3 round=$4
  if ! is_alive "$pid"; then
    warn "$target died during the run; its remaining rounds are skipped. Its log:"
    show_log "$target"
    TARGET_DEAD[$target]=1
    meta "$variant.died.$target" "in round $round (log: $LOGDIR/$target.log)"
  fi
}

# ---------------------------------------------------------------------------------------------
# Checks for the `limits` section: is the limit in each target's request path, and does the
# wrk script spread the load over LIMIT_KEYS keys? The answers go to meta.tsv and the summary.

# limit_header_check NAME: sluice answers admitted requests with RateLimit-Policy (docs/behaviour.md "Limits") only
# when the route's policy ran; a build without limits in the data path accepts the config but
# sends none, and its figures would be those of the plain path.
limit_header_check() {
  local name=$1 headers
  headers=$(curl -sS -D - -o /dev/null --max-time 2 -H 'X-API-Key: peer-compare-check' \
    "http://127.0.0.1:${TARGET_PORT[$name]}$REQ_PATH" 2>&1) || true
  local policy
  policy=$(grep -i -m1 '^ratelimit-policy:' <<<"$headers" | cut -d' ' -f2- | tr -d '\r') || true
  if [[ -n $policy ]]; then
    meta "limits.check.$name" "limit in the request path (RateLimit-Policy: $policy)"
  else
    warn "$name answers without a RateLimit-Policy header: this build does not run the limit" \
      "on requests, so its figures are the plain path's. Response headers:"
    tr -d '\r' <<<"$headers" | sed 's/^/    | /' >&2
    meta "limits.check.$name" \
      "NO RateLimit-Policy header: limit not in the request path, figures = plain path"
  fi
}

# tracked_keys NAME: how many keys NAME's limiter holds now, or why that cannot be read.
tracked_keys() {
  local name=$1
  case $name in
    sluice-limits)
      local port=${TARGET_ADMIN[$name]:-} metrics
      [[ -n $port ]] || {
        echo "n/a (no admin port in the ready line)"
        return 0
      }
      metrics=$(curl -fsS --max-time 2 "http://127.0.0.1:$port/metrics" 2>/dev/null) || {
        echo "n/a (GET /metrics failed)"
        return 0
      }
      awk '/^sluice_ratelimit_tracked_keys\{/ && /policy="bench"/ { print $NF; found = 1 }
           END { if (!found) print "n/a (no sluice_ratelimit_tracked_keys{policy=\"bench\"})" }' <<<"$metrics"
      ;;
    haproxy-stick-table)
      python3 - "${TARGET_SOCKET[$name]}" <<'PY' 2>/dev/null || echo "n/a (stats socket unreadable)"
import re, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
s.connect(sys.argv[1])
s.sendall(b"show table proxy\n")
data = b""
while chunk := s.recv(65536):
    data += chunk
m = re.search(rb"used:(\d+)", data)
print(m.group(1).decode() if m else "n/a (no table in the answer)")
PY
      ;;
    nginx-limit_req) echo "n/a (open-source nginx does not expose its limit_req zones)" ;;
    *) echo "n/a (no limit)" ;;
  esac
}

# throughput_phase VARIANT: starts the backend and every target, warms each up, then measures
# ROUNDS interleaved rounds (A B C ... A B C ...), so slow drifts in machine load (the other
# tenant's compile, thermal state) spread over all targets instead of biasing one.
# VARIANT is shared (section throughput), pinned or limits.
throughput_phase() {
  local variant=$1 proxy_cpus="" other_cpus="" targets round t started=()
  WRK_SCRIPT=() WRK_SCRIPT_ARGS=() WRK_SCHEME=http WRK_HEADERS=()
  case $variant in
    tls)
      proxy_cpus=0 other_cpus=1
      targets=(sluice-tls nginx-tls)
      [[ -z $BASELINE_BIN ]] || targets+=(base-tls)
      WRK_SCHEME=https
      log "=== TLS: keep-alive HTTPS (TLS 1.3, ECDSA P-256), pinned like PINNED ==="
      ;;
    tlsnew)
      proxy_cpus=0 other_cpus=1
      targets=(sluice-tls nginx-tls)
      [[ -z $BASELINE_BIN ]] || targets+=(base-tls)
      WRK_SCHEME=https WRK_HEADERS=(-H "Connection: close")
      log "=== TLS NEW CONNECTIONS: one request per TLS connection (a full handshake each)," \
        "pinned like PINNED ==="
      ;;
    pinned)
      proxy_cpus=0 other_cpus=1
      targets=(direct sluice-1 nginx-1 haproxy-1)
      [[ -z $BASELINE_BIN ]] || targets+=(base-1)
      log "=== PINNED: proxies on cpu 0; wrk and the backend on cpu 1 (1-worker configs only) ==="
      ;;
    redis)
      proxy_cpus=0 other_cpus=1
      targets=(sluice-limits sluice-redis sluice-hybrid)
      [[ -z $BASELINE_BIN ]] || targets+=(base-redis base-hybrid)
      WRK_SCRIPT=(-s "$PEERS_DIR/keys.lua") WRK_SCRIPT_ARGS=(-- "$LIMIT_KEYS")
      log "=== REDIS: the limit in the memory store against the Redis store, X-API-Key over" \
        "$LIMIT_KEYS keys; pinned like PINNED, redis-server with wrk and the backend ==="
      meta limit_keys "$LIMIT_KEYS"
      meta sync_ms "${SYNC_MS:-100}"
      ;;
    accesslog)
      proxy_cpus=0 other_cpus=1
      targets=(sluice-log nginx-log)
      log "=== ACCESS LOG: each proxy writes one line per request to a file; pinned like" \
        "PINNED ==="
      ;;
    limits)
      proxy_cpus=0 other_cpus=1
      targets=(sluice-1 sluice-limits nginx-limit_req haproxy-stick-table)
      WRK_SCRIPT=(-s "$PEERS_DIR/keys.lua") WRK_SCRIPT_ARGS=(-- "$LIMIT_KEYS")
      log "=== LIMITS: a per-key limit on every request, X-API-Key over $LIMIT_KEYS keys; pinned" \
        "like PINNED ==="
      meta limit_keys "$LIMIT_KEYS"
      ;;
    *)
      targets=(direct sluice-1 sluice-2 nginx-1 nginx-2 haproxy-1 haproxy-2)
      [[ -z $BASELINE_BIN ]] || targets+=(base-1 base-2)
      log "=== throughput, no pinning: wrk, backend and proxy share the machine's cores ==="
      ;;
  esac
  if [[ -n $proxy_cpus ]]; then
    if pinning_available; then
      meta "$variant.pinning" "proxy on cpu $proxy_cpus; wrk and the backend on cpu $other_cpus"
    else
      warn "cannot pin to cpus 0 and 1 ($(nproc) usable): running $variant unpinned"
      meta "$variant.pinning" "UNAVAILABLE ($(nproc) usable cpus): nothing pinned"
      proxy_cpus="" other_cpus=""
    fi
  fi
  enter_phase "$variant"
  pin_cmd "$other_cpus"
  WRK_PIN=("${PIN[@]}")
  start_backend backend "$other_cpus"
  [[ $variant != redis ]] || start_redis "$other_cpus"
  for t in "${targets[@]}"; do
    if [[ -n $TARGETS && " $TARGETS " != *" $t "* ]]; then
      meta "$variant.skipped.$t" "not in TARGETS"
      continue
    fi
    if start_target "$t" "$proxy_cpus"; then
      started+=("$t")
    else
      warn "skipping $t: $SKIP_REASON"
      meta "$variant.skipped.$t" "$SKIP_REASON"
    fi
  done
  TARGET_DEAD=()
  for t in "${started[@]}"; do
    [[ $t != sluice-limits ]] || limit_header_check "$t"
    log "warm-up $t ($WARMUP)"
    wrk_run "$WARMUP" "$t" >"$LOGDIR/warmup-$t.txt" 2>&1 ||
      warn "wrk exited non-zero warming up $t (see $LOGDIR/warmup-$t.txt)"
    if [[ $variant == limits && $t != sluice-1 ]]; then
      local keys
      keys=$(tracked_keys "$t")
      log "$t: keys tracked after the warm-up: $keys"
      meta "limits.keys.$t" "$keys"
    fi
  done
  for ((round = 1; round <= ROUNDS; round++)); do
    for t in "${started[@]}"; do
      backend_alive || break 2
      [[ -z ${TARGET_DEAD[$t]:-} ]] || continue
      local busy_before=""
      [[ $variant != redis ]] || busy_before="$(cpu_busy 0) $(cpu_busy 1)"
      if [[ $t == sluice-redis || $t == sluice-hybrid || $t == base-redis || $t == base-hybrid ]]; then
        local calls0 calls1 cpu0 cpu1
        calls0=$(redis_calls "$t") cpu0=$(redis_cpu_ticks)
        measure "$variant" "$t" "$round"
        calls1=$(redis_calls "$t") cpu1=$(redis_cpu_ticks)
        REDIS_CALLS[$t]=$((${REDIS_CALLS[$t]:-0} + calls1 - calls0))
        REDIS_TICKS[$t]=$((${REDIS_TICKS[$t]:-0} + cpu1 - cpu0))
        REDIS_REQUESTS[$t]=$((${REDIS_REQUESTS[$t]:-0} + $(tail -n 1 "$OUT_DIR/raw.tsv" | cut -f7)))
      else
        measure "$variant" "$t" "$round"
      fi
      [[ -z $busy_before ]] || add_cpu_busy "$t" "$busy_before" "$(cpu_busy 0) $(cpu_busy 1)"
    done
  done
  if [[ $variant == redis ]]; then
    redis_figures "$proxy_cpus"
  fi
  [[ $variant != accesslog ]] || access_log_lines "${started[@]}"
  stop_all
}

# syscalls_phase: each 1-worker target once under `strace -c -f` (pinned like PINNED): its system
# calls per proxied request, by name, with the failed ones (docs/benchmarks.md, "Limits at
# scale": a read that finds nothing costs a failed receive). One line per target and system call
# in syscalls.tsv.
# With `tlsnew`: sluice-tls and nginx-tls under the tlsnew variant's load (one request per TLS
# connection), so the counts are per new TLS connection.
syscalls_phase() {
  local variant=${1:-plain} targets=(sluice-1 nginx-1 haproxy-1) started=() t p out wrk_out
  local proxy_cpus=0 other_cpus=1 pids tracer requests non2xx
  WRK_SCRIPT=() WRK_SCRIPT_ARGS=() WRK_SCHEME=http WRK_HEADERS=()
  if [[ $variant == tlsnew ]]; then
    make_cert
    targets=(sluice-tls nginx-tls)
    WRK_SCHEME=https WRK_HEADERS=(-H "Connection: close")
  fi
  if [[ -n $BASELINE_BIN ]]; then
    [[ $variant == tlsnew ]] && targets+=(base-tls) || targets+=(base-1)
  fi
  if ! command -v strace >/dev/null; then
    log "installing strace with apt"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      strace >&2 || true
  fi
  if ! command -v strace >/dev/null; then
    warn "strace is unavailable: the syscalls section is skipped"
    meta syscalls.skipped "strace unavailable"
    return 0
  fi
  log "=== SYSCALLS ($variant): each proxy once under strace -c; pinned like PINNED ==="
  pinning_available || proxy_cpus="" other_cpus=""
  enter_phase syscalls
  pin_cmd "$other_cpus"
  WRK_PIN=("${PIN[@]}")
  start_backend backend "$other_cpus"
  for t in "${targets[@]}"; do
    if [[ -n $TARGETS && " $TARGETS " != *" $t "* ]]; then
      meta "syscalls.skipped.$t" "not in TARGETS"
    elif start_target "$t" "$proxy_cpus"; then
      started+=("$t")
    else
      warn "skipping $t: $SKIP_REASON"
      meta "syscalls.skipped.$t" "$SKIP_REASON"
    fi
  done
  for t in "${started[@]}"; do
    backend_alive || break
    wrk_run "$WARMUP" "$t" >"$LOGDIR/warmup-$t.txt" 2>&1 || true
    out=$LOGDIR/strace-$t.txt wrk_out=$LOGDIR/wrk-strace-$t.txt pids=()
    for p in $(pid_family "${TARGET_PID[$t]}"); do pids+=(-p "$p"); done
    strace -c -f -o "$out" "${pids[@]}" 2>"$LOGDIR/strace-$t.log" &
    tracer=$!
    sleep 1 # attached to every thread before the load starts
    wrk_run "$DURATION" "$t" >"$wrk_out" 2>&1 || warn "wrk exited non-zero for $t (see $wrk_out)"
    sleep 0.5
    kill -INT "$tracer" 2>/dev/null || true
    wait "$tracer" 2>/dev/null || true
    read -r _ _ _ requests non2xx _ < <(wrk_parse "$wrk_out")
    if [[ ! -s $out ]] || ((requests == 0)); then
      warn "$t: no strace summary or no request (see $LOGDIR/strace-$t.log, $wrk_out)"
      meta "syscalls.skipped.$t" "strace or wrk failed"
      continue
    fi
    [[ $non2xx == 0 ]] || warn "$t: $non2xx answers were not 2xx under strace (see $wrk_out)"
    # strace -c: "% time  seconds  usecs/call  calls  [errors]  syscall"; the errors column is
    # empty when nothing failed.
    awk -v t="$t" -v r="$requests" '
      $1 ~ /^[0-9.]+$/ && $NF != "total" && (NF == 5 || NF == 6) {
        printf "%s\t%s\t%s\t%s\t%s\n", t, $NF, $4, (NF == 6 ? $5 : 0), r
      }' "$out" >>"$OUT_DIR/syscalls.tsv"
    log "$t: $requests requests under strace, $(awk -F'\t' -v t="$t" \
      '$1 == t { n += $3; r = $5 } END { printf "%.2f", n / r }' "$OUT_DIR/syscalls.tsv")" \
      "system calls per request"
  done
  stop_all
}

# access_log_lines TARGETS...: how many lines each target's access log file holds, beside the
# requests wrk counted for it (warm-up not included), once both had a second to flush.
access_log_lines() {
  local t file lines requests
  sleep 1.5
  for t in "$@"; do
    file=$LOGDIR/$t.access.log
    lines=$( [[ -f $file ]] && wc -l <"$file" || echo 0)
    requests=$(awk -F'\t' -v t="$t" '$1 == "accesslog" && $2 == t { n += $7 } END { print n + 0 }' \
      "$OUT_DIR/raw.tsv")
    log "$t: $lines access log lines for $requests measured requests (plus the warm-up's)"
    meta "accesslog.lines.$t" "$lines lines in $file for $requests measured requests (plus the warm-up's)"
  done
}

# start_redis CPUS: a redis-server on a free port, no persistence (REDIS_PORT).
start_redis() {
  local cpus=$1
  local tool
  for tool in redis-server redis-cli redis-benchmark; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt package redis-server: dev.sh deps)"
  done
  REDIS_PORT=$(free_port) REDIS_SHA=""
  declare -gA REDIS_CALLS=() REDIS_REQUESTS=() REDIS_TICKS=() CPU_BUSY=()
  pin_cmd "$cpus"
  spawn redis "${PIN[@]}" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' \
    --appendonly no
  wait_for_line redis "$SPAWNED_PID" 'Ready to accept connections' || die "redis did not start"
  REDIS_PID=$SPAWNED_PID
  log "redis-server${cpus:+ (cpu $cpus)} on port $REDIS_PORT"
}

# redis_calls TARGET: how many commands TARGET sends the redis-server has run so far: EVALSHA for
# sluice-redis (exact mode); TIME, HINCRBY, PEXPIRE, HGETALL and HDEL for sluice-hybrid
# (commandstats also counts the calls a script makes, so those of exact mode are left out).
redis_calls() {
  local pattern='^cmdstat_evalsha:'
  [[ $1 != *-hybrid ]] || pattern='^cmdstat_(time|hincrby|pexpire|hgetall|hmget|hdel):'
  redis-cli -p "$REDIS_PORT" INFO commandstats | tr -d '\r' |
    awk -F'[=,]' -v p="$pattern" '$0 ~ p { n += $2 } END { print n + 0 }'
}

# cpu_busy CPU: "BUSY ALL", the clock ticks one cpu has been busy and all its ticks so far
# (/proc/stat; idle and iowait are not busy).
cpu_busy() {
  awk -v c="cpu$1" '$1 == c { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' \
    /proc/stat
}

# add_cpu_busy TARGET BEFORE AFTER: adds a round's busy and all ticks of cpu 0 and cpu 1 (each
# "BUSY0 ALL0 BUSY1 ALL1") to TARGET's sums. On two cores whichever of them is full caps req/s:
# the redis section reads them to tell whether the proxy or its load (wrk, the backend and
# redis-server, all on cpu 1) was the limit.
add_cpu_busy() {
  local b a sums i
  read -ra b <<<"$2"
  read -ra a <<<"$3"
  read -ra sums <<<"${CPU_BUSY[$1]:-0 0 0 0}"
  for i in 0 1 2 3; do
    sums[i]=$((sums[i] + a[i] - b[i]))
  done
  CPU_BUSY[$1]="${sums[*]}"
}

# redis_cpu_ticks: the redis-server's CPU time so far, in clock ticks (user + system).
redis_cpu_ticks() {
  awk '{ print $14 + $15 }' "/proc/$REDIS_PID/stat" 2>/dev/null || echo 0
}

# redis_figures CPUS: Redis commands per proxied request over the measured rounds, and the
# ceiling: redis-benchmark running the sliding-window script, one key per call,
# over the same number of keys, on CPUS.
redis_figures() {
  local cpus=$1 per_request ceiling="n/a" t calls requests
  for t in sluice-redis sluice-hybrid base-redis base-hybrid; do
    [[ $t != base-* || -n $BASELINE_BIN ]] || continue
    calls=${REDIS_CALLS[$t]:-0} requests=${REDIS_REQUESTS[$t]:-0} per_request="n/a"
    if ((requests > 0)); then
      per_request=$(awk -v c="$calls" -v r="$requests" 'BEGIN { printf "%.3f", c / r }')
    fi
    local ticks=${REDIS_TICKS[$t]:-0} cpu_us="n/a"
    if ((requests > 0)); then
      cpu_us=$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v r="$requests" \
        'BEGIN { printf "%.1f", t * 1e6 / hz / r }')
    fi
    meta "redis.commands_per_request.$t" "$per_request ($calls commands for $requests requests)"
    meta "redis.cpu_us_per_request.$t" "$cpu_us"
    log "redis: $t: $per_request commands and $cpu_us µs of redis-server CPU per request"
  done
  if [[ -n $REDIS_SHA ]]; then
    pin_cmd "$cpus"
    local out=$LOGDIR/redis-benchmark.csv
    "${PIN[@]}" redis-benchmark -p "$REDIS_PORT" -c "$CONNECTIONS" -n 500000 -r "$LIMIT_KEYS" \
      --csv EVALSHA "$REDIS_SHA" 1 'sluice:{bench:__rand_int__}:ring' 1 1000000000 60000 60 1 \
      >"$out" 2>&1 || warn "redis-benchmark failed (see $out)"
    ceiling=$(awk -F'","' 'NR == 2 { print $2 }' "$out" | tr -d '"')
  fi
  for t in "${!CPU_BUSY[@]}"; do
    local sums
    read -ra sums <<<"${CPU_BUSY[$t]}"
    ((sums[1] > 0 && sums[3] > 0)) || continue
    local busy
    busy=$(awk -v b0="${sums[0]}" -v a0="${sums[1]}" -v b1="${sums[2]}" -v a1="${sums[3]}" \
      'BEGIN { printf "%.0f %.0f", 100 * b0 / a0, 100 * b1 / a1 }')
    meta "redis.cpu_busy.$t" "$busy"
    log "redis: $t: cpu 0 (the proxy) busy ${busy% *} %, cpu 1 (wrk, backend, redis-server) ${busy#* } %"
  done
  meta "redis.ceiling.redis-benchmark" "${ceiling:-n/a} EVALSHA/s (-c $CONNECTIONS, $LIMIT_KEYS keys)"
  log "redis: redis-benchmark ceiling ${ceiling:-n/a}/s"
}

# ---------------------------------------------------------------------------------------------
# Memory.

record() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$OUT_DIR/memory.tsv"; }

# idle_run NAME LABEL: holds IDLE_CONNS idle connections on target NAME and records its RSS
# (in memory.tsv under test IDLE_TEST, default idle). IDLE_TLS=1: over TLS; IDLE_H2=1: h2
# connections (TLS, ALPN h2, preface and SETTINGS, no request); IDLE_COUNT: instead of IDLE_CONNS.
idle_run() {
  local name=$1 label=$2 pid=${TARGET_PID[$1]} port=${TARGET_PORT[$1]} before after client
  local count=${IDLE_COUNT:-$IDLE_CONNS} test=${IDLE_TEST:-idle}
  sleep 1
  before=$(rss_kb "$pid")
  log "idle: $count connections to $label (RSS before: $((before / 1024)) MB)"
  local tls_flag=()
  [[ -z ${IDLE_TLS:-} ]] || tls_flag=(--tls)
  [[ -z ${IDLE_H2:-} ]] || tls_flag=(--h2)
  spawn "idle-clients-$name" "$PYTHON" "$PEERS_DIR/idle_clients.py" --port "$port" \
    --count "$count" --path "$REQ_PATH" "${tls_flag[@]}"
  client=$SPAWNED_PID
  local deadline=$((SECONDS + 180))
  until grep -qs '^ready ' "$LOGDIR/idle-clients-$name.log"; do
    if ! is_alive "$client" || ((SECONDS > deadline)); then
      warn "the idle client did not get its connections up:"
      show_log "idle-clients-$name"
      return 1
    fi
    sleep 0.2
  done
  # Let the server settle before reading RSS: late frees, and pool janitors. sluice's request
  # context pool gives back what the connections' burst of first requests left in it within
  # two of its 5 s trim periods (docs/architecture.md); read sooner, it counted about 1.2 KB per
  # connection more at 2,000 idle TLS connections (docs/benchmarks.md, 2026-12-02).
  sleep "${IDLE_SETTLE:-11}"
  after=$(rss_kb "$pid")
  kill -USR1 "$client"
  sleep 0.5
  local ready status open failed per=nan
  ready=$(grep -m1 '^ready ' "$LOGDIR/idle-clients-$name.log")
  status=$(grep '^status ' "$LOGDIR/idle-clients-$name.log" | tail -n1)
  failed=$(sed -E 's/.*failed=([0-9]+).*/\1/' <<<"$ready")
  open=$(sed -E 's/.*open=([0-9]+).*/\1/' <<<"$status")
  if [[ $open =~ ^[0-9]+$ ]] && ((open > 0)); then
    per=$(awk -v b="$before" -v a="$after" -v n="$open" 'BEGIN { printf "%.2f", (a - b) / n }')
  fi
  log "idle: $label: $ready; after ${IDLE_SETTLE:-11}.5 s: $status; RSS $((after / 1024)) MB ($per KiB per" \
    "connection)"
  if grep -q '^failures' "$LOGDIR/idle-clients-$name.log"; then
    warn "idle client failures: $(grep '^failures' "$LOGDIR/idle-clients-$name.log")"
  fi
  is_alive "$pid" || warn "$label died while holding idle connections"
  record "$test" "$name" label "$label"
  record "$test" "$name" rss_before_kb "$before"
  record "$test" "$name" rss_with_conns_kb "$after"
  record "$test" "$name" failed "$failed"
  record "$test" "$name" open_after_hold "${open:-0}"
  record "$test" "$name" kib_per_conn "$per"
  stop_pid "$client"
}

idle_phase() {
  log "=== idle keep-alive connections: RSS with $IDLE_CONNS idle clients ==="
  enter_phase idle
  start_backend backend ""
  if start_sluice sluice-idle 1 ""; then
    idle_run sluice-idle "sluice threads=1" || warn "the sluice idle test failed"
  fi
  if ((HAVE_NGINX)) && start_nginx nginx-idle 1 ""; then
    idle_run nginx-idle "nginx 1 worker (master + worker RSS)" || warn "the nginx idle test failed"
  fi
  stop_all
}

# make_cert: the certificate every TLS target uses (sections tls and h2), made once a run in
# CERT_DIR.
make_cert() {
  [[ -z ${CERT_DIR:-} ]] || return 0
  CERT_DIR=$WORK/tls-cert
  "$ROOT/deploy/dev.sh" certs "$CERT_DIR" 2>/dev/null || die "cannot make the TLS certificate"
  cat "$CERT_DIR/tls.crt" "$CERT_DIR/tls.key" >"$CERT_DIR/tls.pem" # haproxy's form: one file
  meta tls.certificate "ECDSA P-256, $(openssl x509 -noout -subject -in "$CERT_DIR/tls.crt")"
}

# tls_phase: the certificate both servers use, then the keep-alive and new-connection
# variants, then the idle TLS connections.
tls_phase() {
  make_cert
  throughput_phase tls
  throughput_phase tlsnew
  log "=== idle TLS connections: RSS with $IDLE_CONNS idle TLS clients ==="
  enter_phase tls-idle
  start_backend backend ""
  if start_target sluice-tls-idle ""; then
    IDLE_TLS=1 idle_run sluice-tls-idle "sluice threads=1, TLS 1.3" ||
      warn "the sluice TLS idle test failed"
  fi
  if ((HAVE_NGINX)) && start_target nginx-tls-idle ""; then
    IDLE_TLS=1 idle_run nginx-tls-idle "nginx 1 worker, TLS 1.3 (master + worker RSS)" ||
      warn "the nginx TLS idle test failed"
  fi
  stop_all
}

# stream_run NAME LABEL CMD...: runs the curl CMD while sampling sluice's RSS every 100 ms.
stream_run() {
  local name=$1 label=$2 pid=${TARGET_PID[sluice-stream]} before peak result start elapsed
  shift 2
  before=$(rss_kb "$pid")
  : >"$LOGDIR/rss-$name.txt"
  spawn "sampler-$name" sample_rss "$LOGDIR/rss-$name.txt" "$pid"
  local sampler=$SPAWNED_PID
  start=$(date +%s.%N)
  result=$("$@" 2>"$LOGDIR/curl-$name.err") || result="curl failed: $(tr '\n' ' ' <"$LOGDIR/curl-$name.err")"
  elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
  stop_pid "$sampler"
  peak=$(sort -n "$LOGDIR/rss-$name.txt" | tail -n1)
  peak=${peak:-$before}
  log "stream: $label: $result in ${elapsed}s; RSS $((before / 1024)) MB -> peak $((peak / 1024)) MB (growth $(((peak - before) / 1024)) MB, $(wc -l <"$LOGDIR/rss-$name.txt") samples)"
  record stream "$name" label "$label"
  record stream "$name" result "$result"
  record stream "$name" seconds "$elapsed"
  record stream "$name" mb_per_s "$(awk -v b="$STREAM_BYTES" -v s="$elapsed" 'BEGIN { printf "%.0f", b / 1048576 / s }')"
  record stream "$name" rss_before_kb "$before"
  record stream "$name" rss_peak_kb "$peak"
  record stream "$name" samples "$(wc -l <"$LOGDIR/rss-$name.txt")"
  is_alive "$pid" || warn "sluice died during the $label transfer"
}

stream_phase() {
  log "=== streaming: $STREAM_BYTES bytes through sluice, RSS sampled every 100 ms ==="
  enter_phase stream
  start_backend backend "" demo # /bytes and /echo exist on the demo backend only
  # A long upstream timeout: the whole transfer must fit in it if it is a total deadline.
  start_sluice sluice-stream 1 "" 600000 || {
    warn "sluice did not start: streaming test skipped"
    return 0
  }
  local base=http://127.0.0.1:${TARGET_PORT[sluice-stream]}
  # Warm the paths (first upstream connection, parser buffers) so the baseline is fair.
  curl -fsS -o /dev/null "$base/bytes/1048576" || warn "GET /bytes/1048576 through sluice failed"
  head -c 1048576 /dev/zero | curl -fsS -o /dev/null -T - -X POST "$base/echo" ||
    warn "POST /echo (1 MiB) through sluice failed"
  sleep 0.5
  stream_run download "download GET /bytes/$STREAM_BYTES" \
    curl -sS -o /dev/null --max-time 600 -w 'status=%{http_code} bytes=%{size_download}' \
    "$base/bytes/$STREAM_BYTES"
  # curl -T - reads the pipe as it goes and sends it chunked: no side buffers the whole body.
  # shellcheck disable=SC2016 # $1 and $2 expand in the inner shell
  stream_run upload "upload POST /echo (chunked, echoed back)" \
    bash -c 'head -c "$1" /dev/zero | curl -sS -o /dev/null --max-time 600 -T - -X POST \
      -H "Content-Type: application/octet-stream" \
      -w "status=%{http_code} up=%{size_upload} down=%{size_download}" "$2"' \
    _ "$STREAM_BYTES" "$base/echo"
  stop_all
}

# ---------------------------------------------------------------------------------------------
# WebSocket tunnels: sluice_ws_load against the demo backend's /ws/echo through each proxy.

WS_PIN=() # the load tool's pinning (with the backend)

# seconds_of DURATION: wrk's `10s`, `500ms`, `2m` or `1h` as seconds, for sluice_ws_load.
seconds_of() {
  case $1 in
    *ms) awk -v v="${1%ms}" 'BEGIN { print v / 1000 }' ;;
    *s) echo "${1%s}" ;;
    *m) echo $((${1%m} * 60)) ;;
    *h) echo $((${1%h} * 3600)) ;;
    *) echo "$1" ;;
  esac
}

# json_field FILE KEY: the number KEY holds on the last JSON line of FILE ("" if none).
json_field() {
  grep '^{' "$1" 2>/dev/null | tail -n1 | sed -nE "s/.*\"$2\":([-0-9.e+]+).*/\1/p"
}

# ws_upgrade_check NAME: one WebSocket through target NAME (handshake and an echo). A proxy that
# does not tunnel the upgrade (the backend then answers 426) is skipped with the reason.
ws_upgrade_check() {
  local name=$1 out=$LOGDIR/upgrade-check-$1.txt
  if "$WS_LOAD_BIN" --url "ws://127.0.0.1:${TARGET_PORT[$name]}/ws/echo" --idle 1 --hold 0 \
    >"$out" 2>&1; then
    return 0
  fi
  warn "no WebSocket echo through $name:"
  sed 's/^/    | /' "$out" >&2
  SKIP_REASON="no WebSocket through it: $(grep -m1 '^sluice_ws_load:' "$out" || echo 'see the log')"
  return 1
}

# ws_measure VARIANT TARGET ROUND CONNECTIONS SIZE: one sluice_ws_load run (binary messages,
# WARMUP unmeasured, then DURATION measured), one line in raw.tsv: messages/s as rps, messages
# as requests, CPU per message over every message of the run (warm-up included), the tool's
# error count as socket_errors.
ws_measure() {
  local variant=$1 target=$2 round=$3 conns=$4 size=$5 out pid=${TARGET_PID[$2]}
  local cpu0 cpu1 be0 be1 rate p50 p99 messages total errors mib cpu_msg=nan be_msg=nan
  out=$LOGDIR/$variant-$target-$round.txt
  cpu0=$(cpu_ticks "$pid")
  be0=$(cpu_ticks "$BACKEND_PID")
  "${WS_PIN[@]}" "$WS_LOAD_BIN" --url "ws://127.0.0.1:${TARGET_PORT[$target]}/ws/echo" \
    --connections "$conns" --size "$size" --duration "$(seconds_of "$DURATION")" \
    --warmup "$(seconds_of "$WARMUP")" --binary >"$out" 2>&1 ||
    warn "sluice_ws_load exited non-zero for $target (see $out)"
  cpu1=$(cpu_ticks "$pid")
  be1=$(cpu_ticks "$BACKEND_PID")
  rate=$(json_field "$out" messages_per_sec)
  p50=$(json_field "$out" p50_us)
  p99=$(json_field "$out" p99_us)
  messages=$(json_field "$out" messages)
  total=$(json_field "$out" messages_total)
  errors=$(json_field "$out" errors)
  mib=$(json_field "$out" mib_per_sec)
  if [[ -n $total ]] && ((total > 0)); then
    cpu_msg=$(per_unit_us "$((cpu1 - cpu0))" "$total")
    be_msg=$(per_unit_us "$((be1 - be0))" "$total")
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$variant" "$target" "$round" \
    "${rate:-nan}" "${p50:-nan}" "${p99:-nan}" "${messages:-0}" "$cpu_msg" "$be_msg" 0 \
    "${errors:-no result}" >>"$OUT_DIR/raw.tsv"
  log "$(printf '%-7s round %s %-10s %10s msg/s %8s MiB/s  p50 %6s µs  p99 %6s µs  cpu %6s µs/msg' \
    "$variant" "$round" "$target" "${rate:-n/a}" "${mib:-n/a}" "${p50:-n/a}" "${p99:-n/a}" "$cpu_msg")"
  if [[ ${errors:-x} != 0 ]]; then
    warn "$target ($variant, round $round): sluice_ws_load reported errors:"
    grep -v '^{' "$out" | head -n 10 | sed 's/^/    | /' >&2
  fi
  mark_if_dead "$pid" "$target" "$variant" "$round"
}

# ws_idle_run NAME LABEL: holds WS_IDLE idle tunnels through target NAME (sluice_ws_load --idle:
# handshake and one echo each, then silent) and records its RSS before and 2 s into the hold.
ws_idle_run() {
  local name=$1 label=$2 pid=${TARGET_PID[$1]} port=${TARGET_PORT[$1]} before after client
  local out=$LOGDIR/ws-idle-$1.log deadline rc=0 open failed alive per=nan
  sleep 1
  before=$(rss_kb "$pid")
  log "ws idle: $WS_IDLE tunnels through $label (RSS before: $((before / 1024)) MB)"
  spawn "ws-idle-$name" "$WS_LOAD_BIN" --url "ws://127.0.0.1:$port/ws/echo" --idle "$WS_IDLE" \
    --hold "$WS_HOLD"
  client=$SPAWNED_PID
  deadline=$((SECONDS + 180))
  until grep -qs '^ready ' "$out"; do
    if ! is_alive "$client" || ((SECONDS > deadline)); then
      warn "sluice_ws_load did not get its tunnels up:"
      show_log "ws-idle-$name"
      stop_pid "$client"
      return 1
    fi
    sleep 0.2
  done
  sleep 2 # let the proxy settle (late frees) before reading RSS
  after=$(rss_kb "$pid")
  # The tool holds WS_HOLD s from `ready`, then echoes once more on every tunnel and closes.
  deadline=$((SECONDS + WS_HOLD + 60))
  while is_alive "$client" && ((SECONDS < deadline)); do sleep 0.2; done
  if is_alive "$client"; then
    warn "sluice_ws_load still runs $((WS_HOLD + 60)) s after ready: stopped"
    stop_pid "$client"
    rc=timeout
  else
    wait "$client" 2>/dev/null || rc=$?
  fi
  open=$(json_field "$out" idle_open)
  failed=$(json_field "$out" failed)
  alive=$(json_field "$out" alive_after_hold)
  if [[ -n $open ]] && ((open > 0)); then
    per=$(awk -v b="$before" -v a="$after" -v n="$open" 'BEGIN { printf "%.2f", (a - b) / n }')
  fi
  log "ws idle: $label: $(grep -m1 '^ready ' "$out"); RSS $((after / 1024)) MB ($per KiB per" \
    "tunnel); after the hold: ${alive:-?} of ${open:-?} still echo"
  [[ $rc == 0 ]] || warn "sluice_ws_load exited $rc: $(grep -v -e '^{' -e '^ready ' "$out" | head -n 3)"
  is_alive "$pid" || warn "$label died while holding idle tunnels"
  record ws-idle "$name" label "$label"
  record ws-idle "$name" rss_before_kb "$before"
  record ws-idle "$name" rss_with_tunnels_kb "$after"
  record ws-idle "$name" tunnels "${open:-0}"
  record ws-idle "$name" failed "${failed:-?}"
  record ws-idle "$name" alive_after_hold "${alive:-0}"
  record ws-idle "$name" kib_per_tunnel "$per"
}

# websocket_phase: both proxies pinned (proxy on cpu 0, the load tool and the demo backend on
# cpu 1), the ws-1k and ws-1m variants in interleaved rounds, then the idle tunnels (unpinned,
# like the other idle tests).
websocket_phase() {
  local proxy_cpus=0 other_cpus=1 t round spec variant conns size started=()
  log "=== WEBSOCKET: echo through tunnels to the demo backend's /ws/echo, pinned like PINNED ==="
  if ! pinning_available; then
    warn "cannot pin to cpus 0 and 1 ($(nproc) usable): running websocket unpinned"
    proxy_cpus="" other_cpus=""
  fi
  for variant in ws-1k ws-1m; do
    meta "$variant.pinning" "$([[ -n $proxy_cpus ]] &&
      echo "proxy on cpu 0; sluice_ws_load and the backend on cpu 1" ||
      echo "UNAVAILABLE ($(nproc) usable cpus): nothing pinned")"
  done
  enter_phase websocket
  pin_cmd "$other_cpus"
  WS_PIN=("${PIN[@]}")
  start_backend backend "$other_cpus" demo # /ws/echo exists on the demo backend only
  for t in sluice-ws nginx-ws; do
    if [[ -n $TARGETS && " $TARGETS " != *" $t "* ]]; then
      meta "ws-1k.skipped.$t" "not in TARGETS"
      meta "ws-1m.skipped.$t" "not in TARGETS"
      continue
    fi
    if start_target "$t" "$proxy_cpus" && ws_upgrade_check "$t"; then
      started+=("$t")
    else
      warn "skipping $t: $SKIP_REASON"
      meta "ws-1k.skipped.$t" "$SKIP_REASON"
      meta "ws-1m.skipped.$t" "$SKIP_REASON"
    fi
  done
  TARGET_DEAD=()
  for spec in "ws-1k 64 1024" "ws-1m 8 1048576"; do
    read -r variant conns size <<<"$spec"
    meta "ws_connections.$variant" "$conns"
    meta "ws_message_bytes.$variant" "$size"
    for ((round = 1; round <= ROUNDS; round++)); do
      for t in "${started[@]}"; do
        backend_alive || break 3
        [[ -z ${TARGET_DEAD[$t]:-} ]] || continue
        ws_measure "$variant" "$t" "$round" "$conns" "$size"
      done
    done
  done
  stop_all
  log "=== idle WebSocket tunnels: RSS with $WS_IDLE idle tunnels held ${WS_HOLD}s ==="
  meta ws_idle "$WS_IDLE"
  enter_phase websocket-idle
  start_backend backend "" demo
  for t in sluice-ws nginx-ws; do
    [[ -z $TARGETS || " $TARGETS " == *" $t "* ]] || continue
    if start_target "$t-idle" ""; then
      ws_idle_run "$t-idle" "$(label_of_ws "$t")" || warn "the $t idle tunnel test failed"
    else
      warn "skipping $t-idle: $SKIP_REASON"
    fi
  done
  stop_all
}

# label_of_ws NAME: the memory table's label for a websocket target.
label_of_ws() {
  case $1 in
    sluice-ws) echo "sluice threads=1" ;;
    *) echo "nginx 1 worker (master + worker RSS)" ;;
  esac
}

# ---------------------------------------------------------------------------------------------
# HTTP/2: h2load over TLS with ALPN h2 through each proxy, then idle h2 connections.

H2_PIN=() # h2load's pinning (with the backend)

# h2load_run DURATION TARGET OUT [LOG]: one h2load run (H2_CONNS connections x H2_STREAMS
# streams, one thread) against TARGET, its output to OUT; LOG: its per-request log.
h2load_run() {
  local duration=$1 target=$2 out=$3 log_file=${4:-}
  local log_opt=()
  [[ -z $log_file ]] || log_opt=("--log-file=$log_file")
  "${H2_PIN[@]}" h2load -c "$H2_CONNS" -m "$H2_STREAMS" -t 1 -D "$duration" "${log_opt[@]}" \
    "https://127.0.0.1:${TARGET_PORT[$target]}$REQ_PATH" >"$out" 2>&1
}

# h2_protocol OUT: the application protocol h2load negotiated ("none" if it printed none).
h2_protocol() {
  sed -nE 's/^Application protocol: *([^ ]+).*/\1/p' "$1" | head -n1 | grep . || echo none
}

# h2_parse OUT LOG: prints "rps p50_us p99_us requests non2xx errors" from h2load's output (OUT)
# and its per-request log (LOG: start, status, µs to the end of the response; p50 and p99 by
# nearest rank over the requests that got a status). non2xx counts 4xx and 5xx (like wrk's
# "Non-2xx or 3xx"); errors is failed/errored/timeout, or 0.
h2_parse() {
  local out=$1 log_file=$2 p50=nan p99=nan
  if [[ -s $log_file ]]; then
    read -r p50 p99 < <(awk -F'\t' '$2 > 0 { print $3 }' "$log_file" | sort -n |
      awk 'function rank(p,  i) { i = int(p * NR); if (i < p * NR) i++; return v[i < 1 ? 1 : i] }
           { v[NR] = $1 }
           END { if (NR == 0) print "nan nan"; else print rank(0.50), rank(0.99) }')
  fi
  awk -v p50="$p50" -v p99="$p99" '
    /^finished in / { rps = $4 }
    /^requests: / { requests = $6; errors = $10 "/" $12 "/" $14 }
    /^status codes: / { non2xx = $7 + $9 }
    END {
      printf "%s %s %s %d %d %s\n", rps == "" ? "nan" : rps, p50, p99, requests, non2xx,
        errors == "" ? "no result" : errors == "0/0/0" ? "0" : errors
    }' "$out"
}

# h2_measure TARGET ROUND: one h2load run of DURATION, one line in raw.tsv (variant H2_VARIANT).
# CPU per request counts the whole run: h2load's requests are all measured (no warm-up phase
# inside the run; the section's warm-up is a run of its own).
h2_measure() {
  local target=$1 round=$2 out log_file pid=${TARGET_PID[$1]} variant=$H2_VARIANT
  local cpu0 cpu1 be0 be1 rps p50 p99 requests non2xx errors protocol cpu_req=nan be_req=nan
  out=$LOGDIR/h2load-$target-$round.txt
  log_file=$LOGDIR/h2load-$target-$round.requests.tsv
  cpu0=$(cpu_ticks "$pid")
  be0=$(cpu_ticks "$BACKEND_PID")
  h2load_run "$DURATION" "$target" "$out" "$log_file" ||
    warn "h2load exited non-zero for $target (see $out)"
  cpu1=$(cpu_ticks "$pid")
  be1=$(cpu_ticks "$BACKEND_PID")
  read -r rps p50 p99 requests non2xx errors < <(h2_parse "$out" "$log_file")
  rm -f "$log_file" # hundreds of thousands of lines a run; the percentiles are in raw.tsv
  protocol=$(h2_protocol "$out")
  [[ $protocol == h2 ]] || errors="protocol $protocol; $errors"
  if ((requests > 0)); then
    cpu_req=$(per_unit_us "$((cpu1 - cpu0))" "$requests")
    be_req=$(per_unit_us "$((be1 - be0))" "$requests")
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$variant" "$target" "$round" "$rps" \
    "$p50" "$p99" "$requests" "$cpu_req" "$be_req" "$non2xx" "$errors" >>"$OUT_DIR/raw.tsv"
  log "$(printf '%-8s round %s %-9s %10s req/s  p50 %6s µs  p99 %6s µs  cpu %6s µs/req  %s' \
    "$variant" "$round" "$target" "$rps" "$p50" "$p99" "$cpu_req" "$protocol")"
  if [[ $non2xx != 0 || $errors != 0 ]]; then
    warn "$target ($variant, round $round): h2load reported errors ($errors; 4xx+5xx: $non2xx):"
    grep -E '^(requests|status codes|Application protocol):' "$out" | sed 's/^/    | /' >&2
  fi
  mark_if_dead "$pid" "$target" "$variant" "$round"
}

# h2_phase: the tls section's certificate; both proxies pinned (proxy on cpu 0, h2load and the
# backend on cpu 1), a WARMUP run each (which must negotiate h2), ROUNDS interleaved rounds; then
# the idle h2 connections (unpinned, like the other idle tests).
h2_phase() {
  local proxy_cpus=0 other_cpus=1 t round protocol variant=$H2_VARIANT started=()
  command -v h2load >/dev/null || die "h2load is missing (apt package nghttp2-client: dev.sh deps)"
  make_cert
  log "=== HTTP/2: h2load -c $H2_CONNS -m $H2_STREAMS over TLS 1.3 + ALPN h2, pinned like PINNED ==="
  if pinning_available; then
    meta "$variant.pinning" "proxy on cpu $proxy_cpus; h2load and the backend on cpu $other_cpus"
  else
    warn "cannot pin to cpus 0 and 1 ($(nproc) usable): running $variant unpinned"
    meta "$variant.pinning" "UNAVAILABLE ($(nproc) usable cpus): nothing pinned"
    proxy_cpus="" other_cpus=""
  fi
  meta h2_load "h2load -c $H2_CONNS -m $H2_STREAMS -t 1 -D $DURATION"
  meta h2_version "$(h2load --version 2>&1 | head -n1)"
  enter_phase h2
  pin_cmd "$other_cpus"
  H2_PIN=("${PIN[@]}")
  start_backend backend "$other_cpus"
  for t in sluice-h2 nginx-h2 haproxy-h2; do
    if [[ -n $TARGETS && " $TARGETS " != *" $t "* ]]; then
      meta "$variant.skipped.$t" "not in TARGETS"
      continue
    fi
    if ! start_target "$t" "$proxy_cpus"; then
      warn "skipping $t: $SKIP_REASON"
      meta "$variant.skipped.$t" "$SKIP_REASON"
      continue
    fi
    log "warm-up $t ($WARMUP)"
    h2load_run "$WARMUP" "$t" "$LOGDIR/warmup-$t.txt" ||
      warn "h2load exited non-zero warming up $t (see $LOGDIR/warmup-$t.txt)"
    protocol=$(h2_protocol "$LOGDIR/warmup-$t.txt")
    meta "$variant.protocol.$t" "$protocol"
    if [[ $protocol != h2 ]]; then
      warn "h2load negotiated '$protocol' with $t, not h2:"
      sed 's/^/    | /' "$LOGDIR/warmup-$t.txt" | tail -n 15 >&2
      meta "$variant.skipped.$t" "h2load negotiated '$protocol', not h2 (see $LOGDIR/warmup-$t.txt)"
      stop_pid "${TARGET_PID[$t]}"
      continue
    fi
    started+=("$t")
  done
  TARGET_DEAD=()
  for ((round = 1; round <= ROUNDS; round++)); do
    for t in "${started[@]}"; do
      backend_alive || break 2
      [[ -z ${TARGET_DEAD[$t]:-} ]] || continue
      h2_measure "$t" "$round"
    done
  done
  stop_all
  log "=== idle h2 connections: RSS with $H2_IDLE idle HTTP/2 clients ==="
  meta h2_idle "$H2_IDLE"
  enter_phase h2-idle
  start_backend backend ""
  for t in sluice-h2 nginx-h2 haproxy-h2; do
    [[ -z $TARGETS || " $TARGETS " == *" $t "* ]] || continue
    if start_target "$t-idle" ""; then
      IDLE_H2=1 IDLE_COUNT=$H2_IDLE IDLE_TEST=h2-idle idle_run "$t-idle" "$(label_of_h2 "$t")" ||
        warn "the $t idle h2 test failed"
    else
      warn "skipping $t-idle: $SKIP_REASON"
    fi
  done
  stop_all
}

# label_of_h2 NAME: the memory table's label for an h2 target.
label_of_h2() {
  case $1 in
    sluice-h2) echo "sluice threads=1, h2 (TLS 1.3)" ;;
    haproxy-h2) echo "haproxy 1 thread, h2 (TLS 1.3)" ;;
    *) echo "nginx 1 worker, h2 (TLS 1.3; master + worker RSS)" ;;
  esac
}

# ---------------------------------------------------------------------------------------------
# Key cardinality.

# keys_requests FILE: how many requests a wrk output counts (0 if none).
keys_requests() {
  local rps p50 p99 requests rest
  read -r rps p50 p99 requests rest < <(wrk_parse "$1")
  [[ $requests =~ ^[0-9]+$ ]] && echo "$requests" || echo 0
}

# keys_recent SPANS NOW: requests sent within the 60 s before NOW, from SPANS (lines "start end
# requests", epoch seconds), a straddling span counted in proportion. keys.lua visits every key
# once per lap, so that is how many distinct keys were sent in the last minute, capped by the
# keys: what a limiter that forgets keys idle for 60 s holds (nginx's limit_req frees a node 60 s
# after its last request; sluice's 60 s window does the same, and says how many it holds).
keys_recent() {
  awk -v now="$2" '{ from = ($1 > now - 60) ? $1 : now - 60
                     if ($2 > from && $2 > $1) n += $3 * ($2 - from) / ($2 - $1) }
                   END { printf "%d\n", n }' <<<"$1"
}

# keys_phase: per count in KEY_COUNTS, fresh sluice-limits and nginx-limit_req on cpu 0, wrk
# (keys.lua) and the backend on cpu 1; ROUNDS interleaved rounds; then RSS growth per key.
keys_phase() {
  local keys t round started t0 n
  local -A rss0 sent spans
  log "=== KEYS: key cardinality ($KEY_COUNTS keys), a fresh sluice-limits and nginx-limit_req" \
    "per count, pinned like PINNED ==="
  meta key_counts "$KEY_COUNTS"
  for keys in $KEY_COUNTS; do
    local variant=keys-$keys proxy_cpus=0 other_cpus=1
    if ! pinning_available; then
      warn "cannot pin to cpus 0 and 1: running $variant unpinned"
      proxy_cpus="" other_cpus=""
    fi
    meta "$variant.pinning" "${proxy_cpus:+proxy on cpu 0; wrk and the backend on cpu 1}"
    WRK_SCRIPT=(-s "$PEERS_DIR/keys.lua") WRK_SCRIPT_ARGS=(-- "$keys") WRK_SCHEME=http
    WRK_HEADERS=()
    enter_phase "$variant"
    pin_cmd "$other_cpus"
    WRK_PIN=("${PIN[@]}")
    start_backend backend "$other_cpus"
    # Each sized for the keys: nginx's zone at 256 bytes per key (its nodes take about 130), at
    # least the usual 10 MB; sluice's store.max_keys at twice the keys, at least its default.
    NGINX_ZONE_MB=$(((keys * 256 + 1048575) / 1048576))
    ((NGINX_ZONE_MB >= 10)) || NGINX_ZONE_MB=10
    SLUICE_MAX_KEYS=$((2 * keys > 1000000 ? 2 * keys : 1000000))
    started=()
    for t in sluice-limits nginx-limit_req; do
      [[ -z $TARGETS || " $TARGETS " == *" $t "* ]] || continue
      if start_target "$t" "$proxy_cpus"; then
        started+=("$t")
        sleep 0.5
        rss0[$t]=$(rss_kb "${TARGET_PID[$t]}")
        sent[$t]=0
      else
        warn "skipping $t: $SKIP_REASON"
        meta "$variant.skipped.$t" "$SKIP_REASON"
      fi
    done
    unset NGINX_ZONE_MB SLUICE_MAX_KEYS
    TARGET_DEAD=()
    for t in "${started[@]}"; do
      log "warm-up $t ($WARMUP)"
      t0=$EPOCHREALTIME
      wrk_run "$WARMUP" "$t" >"$LOGDIR/warmup-$t.txt" 2>&1 ||
        warn "wrk exited non-zero warming up $t (see $LOGDIR/warmup-$t.txt)"
      n=$(keys_requests "$LOGDIR/warmup-$t.txt")
      sent[$t]=$((sent[$t] + n))
      spans[$t]+="$t0 $EPOCHREALTIME $n"$'\n'
    done
    for ((round = 1; round <= ROUNDS; round++)); do
      for t in "${started[@]}"; do
        backend_alive || break 2
        [[ -z ${TARGET_DEAD[$t]:-} ]] || continue
        t0=$EPOCHREALTIME
        measure "$variant" "$t" "$round"
        n=$(tail -n 1 "$OUT_DIR/raw.tsv" | cut -f7)
        sent[$t]=$((sent[$t] + n))
        spans[$t]+="$t0 $EPOCHREALTIME $n"$'\n'
      done
    done
    for t in "${started[@]}"; do
      [[ -z ${TARGET_DEAD[$t]:-} ]] || continue
      local rss1 held recent
      rss1=$(rss_kb "${TARGET_PID[$t]}")
      recent=$(keys_recent "${spans[$t]}" "$EPOCHREALTIME")
      ((recent < keys)) || recent=$keys
      held=$recent
      if [[ $t == sluice-limits ]]; then
        held=$(tracked_keys "$t")
        [[ $held =~ ^[0-9]+$ ]] || held=$recent
      fi
      record "$variant" "$t" keys_sent_last_minute "$recent"
      record "$variant" "$t" keys "$keys"
      record "$variant" "$t" requests "${sent[$t]}"
      record "$variant" "$t" keys_held "$held"
      record "$variant" "$t" rss_start_kb "${rss0[$t]}"
      record "$variant" "$t" rss_end_kb "$rss1"
      log "$(printf '%-11s %-16s RSS %s -> %s KiB, %s keys held (%s requests sent)' \
        "$variant" "$t" "${rss0[$t]}" "$rss1" "$held" "${sent[$t]}")"
    done
    stop_all
  done
}

# ---------------------------------------------------------------------------------------------

main() {
  local sections=("$@") s
  ((${#sections[@]} > 0)) ||
    sections=(throughput pinned limits accesslog redis idle stream tls websocket h2)
  for s in "${sections[@]}"; do
    case $s in
      throughput | pinned | limits | accesslog | redis | idle | stream | tls | h2 | keys) ;;
      syscalls | tlssyscalls) ;;
      websocket) NEED_WS_LOAD=1 ;;
      *) die "unknown section '$s' (throughput, pinned, limits, accesslog, redis, idle, stream," \
        "tls, websocket, h2, keys, syscalls, tlssyscalls)" ;;
    esac
  done
  [[ $LIMIT_KEYS =~ ^[1-9][0-9]*$ ]] || die "LIMIT_KEYS must be a positive integer"
  [[ $KEY_COUNTS =~ ^[1-9][0-9]*( [1-9][0-9]*)*$ ]] ||
    die "KEY_COUNTS must be positive integers separated by single spaces"
  [[ $WS_IDLE =~ ^[1-9][0-9]*$ ]] || die "WS_IDLE must be a positive integer"
  [[ $H2_IDLE =~ ^[1-9][0-9]*$ ]] || die "H2_IDLE must be a positive integer"
  if [[ ! $WS_HOLD =~ ^[0-9]+$ ]] || ((WS_HOLD < 3)); then
    die "WS_HOLD must be a whole number of seconds, at least 3 (RSS is read 2 s into the hold)"
  fi
  [[ $BACKEND =~ ^(auto|demo|nginx)$ ]] || die "BACKEND must be auto, demo or nginx"
  mkdir -p "$OUT_DIR"
  # Clear the previous run's work directory, but only one this script made (OUT_DIR is free).
  if [[ -d $WORK && ! -e $WORK/.peer_compare ]] && [[ -n $(ls -A "$WORK") ]]; then
    die "$WORK exists and was not made by this script: refusing to clear it"
  fi
  rm -rf "$WORK"
  mkdir -p "$WORK/bin"
  touch "$WORK/.peer_compare"
  rm -f "$OUT_DIR"/{raw.tsv,memory.tsv,meta.tsv,syscalls.tsv,summary.json,summary.md}
  ensure_tools
  raise_fd_limit
  snapshot_binaries

  printf 'key\tvalue\n' >"$OUT_DIR/meta.tsv"
  printf 'variant\ttarget\tround\trps\tp50_us\tp99_us\trequests\tcpu_us_per_req\tbackend_cpu_us_per_req\tnon2xx\tsocket_errors\n' >"$OUT_DIR/raw.tsv"
  printf 'test\ttarget\tmetric\tvalue\n' >"$OUT_DIR/memory.tsv"
  printf 'target\tsyscall\tcalls\terrors\trequests\n' >"$OUT_DIR/syscalls.tsv"
  meta date "$(date -u '+%Y-%m-%d %H:%M UTC')"
  meta load_start "$(cut -d' ' -f1-3 /proc/loadavg)"
  meta cpus "$(nproc)"
  meta versions "$(versions)"
  meta rounds "$ROUNDS"
  meta duration "$DURATION"
  meta warmup "$WARMUP"
  meta connections "$CONNECTIONS"
  meta wrk_threads "$WRK_THREADS"
  meta path "$REQ_PATH"
  meta backend "$([[ $BACKEND == nginx ]] && echo 'nginx static, 1 worker' || echo 'sluice-demo-backend --threads 1')"
  meta clk_tck "$CLK_TCK"
  log "load average now: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs; results need a quiet machine)"

  for s in "${sections[@]}"; do
    case $s in
      throughput) throughput_phase shared ;;
      pinned) throughput_phase pinned ;;
      limits) throughput_phase limits ;;
      accesslog) throughput_phase accesslog ;;
      redis) throughput_phase redis ;;
      idle) idle_phase ;;
      stream) stream_phase ;;
      tls) tls_phase ;;
      websocket) websocket_phase ;;
      h2) h2_phase ;;
      keys) keys_phase ;;
      syscalls) syscalls_phase plain ;;
      tlssyscalls) syscalls_phase tlsnew ;;
    esac
  done

  meta load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  python3 "$PEERS_DIR/summarize.py" "$OUT_DIR"
  log "results: $OUT_DIR/summary.md, summary.json (medians + raw rounds), raw.tsv, memory.tsv"
}

main "$@"
