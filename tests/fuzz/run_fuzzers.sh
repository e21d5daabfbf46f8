#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the libFuzzer programs of the asan preset (build/asan/bin/fuzz_<target>), two at a time,
# each for SECONDS, from the seed corpus in tests/fuzz/corpus/<target> plus what earlier runs
# found (build/fuzz/corpus/<target>, not committed), with its dictionary. Prints one line per
# target (executions, speed, coverage, corpus) and a summary in build/fuzz/summary.md; exits
# non-zero when any target found something: the input is in build/fuzz/findings/<target>/
# (docs/fuzzing.md, "A finding").
#   run_fuzzers.sh SECONDS [TARGET...]      (default: every target)
# FUZZ_JOBS (2): targets at a time; FUZZ_SEED: libFuzzer's seed (random when unset).
set -euo pipefail
cd "$(dirname "$0")/../.."

readonly SECONDS_EACH=${1:?usage: run_fuzzers.sh SECONDS [TARGET...]}
shift
readonly ALL_TARGETS=(request_head response_head chunked_body http2_frames h2_upstream_response proxy_header config_text
  admin_request redis_reply access_log_line request_differential jose_token sliding_window)
targets=("$@")
((${#targets[@]} > 0)) || targets=("${ALL_TARGETS[@]}")
readonly BIN=build/asan/bin
readonly OUT=build/fuzz
readonly JOBS=${FUZZ_JOBS:-2}

dictionary_of() {
  case "$1" in
    request_head | response_head | chunked_body | request_differential)
      echo tests/fuzz/dict/http.dict ;;
    http2_frames | h2_upstream_response) echo tests/fuzz/dict/h2.dict ;;
    proxy_header) echo tests/fuzz/dict/proxy.dict ;;
    config_text | admin_request | jose_token) echo tests/fuzz/dict/json.dict ;;
    redis_reply) echo tests/fuzz/dict/resp.dict ;;
    access_log_line) echo tests/fuzz/dict/access_log.dict ;;
    sliding_window) echo "" ;;  # binary operations: no dictionary
    *) echo "unknown fuzz target: $1" >&2; return 1 ;;
  esac
}

# run_one TARGET: one libFuzzer run; its log in build/fuzz/logs/TARGET.log.
run_one() {
  local target=$1 dict
  dict=$(dictionary_of "$target")
  mkdir -p "$OUT/corpus/$target" "$OUT/findings/$target" "$OUT/logs"
  # -rss_limit_mb: one input must not take more than this (a leak or a blow-up is a finding);
  # -timeout: nor longer than this many seconds. Leaks are findings too (ASan at exit).
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$BIN/fuzz_$target" "$OUT/corpus/$target" "tests/fuzz/corpus/$target" \
    ${dict:+-dict="$dict"} -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
    -max_len=8192 -print_final_stats=1 -artifact_prefix="$OUT/findings/$target/" \
    ${FUZZ_SEED:+-seed="$FUZZ_SEED"} \
    >"$OUT/logs/$target.log" 2>&1
}

# summary_of TARGET STATUS: one Markdown table row from the run's log.
summary_of() {
  local target=$1 status=$2 log=$OUT/logs/$1.log execs rate cov ft corpus
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  corpus=$(find "$OUT/corpus/$target" -type f | wc -l)
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$target" "${execs:-?}" "${rate:-?}" \
    "${cov:-?}" "${ft:-?}" "$corpus" "$status"
}

echo "==> fuzz: ${#targets[@]} targets, ${SECONDS_EACH} s each, $JOBS at a time" >&2
declare -A pids=()
failed=()
rows=()
pending=("${targets[@]}")
while ((${#pending[@]} > 0 || ${#pids[@]} > 0)); do
  while ((${#pending[@]} > 0 && ${#pids[@]} < JOBS)); do
    run_one "${pending[0]}" &
    pids[${pending[0]}]=$!
    pending=("${pending[@]:1}")
  done
  wait -n || true
  for target in "${!pids[@]}"; do
    if ! kill -0 "${pids[$target]}" 2>/dev/null; then
      status=ok
      wait "${pids[$target]}" || status=FINDING
      [[ $status == ok ]] || failed+=("$target")
      rows+=("$(summary_of "$target" "$status")")
      echo "${rows[-1]}" >&2
      unset "pids[$target]"
    fi
  done
done

{
  echo "| target | executions | exec/s | coverage (edges) | features | corpus | result |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}" | sort
} >"$OUT/summary.md"
echo "==> fuzz: summary in $OUT/summary.md" >&2
if ((${#failed[@]} > 0)); then
  for target in "${failed[@]}"; do
    echo "==> fuzz: FINDING in $target: $(ls "$OUT/findings/$target" | head -3 | tr '\n' ' ')" >&2
    grep -m3 -E 'ERROR|runtime error|fuzz check failed|deadly signal' "$OUT/logs/$target.log" >&2 || true
  done
  exit 1
fi
