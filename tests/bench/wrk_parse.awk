# SPDX-License-Identifier: Apache-2.0
# Reads the output of `wrk --latency` and prints one line:
#   rps p50_us p99_us requests non2xx socket_errors
# latencies in µs; socket errors as "connect/read/write/timeout", or 0 when wrk reported none;
# rps "nan" when wrk printed no rate (it failed). Used by peer_compare.sh and insight_compare.sh.
# usage: awk -f tests/bench/wrk_parse.awk WRK_OUTPUT
function us(v) {
  if (v ~ /us$/) return v + 0
  if (v ~ /ms$/) return v * 1000
  if (v ~ /[0-9]s$/) return v * 1000000
  if (v ~ /m$/) return v * 60000000
  if (v ~ /h$/) return v * 3600000000
  return v + 0
}
/^ +50% / { p50 = us($2) }
/^ +99% / { p99 = us($2) }
/ requests in / { requests = $1 }
/^Requests\/sec:/ { rps = $2 }
/Non-2xx or 3xx responses:/ { non2xx = $NF }
/Socket errors:/ { gsub(/,/, ""); sock = $4 "/" $6 "/" $8 "/" $10 }
END {
  printf "%s %.0f %.0f %s %d %s\n", rps == "" ? "nan" : rps, p50, p99,
    requests == "" ? 0 : requests, non2xx, sock == "" ? "0" : sock
}
