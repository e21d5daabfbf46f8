# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by instruction_count.sh and keyed_instruction_count.sh: a server run under callgrind
# on cpu 0, waited for and stopped.

SERVER_PID=

# die MESSAGE: says what went wrong (as the sourcing script), stops the server, exits 1.
die() {
  echo "$(basename "$0" .sh): $*" >&2
  stop_server
  exit 1
}

# require_tools HINT TOOL...: dies naming the first TOOL missing from PATH, with HINT (how to
# install it).
require_tools() {
  local hint=$1 tool
  shift
  for tool in "$@"; do
    command -v "$tool" >/dev/null || die "$tool not found ($hint)"
  done
}

# start_server PROFILE LOG URL [CURL_ARGS...] -- COMMAND [ARGS...]: starts COMMAND under
# callgrind (CALLGRIND_OPTS, an array, adds options), its output to LOG, and waits up to 120 s
# until URL answers curl (with CURL_ARGS).
start_server() {
  local profile=$1 log=$2 url=$3
  shift 3
  local curl_args=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    curl_args+=("$1")
    shift
  done
  shift
  taskset -c 0 valgrind --tool=callgrind "${CALLGRIND_OPTS[@]}" --callgrind-out-file="$profile" \
    "$@" >"$log" 2>&1 &
  SERVER_PID=$!
  local deadline=$((SECONDS + 120))
  until curl -sk -o /dev/null "${curl_args[@]}" "$url"; do
    kill -0 "$SERVER_PID" 2>/dev/null || die "the server exited: $log"
    ((SECONDS < deadline)) || die "the server did not answer $url within 120 s"
    sleep 1
  done
}

# stop_server: TERM, then KILL two seconds later (the profile was dumped before).
stop_server() {
  [[ -n $SERVER_PID ]] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  sleep 2
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
}
