#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The developer's entry point. Subcommands:
#   deps    install the Debian 12 packages sluice needs (apt-get, only what is missing)
#   build   release build: build/bin/sluice and the test programs
#   test    deps + format check + release build and ALL tests (with the deployment artefacts:
#           deploy/, Dockerfile) + ASan/UBSan build (clang) and all C++ tests + each fuzz
#           target briefly + TSan build of the concurrency and proxy integration tests; exits
#           non-zero on any failure
#   run     build, start two demo backends and the gateway on conf/sluice.json (foreground)
#   bench   release build, then the Google Benchmark suite with medians of 5 repetitions, then
#           the proxy against nginx and haproxy (tests/bench/peer_compare.sh; docs/benchmarks.md)
#           `bench suite [--benchmark_*]` or `bench peers [throughput|pinned|limits|accesslog|redis|idle|stream|tls|h2|keys|syscalls]`: one only;
#           `bench failover`, `bench insight` (MODES="on control sketch watch" ROUNDS=12 ...)
#   tidy    clang-tidy over every translation unit (the `tidy` preset)
#   fuzz    `fuzz [SECONDS] [TARGET...]` (60): the libFuzzer targets (the `asan` preset: clang,
#           ASan + UBSan), each SECONDS from tests/fuzz/corpus, two at a time; prints executions
#           and coverage per target, exits non-zero on a finding (docs/fuzzing.md)
#   certs   a local CA and a certificate for localhost in deploy/compose/tls (the Compose stack's
#           HTTPS listener; kept if present; never commit them)
#   package release build of the binary only, then cpack: the Debian package
#           build/package/sluice_<version>_<arch>.deb (docs/packaging.md); prints its path
#   soak    `soak [MINUTES]` (10): release sluice and demo backend, then tests/soak/soak.py: mixed
#           traffic with backends, Redis, reloads, admin changes and hostile clients as faults;
#           checks its invariants every 5 s, exits non-zero on a breach (docs/soak.md)
set -euo pipefail
cd "$(dirname "$0")/.."

# The packages docs/behaviour.md "Build and layout" names: build and test libraries, test
# servers, benchmark peers.
readonly PRODUCT_PACKAGES=(
  libboost1.81-dev nlohmann-json3-dev prometheus-cpp-dev libspdlog-dev
  libgtest-dev libgmock-dev libbenchmark-dev libssl-dev libhiredis-dev libnghttp2-dev pkg-config
  libmimalloc-dev
  libhttp-parser-dev
  redis-server prometheus
  wrk nginx haproxy
)
# The toolchain. Present on the machines CI uses; listed so a bare Debian 12 works too.
# dpkg-dev: dpkg-shlibdeps, which writes the Depends of the .deb (dev.sh package).
# clang and libclang-rt-dev: the asan preset (clang's sanitizers, libFuzzer for dev.sh fuzz).
readonly TOOLCHAIN_PACKAGES=(g++ cmake ninja-build clang-format dpkg-dev clang libclang-rt-dev)
# The deployment artefact tests (tests/deploy): Debian's python3 with PyYAML; the TLS tests: the
# openssl command line (tests/support/test_pki.hpp) and curl as a real client; the upgrade
# tests: python3-websockets as an independent WebSocket client and server (haproxy, above, is
# their real PROXY protocol sender); the package test: systemd-analyze (package systemd; only
# the tool is used, nothing is started). logrotate is not listed: it pulls in a cron daemon, and
# the test skips its check without it. The dashboard test (tests/ui): chromium, run headless
# as a real browser over the DevTools protocol, and fonts-dejavu-core so its screenshot has text.
# The identity tests (tests/integration/identity): python3-cryptography signs the tokens and
# makes the key server's certificate, a JOSE signer independent of sluice's reader. The gRPC
# tests (tests/integration/grpc): python3-grpcio, Google's gRPC, as real client and server.
readonly TEST_TOOL_PACKAGES=(python3 python3-yaml python3-websockets python3-cryptography openssl
  curl nghttp2-client systemd chromium fonts-dejavu-core python3-grpcio)

# Seconds each fuzz target runs in `dev.sh test` (CI): long enough to replay its corpus and
# mutate a little, short enough for the CI budget.
readonly FUZZ_CI_SECONDS=10

log() { printf '==> %s\n' "$*" >&2; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# ensure_packages PKG...: apt-installs those not installed yet (apt-get update first).
ensure_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$pkg")
    fi
  done
  if ((${#missing[@]} == 0)); then
    log "deps: every package is installed"
    return
  fi
  log "deps: installing ${missing[*]}"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}

cmd_deps() {
  ensure_packages "${PRODUCT_PACKAGES[@]}" "${TOOLCHAIN_PACKAGES[@]}" "${TEST_TOOL_PACKAGES[@]}"
}

# configure_and_build PRESET [TARGET...]
configure_and_build() {
  local preset=$1
  shift
  log "configure: preset $preset"
  cmake --preset "$preset" >/dev/null
  log "build: preset $preset ${*:+(targets: $*)}"
  if (($# > 0)); then
    cmake --build --preset "$preset" --target "$@"
  else
    cmake --build --preset "$preset"
  fi
}

cmd_build() {
  configure_and_build release
  cmake --build --preset release --target benchmarks
  log "built build/bin/sluice, the tests and the benchmarks"
}

format_check() {
  log "format: clang-format --dry-run -Werror"
  git ls-files -z -- '*.cpp' '*.hpp' | xargs -0 clang-format --dry-run -Werror
}

cmd_test() {
  local started=$SECONDS
  cmd_deps
  format_check
  configure_and_build release # (the benchmark programs are not part of `all`: not built here)
  log "test: release, all tests ($((SECONDS - started)) s so far)"
  ctest --preset release -j2

  configure_and_build asan
  log "test: ASan + UBSan, all tests ($((SECONDS - started)) s so far)"
  ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=1:strict_init_order=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --preset asan -j2

  # The fuzz targets under libFuzzer (built above, in the same clang ASan build), each briefly:
  # they start from their corpus and find nothing new in a short run (the long runs are
  # `dev.sh fuzz`; docs/fuzzing.md).
  log "test: fuzz, each target ${FUZZ_CI_SECONDS} s ($((SECONDS - started)) s so far)"
  # A fixed seed: a short run then finds what the change broke, not what luck turns up.
  FUZZ_SEED=1 tests/fuzz/run_fuzzers.sh "$FUZZ_CI_SECONDS"

  # The TSan build is limited to the multi-threaded hammers (label "concurrency") and the
  # gateway with its proxy, admin and Redis integration tests (admin changes under proxy load,
  # Redis connections on every worker thread) and the fleet (its own thread beside the control
  # thread); the test preset runs what was built.
  configure_and_build tsan store_concurrency_tests breaker_concurrency_tests demo_concurrency_tests \
    insight_concurrency_tests proxy_integration_tests admin_integration_tests redis_integration_tests \
    fleet_integration_tests
  log "test: TSan, concurrency, proxy, admin, Redis and fleet integration tests ($((SECONDS - started)) s so far)"
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --preset tsan -j2
  log "test: all passed in $((SECONDS - started)) s"
}

# Starts the two demo backends conf/sluice.json points at (127.0.0.1:9001 and :9002), then the
# gateway in the foreground; Ctrl-C drains it and the trap stops the backends.
cmd_run() {
  cmd_deps
  cmd_build
  ./build/bin/sluice --config conf/sluice.json --check
  local port
  # Global, not local: the EXIT trap runs after this function has returned.
  RUN_BACKEND_PIDS=()
  trap 'kill "${RUN_BACKEND_PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true' EXIT
  for port in 9001 9002; do
    ./build/bin/sluice-demo-backend --address 127.0.0.1 --port "$port" --threads 1 &
    RUN_BACKEND_PIDS+=($!)
  done
  cat >&2 <<'TRY'
==> run: demo backends on 127.0.0.1:9001 and :9002, gateway on :8080, admin on 127.0.0.1:9901.
    Try, from another terminal:
      curl -i http://127.0.0.1:8080/demo/ok                  # proxied (X-Backend-Port alternates)
      for i in $(seq 105); do curl -s -o /dev/null -w '%{http_code}\n' \
        http://127.0.0.1:8080/demo/ok; done | sort | uniq -c  # 100 x 200, then 5 x 429
      curl -s http://127.0.0.1:9901/metrics | grep '^sluice_'  # Prometheus metrics
      curl -X POST 'http://127.0.0.1:9001/control?capacity=16&service_ms=10'  # a backend that queues
      curl -s http://127.0.0.1:9901/admin/backends  # /overload's adaptive limit under load
                                                    # (docs/latency-protection.md)
    The limit is per user (here: your client IP) and per minute; `curl -i` shows RateLimit-Policy
    and RateLimit on every answer, and Retry-After on a 429. Tune it live with the admin API
    (docs/admin-api.md; open on loopback unless SLUICE_ADMIN_TOKEN is set). Ctrl-C drains and stops.
TRY
  ./build/bin/sluice --config conf/sluice.json
}

# bench_suite [--benchmark_*...]: the Google Benchmark suite (limiter, breaker, memory).
bench_suite() {
  configure_and_build release sluice_bench
  mkdir -p build/bench
  log "bench: load average now: $(cut -d' ' -f1-3 /proc/loadavg) (results need a quiet machine)"
  ./build/bin/sluice_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_out=build/bench/results.json --benchmark_out_format=json "$@" |
    grep -E '^(Benchmark|-+$|.*_median)'
  log "bench: full results in build/bench/results.json"
}

# bench_peers [SECTION...]: sluice vs nginx and haproxy under wrk, plus memory checks. Settings
# (ROUNDS, DURATION, BACKEND, ...) come from the environment: see tests/bench/peer_compare.sh.
bench_peers() {
  configure_and_build release sluice sluice-demo-backend sluice_ws_load
  log "bench: peer comparison (tests/bench/peer_compare.sh $*)"
  tests/bench/peer_compare.sh "$@"
  log "bench: peer results in build/bench/peers/summary.md and summary.json"
}

# bench_failover [SECTION...]: endpoint failover (one of three endpoints killed, one flaky)
# through sluice, nginx and haproxy (tests/bench/failover_compare.sh).
bench_failover() {
  configure_and_build release sluice sluice-demo-backend
  log "bench: failover comparison (tests/bench/failover_compare.sh $*)"
  tests/bench/failover_compare.sh "$@"
  log "bench: failover results in build/bench/failover/summary.md"
}

# bench_insight: the data-path cost of operator insight, `off` beside each mode of MODES on
# equal CPU budgets (tests/bench/insight_compare.sh; needs a writable cgroup cpu controller).
bench_insight() {
  configure_and_build release sluice sluice-demo-backend
  log "bench: operator insight's cost (tests/bench/insight_compare.sh)"
  tests/bench/insight_compare.sh
  log "bench: insight results in build/bench/insight/summary.md"
}

cmd_bench() {
  cmd_deps
  case "${1:-}" in
    insight)
      bench_insight
      ;;
    failover)
      shift
      bench_failover "$@"
      ;;
    suite)
      shift
      bench_suite "$@"
      ;;
    peers)
      shift
      bench_peers "$@"
      ;;
    *)
      bench_suite "$@" # any --benchmark_* arguments are the suite's
      bench_peers
      ;;
  esac
}

# cmd_fuzz [SECONDS] [TARGET...]: builds the libFuzzer programs of the asan preset and runs
# tests/fuzz/run_fuzzers.sh.
cmd_fuzz() {
  local seconds=${1:-60}
  (($# > 0)) && shift
  [[ $seconds =~ ^[0-9]+$ ]] || { log "fuzz: SECONDS must be a number, not '$seconds'" && exit 2; }
  cmd_deps
  configure_and_build asan fuzzers
  tests/fuzz/run_fuzzers.sh "$seconds" "$@"
}

cmd_tidy() {
  cmd_deps
  ensure_packages clang-tidy
  configure_and_build tidy
}

# cmd_certs [DIR]: a throwaway CA and a localhost certificate (ECDSA P-256, 90 days) for the
# Compose stack's HTTPS listener (docs/tls.md). Keeps existing files: rotate by removing them.
cmd_certs() {
  local dir=${1:-deploy/compose/tls}
  mkdir -p "$dir"
  if [[ -f $dir/tls.crt && -f $dir/tls.key ]]; then
    log "certs: $dir/tls.crt and tls.key exist; remove them to make new ones"
    return
  fi
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 90 \
    -subj "/CN=sluice local CA" -keyout "$dir/ca.key" -out "$dir/ca.crt" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -keyout "$dir/tls.key" -out "$dir/tls.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$dir/ext.cnf"
  openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 90 -extfile "$dir/ext.cnf" -out "$dir/tls.crt" 2>/dev/null
  rm -f "$dir/tls.csr" "$dir/ext.cnf" "$dir/ca.srl"
  # The container runs as an unprivileged user that does not own the file: a local key only.
  chmod 0644 "$dir/tls.key"
  log "certs: $dir/tls.crt (localhost, 127.0.0.1; trust $dir/ca.crt), $dir/tls.key"
}

# cmd_soak [MINUTES]: the soak test against the real binary (docs/soak.md). The release build
# is shared by everyone working in this checkout, so it is built under the build lock.
cmd_soak() {
  local minutes=${1:-10}
  log "soak: building sluice and sluice-demo-backend (release, under /tmp/sluice-build.lock)"
  if [[ ! -f build/CMakeCache.txt ]]; then
    flock /tmp/sluice-build.lock cmake --preset release >/dev/null
  fi
  flock /tmp/sluice-build.lock cmake --build --preset release -j2 --target sluice sluice-demo-backend
  log "soak: $minutes minutes; logs and summary.json in build/soak"
  /usr/bin/python3 tests/soak/soak.py "$minutes"
}

# cmd_package: the Debian package (deploy/package; docs/packaging.md) of a release build of the
# binary alone. cpack installs into its own staging directory, never into the system.
cmd_package() {
  cmd_deps
  configure_and_build release sluice
  log "package: cpack (DEB) into build/package"
  cpack --config build/CPackConfig.cmake -B build/package >/dev/null
  local version deb
  version=$(./build/bin/sluice --version | cut -d' ' -f2)
  deb=build/package/sluice_${version}_$(dpkg --print-architecture).deb
  [[ -f $deb ]] || { log "package: cpack did not write $deb" && exit 1; }
  log "package: $deb (inspect: dpkg-deb -I $deb; install: apt install ./$deb)"
  echo "$deb"
}

usage() {
  # The comment block at the top of this file, from its second line.
  awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0"
}

main() {
  local cmd=${1:-}
  (($# > 0)) && shift
  case "$cmd" in
    deps) cmd_deps ;;
    build) cmd_build ;;
    test) cmd_test ;;
    run) cmd_run ;;
    bench) cmd_bench "$@" ;;
    tidy) cmd_tidy ;;
    fuzz) cmd_fuzz "$@" ;;
    certs) cmd_certs "$@" ;;
    package) cmd_package ;;
    soak) cmd_soak "$@" ;;
    -h | --help | help) usage ;;
    *)
      usage >&2
      exit 2
      ;;
  esac
}

# One line, so bash has read it whole before main runs: a long command (soak, bench) finishes
# cleanly even when someone edits this file meanwhile (bash reads a script as it goes).
main "$@"; exit $?
