#!/usr/bin/env bash
# shellcheck disable=SC2034 # PIN and CLK_TCK are set here for the sourcing script
# SPDX-License-Identifier: Apache-2.0
# Shell helpers of the comparison benchmarks, sourced (not run) by peer_compare.sh and
# overload_compare.sh: logging, background processes stopped on exit, readiness waits, config
# templates, CPU pinning and /proc readings.
#
# The sourcing script sets, before it sources this file:
#   BENCH_TAG        the log prefix ("[BENCH_TAG] ...")
#   WORK             its work directory: logs and configs go to LOGDIR, which starts as WORK and
#                    moves with enter_phase
#   READY_TIMEOUT_S  optional: how long a start-up may take (15 s)
#   REQ_PATH         optional: the path wait_for_http asks for (/ok)
# Sourcing installs EXIT, INT and TERM traps that stop every process spawn started.

: "${READY_TIMEOUT_S:=15}"

log() { printf '[%s] %s\n' "$BENCH_TAG" "$*" >&2; }
warn() { printf '[%s] WARNING: %s\n' "$BENCH_TAG" "$*" >&2; }
die() {
  printf '[%s] ERROR: %s\n' "$BENCH_TAG" "$*" >&2
  exit 1
}

as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    warn "not root and no sudo: cannot run '$*'"
    return 1
  fi
}

# ---------------------------------------------------------------------------------------------
# Processes. Everything the benchmark starts goes through spawn, so the EXIT trap can stop it.

PIDS=()
SPAWNED_PID=
LOGDIR=$WORK # each phase gets its own directory under WORK (see enter_phase)

# enter_phase NAME: from now on logs, configs and wrk outputs go to $WORK/NAME/.
enter_phase() {
  LOGDIR=$WORK/$1
  mkdir -p "$LOGDIR"
}

# spawn NAME CMD...: runs CMD in the background, stdout+stderr to $LOGDIR/NAME.log.
spawn() {
  local name=$1
  shift
  "$@" >"$LOGDIR/$name.log" 2>&1 &
  SPAWNED_PID=$!
  PIDS+=("$SPAWNED_PID")
}

# stop_pid PID: SIGTERM, up to 5 s grace (sluice drains, nginx stops its workers), then SIGKILL.
stop_pid() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# stop_all: stops every spawned process, newest first (clients before servers).
stop_all() {
  local i
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    stop_pid "${PIDS[i]}"
  done
  PIDS=()
}

on_exit() {
  local rc=$?
  stop_all
  if ((rc == 130 || rc == 143)); then
    log "interrupted; everything it started is stopped"
  elif ((rc != 0)); then
    log "failed (exit $rc); logs and configs are in $WORK"
  fi
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

is_alive() { kill -0 "$1" 2>/dev/null; }

# show_log NAME: the last lines of a spawned process's log, for error messages.
show_log() { tail -n 15 "$LOGDIR/$1.log" 2>/dev/null | sed 's/^/    | /' >&2 || true; }

# wait_for_line NAME PID REGEX: until $LOGDIR/NAME.log has a line matching REGEX (sets READY_LINE).
wait_for_line() {
  local name=$1 pid=$2 regex=$3 deadline=$((SECONDS + READY_TIMEOUT_S))
  READY_LINE=
  while ((SECONDS < deadline)); do
    READY_LINE=$(grep -m1 -E "$regex" "$LOGDIR/$name.log" 2>/dev/null || true)
    [[ -n $READY_LINE ]] && return 0
    if ! is_alive "$pid"; then
      warn "$name exited before printing /$regex/:"
      show_log "$name"
      return 1
    fi
    sleep 0.1
  done
  warn "$name printed no /$regex/ within ${READY_TIMEOUT_S}s:"
  show_log "$name"
  return 1
}

# wait_for_http NAME PID PORT [SCHEME]: until GET REQ_PATH on PORT answers 200 (https: any
# certificate).
wait_for_http() {
  local name=$1 pid=$2 port=$3 deadline=$((SECONDS + READY_TIMEOUT_S))
  while ((SECONDS < deadline)); do
    curl -fsSk -o /dev/null --max-time 1 "${4:-http}://127.0.0.1:$port${REQ_PATH:-/ok}" 2>/dev/null &&
      return 0
    if ! is_alive "$pid"; then
      warn "$name exited during start-up:"
      show_log "$name"
      return 1
    fi
    sleep 0.1
  done
  warn "$name did not answer GET ${REQ_PATH:-/ok} on port $port within ${READY_TIMEOUT_S}s:"
  show_log "$name"
  return 1
}

# free_port: a port nothing listens on now (the kernel's choice; nginx and haproxy need one).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# render TEMPLATE OUT KEY=VALUE...: copies TEMPLATE to OUT with every @KEY@ replaced.
render() {
  local text pair
  text=$(<"$1")
  for pair in "${@:3}"; do
    text=${text//@${pair%%=*}@/${pair#*=}}
  done
  printf '%s\n' "$text" >"$2"
}

# pin_cmd CPUS: sets PIN to the taskset prefix for CPUS (empty array: no pinning).
pin_cmd() {
  if [[ -n $1 ]]; then
    PIN=(taskset -c "$1")
  else
    PIN=()
  fi
}

# ---------------------------------------------------------------------------------------------
# /proc readings.

CLK_TCK=$(getconf CLK_TCK)
readonly CLK_TCK

# pid_family PID...: each PID and its direct children (nginx's workers are the master's children).
pid_family() {
  local pid
  for pid in "$@"; do
    echo "$pid"
    pgrep -P "$pid" 2>/dev/null || true
  done
}

# cpu_ticks PID...: utime + stime (clock ticks, all threads) summed over the PIDs and children.
cpu_ticks() {
  local total=0 pid stat fields
  for pid in $(pid_family "$@"); do
    { stat=$(<"/proc/$pid/stat"); } 2>/dev/null || continue # it may have exited since
    # Field 2 (comm) may contain spaces: split after its closing parenthesis, where field 3
    # starts; utime and stime are fields 14 and 15.
    read -ra fields <<<"${stat##*) }"
    total=$((total + fields[11] + fields[12]))
  done
  echo "$total"
}

# rss_kb PID...: VmRSS (kB) summed over the PIDs and their children.
rss_kb() {
  local total=0 pid key value _
  for pid in $(pid_family "$@"); do
    while read -r key value _; do
      if [[ $key == VmRSS: ]]; then
        total=$((total + value))
        break
      fi
    done 2>/dev/null <"/proc/$pid/status" || true
  done
  echo "$total"
}

# sample_rss OUT PID...: appends rss_kb every 100 ms to OUT until killed or the PID exits.
sample_rss() {
  local out=$1
  shift
  while is_alive "$1"; do
    rss_kb "$@" >>"$out"
    sleep 0.1
  done
}
# nginx_user_directive: a root master would run its workers as "nobody", who cannot write to
# the work directory; as root, keep them as the current user. (Non-root: the directive is void.)
nginx_user_directive() {
  if [[ $(id -u) -eq 0 ]]; then echo "user $(id -un) $(id -gn);"; fi
}

# pinning_available: cpus 0 and 1 exist for this process and taskset may bind to them.
pinning_available() {
  (($(nproc) >= 2)) && taskset -c 0 true 2>/dev/null && taskset -c 1 true 2>/dev/null
}

