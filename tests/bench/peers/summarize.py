#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns the raw files tests/bench/peer_compare.sh wrote into summary.json and summary.md.

Inputs in OUT_DIR (tab-separated, with a header line):
  raw.tsv     one line per wrk run: variant target round rps p50_us p99_us requests
              cpu_us_per_req backend_cpu_us_per_req non2xx socket_errors
              (the websocket variants ws-1k and ws-1m: one line per sluice_ws_load run,
              messages/s as rps, messages as requests, CPU per message, the tool's error
              count as socket_errors; the h2 variant h2-64x10: one line per h2load run, p50 and
              p99 from its per-request log, 4xx+5xx as non2xx, failed/errored/timeout as
              socket_errors)
  memory.tsv  test target metric value   (idle connections, streaming results, idle
              WebSocket tunnels, idle h2 connections)
  syscalls.tsv target syscall calls errors requests  (the `syscalls` section: strace -c
              of one wrk run per target; absent or header-only when it did not run)
  meta.tsv    key value                  (date, load, versions, settings; and per section
              SECTION.skipped.TARGET, SECTION.died.TARGET, SECTION.pinning, and for `limits`
              limits.check.TARGET and limits.keys.TARGET, shown beside the tables; for the
              websocket variants ws_connections.VARIANT and ws_message_bytes.VARIANT; for
              h2 h2_load, h2_version, h2_idle and H2VARIANT.protocol.TARGET)
Prints the Markdown tables (also written to summary.md).
"""

import csv
import json
import statistics
import sys
from pathlib import Path

LABELS = {
    "direct": "backend direct (no proxy)",
    "sluice-1": "sluice threads=1",
    "sluice-2": "sluice threads=2",
    "base-1": "sluice threads=1, the baseline build (BASELINE_BIN)",
    "base-2": "sluice threads=2, the baseline build (BASELINE_BIN)",
    "base-tls": "sluice threads=1, HTTPS, the baseline build (BASELINE_BIN)",
    "base-redis": "sluice threads=1, the same limit in Redis, the baseline build (BASELINE_BIN)",
    "base-hybrid": "sluice threads=1, the same limit in Redis, mode hybrid, the baseline build "
                   "(BASELINE_BIN)",
    "nginx-1": "nginx 1 worker",
    "nginx-2": "nginx 2 workers",
    "haproxy-1": "haproxy nbthread 1",
    "haproxy-2": "haproxy nbthread 2",
    "sluice-limits": "sluice threads=1, limit policy + breaker",
    "nginx-limit_req": "nginx 1 worker, limit_req",
    "haproxy-stick-table": "haproxy nbthread 1, stick table + deny rule",
    "sluice-redis": "sluice threads=1, the same limit in Redis (store redis)",
    "sluice-hybrid": "sluice threads=1, the same limit in Redis, mode hybrid (sync_ms = $SYNC_MS, 100 unless set)",
    "sluice-log": "sluice threads=1, access log to a file",
    "nginx-log": "nginx 1 worker, access log to a file (buffer=64k flush=1s)",
    "sluice-tls": "sluice threads=1, HTTPS (TLS 1.3, ECDSA P-256)",
    "nginx-tls": "nginx 1 worker, HTTPS (TLS 1.3, the same certificate)",
    "sluice-ws": "sluice threads=1, WebSocket tunnel (route /ws)",
    "nginx-ws": "nginx 1 worker, WebSocket proxying (location /ws)",
    "sluice-h2": "sluice threads=1, HTTP/2 (TLS 1.3, ALPN h2)",
    "nginx-h2": "nginx 1 worker, HTTP/2 (`listen ... ssl http2`, the same certificate)",
    "haproxy-h2": "haproxy nbthread 1, HTTP/2 (`bind ... ssl alpn h2,http/1.1`, the same "
                  "certificate)",
}
VARIANTS = {
    "shared": "no pinning: wrk, backend and proxy share both cores",
    "pinned": "PINNED: proxy on cpu 0 (taskset -c 0), wrk + backend on cpu 1",
    "limits": "LIMITS: a per-key limit on every request (X-API-Key over {keys} keys), "
              "pinned like PINNED",
    "accesslog": "ACCESS LOG: each proxy writes one JSON line per request to a file, pinned like "
                 "PINNED",
    "redis": "REDIS: the same limit in the memory store and in Redis (X-API-Key over {keys} "
             "keys), pinned like PINNED, redis-server on cpu 1 with wrk and the backend",
    "tls": "TLS: keep-alive HTTPS, pinned like PINNED",
    "tlsnew": "TLS NEW CONNECTIONS: one request per connection (`Connection: close`, a full "
              "TLS 1.3 handshake each; req/s = new connections/s), pinned like PINNED",
    "ws-1k": "WEBSOCKET 1 KiB: echo through a tunnel, many small messages, pinned like PINNED",
    "ws-1m": "WEBSOCKET 1 MiB: echo through a tunnel, large messages, pinned like PINNED",
    "h2-64x10": "HTTP/2: h2load, 64 connections x 10 concurrent streams over TLS 1.3 + ALPN h2, "
                "pinned like PINNED (h2load with the backend on cpu 1)",
}
# The `websocket` section's variants (sluice_ws_load, not wrk) and its pair of targets.
WS_VARIANTS = ("ws-1k", "ws-1m")
WS_OURS, WS_PEER = "sluice-ws", "nginx-ws"
# The `h2` section's variants (h2load, not wrk) and its pair of targets.
H2_VARIANTS = ("h2-64x10",)
H2_OURS, H2_PEER = "sluice-h2", "nginx-h2"
H2_PEERS = (H2_PEER, "haproxy-h2")  # sluice-h2 is compared with each (the anchor: haproxy)
# Variants without the plain sluice-N / peer-N ratio table.
NO_PLAIN_RATIOS = ("limits", "redis", "accesslog", "tls", "tlsnew") + WS_VARIANTS + H2_VARIANTS
# The TLS issue's targets (sections tls and tlsnew, and the idle TLS connections).
TLS_OURS, TLS_PEER = "sluice-tls", "nginx-tls"
TLS_MIN_RPS_RATIO = 1.0
TLS_MAX_IDLE_MEMORY_RATIO = 1.5
# The `redis` section (distributed limits): the Redis store against the memory store.
REDIS_MEMORY, REDIS_OURS, REDIS_HYBRID = "sluice-limits", "sluice-redis", "sluice-hybrid"
REDIS_MIN_RPS_RATIO = 0.65  # issue 39: exact mode
REDIS_HYBRID_MIN_RPS_RATIO = 0.90  # issue 39: hybrid mode
REDIS_MAX_P99_ADDED_US = 1000.0
# The `limits` section: sluice with its limit against sluice without, and against the peers'
# own per-key limiters. Targets from the proxy issue's limits work.
LIMITS_PLAIN, LIMITS_OURS = "sluice-1", "sluice-limits"
LIMITS_PEERS = ("nginx-limit_req", "haproxy-stick-table")
LIMITS_MAX_RPS_OVERHEAD_PCT = 5.0  # the limits issue's; shown for reference
LIMITS_MAX_P99_DELTA_US = 100.0
LIMITS_MIN_PEER_RATIO = 1.0
# The data path issue's targets for the plain path (sections throughput and pinned), per
# sluice-1 / peer-1 pair: req/s at least, p99 and CPU per request at most; None: no target.
PLAIN_TARGETS = {
    "nginx": {"rps": 1.0, "p99": 1.1, "cpu": 1.0},
    "haproxy": {"rps": 1.0, "p99": None, "cpu": None},
}
CPU_STRETCH = 0.8  # the stretch goal for proxy CPU per request against nginx
# The `accesslog` section: sluice with its access log against nginx with its own.
ACCESSLOG_OURS, ACCESSLOG_PEER = "sluice-log", "nginx-log"
ACCESSLOG_MIN_RPS_RATIO = 0.9
METRICS = ("rps", "p50_us", "p99_us", "cpu_us_per_req", "backend_cpu_us_per_req")
# The `keys` section (limits at scale): RSS per key held, and req/s against nginx's limit_req.
KEYS_OURS, KEYS_PEER = "sluice-limits", "nginx-limit_req"
KEYS_MAX_BYTES_PER_KEY = 150  # at 60 buckets, over a million keys
KEYS_MIN_RPS_RATIO = 1.0  # at a million keys


def read_tsv(path: Path) -> list:
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def number(text: str):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return None if value != value else value  # NaN: wrk printed no figure


def summarize_throughput(raw: list) -> dict:
    """variant -> target -> medians (and the req/s range, errors, rounds) over the rounds."""
    out: dict = {}
    for row in raw:
        target = out.setdefault(row["variant"], {}).setdefault(row["target"], {"rounds": []})
        target["rounds"].append(row)
    for targets in out.values():
        for stats in targets.values():
            rows = stats.pop("rounds")
            stats["rounds"] = len(rows)
            for metric in METRICS:
                values = [v for v in (number(r[metric]) for r in rows) if v is not None]
                stats[metric] = statistics.median(values) if values else None
                if metric == "rps" and values:
                    stats["rps_min"], stats["rps_max"] = min(values), max(values)
            stats["non2xx"] = sum(int(number(r["non2xx"]) or 0) for r in rows)
            stats["socket_errors"] = [r["socket_errors"] for r in rows if r["socket_errors"] != "0"]
    return out


def target_notes(meta: dict, variant: str) -> dict:
    """target -> notes from meta.tsv for one section: skipped, died, limit checks, keys."""
    notes: dict = {}
    for key, value in meta.items():
        parts = key.split(".", 2)
        if len(parts) == 3 and parts[0] == variant:
            notes.setdefault(parts[2], {})[parts[1]] = value
    return notes


def limits_comparison(targets: dict, raw: list) -> dict:
    """The `limits` section's verdicts: overhead over plain sluice, ratios to the peers.

    Figures come from the medians; the per-round overhead (paired within each interleaved
    round) is listed beside them to show how much the machine moved during the run.
    """
    plain, ours = targets.get(LIMITS_PLAIN), targets.get(LIMITS_OURS)
    out: dict = {"vs_plain": None, "vs_peers": []}
    if plain and ours and plain.get("rps") and ours.get("rps") is not None:
        per_round = {}
        for row in raw:
            if row["variant"] == "limits" and row["target"] in (LIMITS_PLAIN, LIMITS_OURS):
                per_round.setdefault(row["round"], {})[row["target"]] = number(row["rps"])
        rounds = sorted(per_round.items(), key=lambda item: int(item[0]))
        paired = [100.0 * (1 - r[LIMITS_OURS] / r[LIMITS_PLAIN]) for _, r in rounds
                  if r.get(LIMITS_PLAIN) and r.get(LIMITS_OURS) is not None]
        overhead = 100.0 * (1 - ours["rps"] / plain["rps"])
        p99_delta = (ours["p99_us"] - plain["p99_us"]
                     if ours.get("p99_us") is not None and plain.get("p99_us") is not None
                     else None)
        cpu_delta = (ours["cpu_us_per_req"] - plain["cpu_us_per_req"]
                     if ours.get("cpu_us_per_req") is not None
                     and plain.get("cpu_us_per_req") is not None else None)
        out["vs_plain"] = {
            "rps_overhead_pct": overhead,
            "rps_overhead_pct_per_round": paired,
            "rps_overhead_met": overhead <= LIMITS_MAX_RPS_OVERHEAD_PCT,
            "p99_delta_us": p99_delta,
            "p99_delta_met": None if p99_delta is None else p99_delta <= LIMITS_MAX_P99_DELTA_US,
            "cpu_delta_us_per_req": cpu_delta,
        }
    for peer in LIMITS_PEERS:
        theirs = targets.get(peer)
        ratio = (ours["rps"] / theirs["rps"]
                 if ours and theirs and ours.get("rps") is not None and theirs.get("rps")
                 else None)
        out["vs_peers"].append({
            "pair": f"{LIMITS_OURS} / {peer}", "rps": ratio,
            "rps_met": None if ratio is None else ratio >= LIMITS_MIN_PEER_RATIO,
            "p99": (ours["p99_us"] / theirs["p99_us"]
                    if ours and theirs and ours.get("p99_us") is not None and theirs.get("p99_us")
                    else None),
            "cpu": (ours["cpu_us_per_req"] / theirs["cpu_us_per_req"]
                    if ours and theirs and ours.get("cpu_us_per_req") is not None
                    and theirs.get("cpu_us_per_req") else None),
        })
    return out


def verdict(met) -> str:
    return "n/a" if met is None else ("met" if met else "**missed**")


def limits_lines(comparison: dict, targets: dict, notes: dict) -> list:
    lines = []
    missing = [name for name in (LIMITS_PLAIN, LIMITS_OURS) + LIMITS_PEERS if name not in targets]
    vs_plain = comparison["vs_plain"]
    lines.append("Limit overhead, sluice-limits against plain sluice-1 in the same rounds:")
    lines.append("")
    lines.append("| measure | result | target |")
    lines.append("| --- | ---: | --- |")
    if vs_plain:
        per_round = ", ".join(fmt(v, 1, " %") for v in vs_plain["rps_overhead_pct_per_round"])
        met = verdict(vs_plain["rps_overhead_met"])
        lines.append(f"| req/s overhead (from the medians; per round: {per_round or 'n/a'}) | "
                     f"{fmt(vs_plain['rps_overhead_pct'], 1, ' %')} | "
                     f"≤ {LIMITS_MAX_RPS_OVERHEAD_PCT:g} % (limits issue): {met} |")
        lines.append(f"| p99 delta | {fmt(vs_plain['p99_delta_us'], 0, ' µs')} | "
                     f"≤ {LIMITS_MAX_P99_DELTA_US:g} µs: {verdict(vs_plain['p99_delta_met'])} |")
        lines.append(f"| proxy CPU delta per request | "
                     f"{fmt(vs_plain['cpu_delta_us_per_req'], 1, ' µs')} | |")
    else:
        lines.append("| req/s overhead | n/a | "
                     f"≤ {LIMITS_MAX_RPS_OVERHEAD_PCT:g} %: n/a |")
        lines.append(f"| p99 delta | n/a | ≤ {LIMITS_MAX_P99_DELTA_US:g} µs: n/a |")
    lines.append("")
    lines.append("sluice-limits against the peers' own per-key limiters (req/s > 1: sluice "
                 "faster; p99 and CPU < 1: sluice better):")
    lines.append("")
    lines.append("| sluice / peer | req/s | target | p99 | CPU/req |")
    lines.append("| --- | ---: | --- | ---: | ---: |")
    for p in comparison["vs_peers"]:
        lines.append(f"| {p['pair']} | {fmt(p['rps'], 2)} | ≥ {LIMITS_MIN_PEER_RATIO:.1f}x: "
                     f"{verdict(p['rps_met'])} | {fmt(p['p99'], 2)} | {fmt(p['cpu'], 2)} |")
    if missing:
        lines.append("")
        lines.append("Not measured (so its comparisons are n/a): " + "; ".join(
            f"{name}: {notes.get(name, {}).get('skipped', 'no figures')}" for name in missing))
    return lines


def ratios(targets: dict) -> list:
    """sluice-N / peer-N for every peer measured with the same number of workers."""
    rows = []
    for workers in ("1", "2"):
        ours = targets.get(f"sluice-{workers}")
        for peer in ("nginx", "haproxy"):
            theirs = targets.get(f"{peer}-{workers}")
            if not ours or not theirs:
                continue

            def ratio(metric):
                a, b = ours.get(metric), theirs.get(metric)
                return a / b if a is not None and b else None

            row = {"pair": f"sluice-{workers} / {peer}-{workers}", "rps": ratio("rps"),
                   "p99": ratio("p99_us"), "cpu": ratio("cpu_us_per_req")}
            if workers == "1":
                goals = PLAIN_TARGETS[peer]
                row["met"] = {
                    metric: (None if goals[metric] is None or row[metric] is None else
                             (row[metric] >= goals[metric] if metric == "rps"
                              else row[metric] <= goals[metric]))
                    for metric in ("rps", "p99", "cpu")}
            rows.append(row)
    return rows


def baseline_lines(raw: list, variant: str) -> list:
    """Before and after in the same rounds: sluice-N / base-N (N: 1, 2, tls, redis or hybrid) per
    round (req/s and CPU per request), their medians and ranges, beside each build's ratio to
    nginx-N (for redis and hybrid: to the memory store, sluice-limits)."""
    rounds: dict = {}
    for row in raw:
        if row["variant"] == variant:
            rounds.setdefault(row["round"], {})[row["target"]] = row
    lines = []
    for kind in ("1", "2", "tls", "redis", "hybrid"):
        new, base, peer = f"sluice-{kind}", f"base-{kind}", f"nginx-{kind}"
        if kind in ("redis", "hybrid"):
            peer = REDIS_MEMORY
        pairs = [(number(r[new]["rps"]), number(r[base]["rps"]), number(r[new]["cpu_us_per_req"]),
                  number(r[base]["cpu_us_per_req"]), number(r.get(peer, {}).get("rps")))
                 for r in rounds.values() if new in r and base in r]
        pairs = [p for p in pairs if p[0] and p[1] and p[2] and p[3]]
        if not pairs:
            continue
        rps = [a / b for a, b, _, _, _ in pairs]
        cpu = [c / d for _, _, c, d, _ in pairs]
        new_peer = [a / e for a, _, _, _, e in pairs if e]
        base_peer = [b / e for _, b, _, _, e in pairs if e]
        if not lines:
            lines += ["", "Before and after in the same rounds (the baseline is BASELINE_BIN):", "",
                      "| pair | req/s ratio, median (range) | CPU/req ratio, median (range) "
                      "| each / nginx (redis: / the memory store), req/s median |",
                      "| --- | ---: | ---: | ---: |"]
        vs_peer = (f"{statistics.median(new_peer):.3f} against {statistics.median(base_peer):.3f}"
                   if new_peer else "—")
        lines.append(f"| {new} / {base} | {statistics.median(rps):.3f} ({min(rps):.3f}–"
                     f"{max(rps):.3f}) | {statistics.median(cpu):.3f} ({min(cpu):.3f}–"
                     f"{max(cpu):.3f}) | {vs_peer} |")
    return lines


def tls_ratio(targets: dict) -> dict:
    """sluice-tls / nginx-tls: req/s (the target), p99 and proxy CPU per request."""
    ours, theirs = targets.get(TLS_OURS), targets.get(TLS_PEER)
    if not ours or not theirs:
        return {}

    def ratio(metric):
        a, b = ours.get(metric), theirs.get(metric)
        return a / b if a is not None and b else None

    row = {"rps": ratio("rps"), "p99": ratio("p99_us"), "cpu": ratio("cpu_us_per_req")}
    row["met"] = None if row["rps"] is None else row["rps"] >= TLS_MIN_RPS_RATIO
    return row


def h2_ratio(targets: dict, peer: str = H2_PEER) -> dict:
    """sluice-h2 / peer: req/s, p99 and proxy CPU per request; and each one's p99."""
    ours, theirs = targets.get(H2_OURS), targets.get(peer)
    if not ours or not theirs:
        return {}

    def ratio(metric):
        a, b = ours.get(metric), theirs.get(metric)
        return a / b if a is not None and b else None

    return {"rps": ratio("rps"), "p99": ratio("p99_us"), "cpu": ratio("cpu_us_per_req"),
            "p99_us": {H2_OURS: ours.get("p99_us"), peer: theirs.get("p99_us")},
            "rps_median": {H2_OURS: ours.get("rps"), peer: theirs.get("rps")}}


def h2_idle_figures(memory: dict) -> dict:
    """Per target: h2 connections held and KiB of proxy RSS per connection; sluice's / nginx's."""
    out = {}
    for target, m in memory.get("h2-idle", {}).items():
        before, after = number(m.get("rss_before_kb")), number(m.get("rss_with_conns_kb"))
        out[target] = {"connections": number(m.get("open_after_hold")),
                       "failed": number(m.get("failed")),
                       "rss_before_kb": before, "rss_with_conns_kb": after,
                       "kib_per_conn": number(m.get("kib_per_conn"))}
    ratios = {}
    for peer in H2_PEERS:
        ours, theirs = out.get(H2_OURS + "-idle"), out.get(peer + "-idle")
        if ours and theirs and ours["kib_per_conn"] is not None and theirs["kib_per_conn"]:
            ratios[peer] = ours["kib_per_conn"] / theirs["kib_per_conn"]
    if H2_PEER in ratios:
        out["ratio"] = ratios[H2_PEER]
    if ratios:
        out["ratios"] = ratios
    return out


def with_goal(value, met, goal, at_least: bool) -> str:
    """A ratio beside its target and verdict, e.g. `1.04 (≥ 1.0: met)`."""
    if goal is None:
        return fmt(value, 2)
    return f"{fmt(value, 2)} ({'≥' if at_least else '≤'} {goal:g}: {verdict(met)})"


def accesslog_lines(targets: dict, notes: dict) -> list:
    ours, theirs = targets.get(ACCESSLOG_OURS), targets.get(ACCESSLOG_PEER)
    lines = [""]
    if ours and theirs and ours.get("rps") is not None and theirs.get("rps"):
        ratio = ours["rps"] / theirs["rps"]
        p99 = (ours["p99_us"] / theirs["p99_us"]
               if ours.get("p99_us") is not None and theirs.get("p99_us") else None)
        cpu = (ours["cpu_us_per_req"] / theirs["cpu_us_per_req"]
               if ours.get("cpu_us_per_req") is not None and theirs.get("cpu_us_per_req")
               else None)
        lines.append(f"{ACCESSLOG_OURS} / {ACCESSLOG_PEER}: req/s "
                     f"{with_goal(ratio, ratio >= ACCESSLOG_MIN_RPS_RATIO, ACCESSLOG_MIN_RPS_RATIO, True)}"
                     f", p99 {fmt(p99, 2)}, CPU/req {fmt(cpu, 2)}.")
    else:
        lines.append(f"{ACCESSLOG_OURS} / {ACCESSLOG_PEER}: n/a (one of them has no figures).")
    written = [f"{name}: {note['lines']}" for name, note in notes.items() if "lines" in note]
    if written:
        lines.append("")
        lines.append("Lines written: " + "; ".join(written) + ".")
    lines.append("")
    return lines


def kb_to_mb(kb):
    return kb / 1024 if kb is not None else None


def fmt(value, digits=0, suffix=""):
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}{suffix}"


def label_of(name: str, variant: str) -> str:
    if name == "direct" and variant == "pinned":
        return "backend direct (wrk + backend alone on cpu 1)"
    if name == LIMITS_PLAIN and variant == "limits":
        return "sluice threads=1, plain (no limit)"
    return LABELS.get(name, name)


def throughput_tables(summary: dict, meta: dict, raw: list) -> list:
    lines = []
    # A section whose every target failed has no rows in raw.tsv, but still has notes.
    variants = list(summary) + [v for v in VARIANTS if v not in summary
                                and any(k.startswith(v + ".skipped.") for k in meta)]
    for variant in variants:
        if variant in WS_VARIANTS:
            continue  # websocket_tables
        targets = summary.get(variant, {})
        notes = target_notes(meta, variant)
        title = VARIANTS.get(variant, variant).format(keys=meta.get("limit_keys", "?"))
        if variant.startswith("keys-"):
            title = (f"KEYS: a per-key limit, X-API-Key over {int(variant[5:]):,} keys, fresh "
                     "processes, pinned like PINNED")
        lines.append(f"### {title}")
        lines.append("")
        script = (" -s keys.lua" if variant in ("limits", "redis") or variant.startswith("keys-")
                  else "")
        if variant in H2_VARIANTS:
            lines.append(f"{meta.get('h2_load', 'h2load')} GET {meta.get('path', '/ok')} "
                         f"({meta.get('h2_version', '?')}; one unmeasured {meta.get('warmup', '?')} "
                         f"run per target first), medians of {meta.get('rounds', '?')} "
                         "interleaved rounds; p50 and p99 from h2load's --log-file (per-request "
                         "times); each proxy speaks keep-alive HTTP/1.1 to the backend: "
                         f"{meta.get('backend', '?')}.")
        else:
            lines.append(f"wrk -t{meta.get('wrk_threads', '?')} -c{meta.get('connections', '?')} "
                         f"-d{meta.get('duration', '?')} --latency{script} GET "
                         f"{meta.get('path', '/ok')}, medians of {meta.get('rounds', '?')} "
                         f"interleaved rounds; backend: {meta.get('backend', '?')}.")
        if meta.get(f"{variant}.pinning", "").startswith("UNAVAILABLE"):
            lines.append(f"**Pinning {meta[f'{variant}.pinning']}.**")
        lines.append("")
        lines.append("| target | req/s | req/s range | p50 µs | p99 µs | proxy CPU µs/req "
                     "| backend CPU µs/req | errors |")
        lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for name in LABELS:
            s = targets.get(name)
            if not s:
                continue
            errors = []
            if s["non2xx"]:
                errors.append(f"non-2xx/3xx: {s['non2xx']}")
            if s["socket_errors"]:
                errors.append("socket: " + "; ".join(s["socket_errors"]))
            cpu = "(backend)" if name == "direct" else fmt(s["cpu_us_per_req"], 1)
            label = label_of(name, variant)
            died = notes.get(name, {}).get("died")
            if died:
                errors.append(f"died {died}")
            lines.append(
                f"| {label} | {fmt(s['rps'])} | {fmt(s.get('rps_min'))}–"
                f"{fmt(s.get('rps_max'))} | {fmt(s['p50_us'])} | {fmt(s['p99_us'])} | {cpu} | "
                f"{fmt(s['backend_cpu_us_per_req'], 1)} | {', '.join(errors) or 'none'} |")
        for name, note in notes.items():
            if "skipped" in note:
                lines.append(f"| {label_of(name, variant)} | not measured: {note['skipped']} "
                             "| | | | | | |")
        if variant in H2_VARIANTS:
            protocols = [f"{name}: {note['protocol']}" for name, note in notes.items()
                         if "protocol" in note]
            lines.append("")
            if protocols:
                lines.append("Application protocol h2load negotiated: " + "; ".join(protocols)
                             + ".")
            for peer in H2_PEERS:
                r = h2_ratio(targets, peer)
                if r:
                    lines.append(f"{H2_OURS} / {peer}: req/s {fmt(r['rps'], 2)}, p99 "
                                 f"{fmt(r['p99'], 2)} ({fmt(r['p99_us'][H2_OURS])} µs against "
                                 f"{fmt(r['p99_us'][peer])} µs), proxy CPU per request "
                                 f"{fmt(r['cpu'], 2)}.")
        if variant == "limits":
            checks = [f"{name}: {note['check']}" for name, note in notes.items() if "check" in note]
            keys = [f"{name}: {note['keys']}" for name, note in notes.items() if "keys" in note]
            lines.append("")
            if checks:
                lines.append("Limit check: " + "; ".join(checks) + ".")
            if keys:
                lines.append(f"Keys held by each limiter after its warm-up (wrk sends "
                             f"{meta.get('limit_keys', '?')}): " + "; ".join(keys) + ".")
            lines.append("")
            lines += limits_lines(limits_comparison(targets, raw), targets, notes)
        if variant in ("shared", "pinned", "tls", "tlsnew"):
            lines += baseline_lines(raw, variant)
        if variant == "redis":
            lines += redis_lines(targets, meta)
            lines += baseline_lines(raw, variant)
        if variant == "accesslog":
            lines += accesslog_lines(targets, notes)
        if variant in ("tls", "tlsnew"):
            r = tls_ratio(targets)
            if r:
                lines.append("")
                lines.append(f"sluice-tls / nginx-tls: req/s "
                             f"{with_goal(r['rps'], r['met'], TLS_MIN_RPS_RATIO, True)}, p99 "
                             f"{fmt(r['p99'], 2)}, proxy CPU per request {fmt(r['cpu'], 2)}.")
        plain = variant not in NO_PLAIN_RATIOS and not variant.startswith("keys-")
        pairs = ratios(targets) if plain else []
        if pairs:
            lines.append("")
            lines.append("Ratios at equal workers (req/s > 1: sluice faster; p99 and CPU < 1: "
                         "sluice better), with the data path issue's targets for one worker "
                         f"(CPU stretch goal against nginx: ≤ {CPU_STRETCH:g}):")
            lines.append("")
            lines.append("| sluice / peer | req/s | p99 | CPU/req |")
            lines.append("| --- | ---: | ---: | ---: |")
            for p in pairs:
                met = p.get("met")
                if met is None:
                    cells = [fmt(p[m], 2) for m in ("rps", "p99", "cpu")]
                else:
                    goals = PLAIN_TARGETS[p["pair"].split(" / ")[1].split("-")[0]]
                    cells = [with_goal(p["rps"], met["rps"], goals["rps"], True),
                             with_goal(p["p99"], met["p99"], goals["p99"], False),
                             with_goal(p["cpu"], met["cpu"], goals["cpu"], False)]
                lines.append(f"| {p['pair']} | {cells[0]} | {cells[1]} | {cells[2]} |")
        lines.append("")
    return lines


def ws_message_bytes(meta: dict, variant: str):
    return number(meta.get(f"ws_message_bytes.{variant}"))


def ws_mib_per_s(stats: dict, size) -> float:
    rps = stats.get("rps")
    return rps * size / 1048576 if rps is not None and size is not None else None


def ws_ratio(targets: dict, size) -> dict:
    """sluice-ws / nginx-ws: messages/s (= MiB/s at one message size), p99, CPU per message."""
    ours, theirs = targets.get(WS_OURS), targets.get(WS_PEER)
    if not ours or not theirs:
        return {}

    def ratio(metric):
        a, b = ours.get(metric), theirs.get(metric)
        return a / b if a is not None and b else None

    return {"messages_per_s": ratio("rps"), "p99": ratio("p99_us"),
            "cpu": ratio("cpu_us_per_req"),
            "mib_per_s": {WS_OURS: ws_mib_per_s(ours, size), WS_PEER: ws_mib_per_s(theirs, size)}}


def ws_idle_figures(memory: dict) -> dict:
    """Per target: tunnels held and KiB of proxy RSS per tunnel; and sluice's / nginx's."""
    out = {}
    for target, m in memory.get("ws-idle", {}).items():
        out[target] = {"tunnels": number(m.get("tunnels")),
                       "kib_per_tunnel": number(m.get("kib_per_tunnel"))}
    ours, theirs = out.get(WS_OURS + "-idle"), out.get(WS_PEER + "-idle")
    if ours and theirs and ours["kib_per_tunnel"] is not None and theirs["kib_per_tunnel"]:
        out["ratio"] = ours["kib_per_tunnel"] / theirs["kib_per_tunnel"]
    return out


def websocket_summary(throughput: dict, meta: dict, memory: dict):
    """Per variant each target's medians with MiB/s, and sluice-ws / nginx-ws; idle tunnels."""
    variants = {}
    for variant in WS_VARIANTS:
        if variant not in throughput:
            continue
        size = ws_message_bytes(meta, variant)
        variants[variant] = {
            "message_bytes": size,
            "targets": {name: {"messages_per_s": s.get("rps"), "mib_per_s": ws_mib_per_s(s, size),
                               "p50_us": s.get("p50_us"), "p99_us": s.get("p99_us"),
                               "cpu_us_per_message": s.get("cpu_us_per_req")}
                        for name, s in throughput[variant].items()},
            "ratio": ws_ratio(throughput[variant], size) or None,
        }
    idle = ws_idle_figures(memory)
    if not variants and not idle:
        return None
    return {"variants": variants, "against_haproxy": against_haproxy, "idle": idle}


def websocket_tables(summary: dict, meta: dict) -> list:
    """The ws-1k and ws-1m variants: messages/s, MiB/s (payload one way), latency, CPU."""
    lines = []
    for variant in WS_VARIANTS:
        notes = target_notes(meta, variant)
        if variant not in summary and not notes:
            continue
        targets = summary.get(variant, {})
        size = ws_message_bytes(meta, variant)
        lines.append(f"### {VARIANTS[variant]}")
        lines.append("")
        lines.append(f"sluice_ws_load --connections {meta.get(f'ws_connections.{variant}', '?')} "
                     f"--size {meta.get(f'ws_message_bytes.{variant}', '?')} --binary "
                     f"--duration {meta.get('duration', '?')} --warmup {meta.get('warmup', '?')} "
                     "against the demo backend's /ws/echo "
                     f"(closed loop: one message in flight per connection), medians of "
                     f"{meta.get('rounds', '?')} interleaved rounds. MiB/s counts the payload "
                     "one way; CPU per message counts every message of a run, warm-up included.")
        if meta.get(f"{variant}.pinning", "").startswith("UNAVAILABLE"):
            lines.append(f"**Pinning {meta[f'{variant}.pinning']}.**")
        lines.append("")
        lines.append("| target | messages/s | range | MiB/s | p50 µs | p99 µs "
                     "| proxy CPU µs/msg | backend CPU µs/msg | errors |")
        lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for name in (WS_OURS, WS_PEER):
            s = targets.get(name)
            if not s:
                continue
            errors = ["tool: " + "; ".join(s["socket_errors"])] if s["socket_errors"] else []
            died = notes.get(name, {}).get("died")
            if died:
                errors.append(f"died {died}")
            lines.append(
                f"| {LABELS[name]} | {fmt(s['rps'])} | {fmt(s.get('rps_min'))}–"
                f"{fmt(s.get('rps_max'))} | {fmt(ws_mib_per_s(s, size), 1)} | "
                f"{fmt(s['p50_us'])} | {fmt(s['p99_us'])} | {fmt(s['cpu_us_per_req'], 1)} | "
                f"{fmt(s['backend_cpu_us_per_req'], 1)} | {', '.join(errors) or 'none'} |")
        for name, note in notes.items():
            if "skipped" in note:
                lines.append(f"| {LABELS.get(name, name)} | not measured: {note['skipped']} "
                             "| | | | | | | |")
        r = ws_ratio(targets, size)
        if r:
            lines.append("")
            lines.append(f"{WS_OURS} / {WS_PEER}: messages/s (and MiB/s) "
                         f"{fmt(r['messages_per_s'], 2)}, p99 {fmt(r['p99'], 2)}, proxy CPU "
                         f"per message {fmt(r['cpu'], 2)}.")
        lines.append("")
    return lines


def redis_comparison(targets: dict) -> dict:
    """The `redis` section's verdicts: each Redis mode against the memory store, same rounds."""
    memory = targets.get(REDIS_MEMORY)
    if not memory or not memory.get("rps"):
        return {}
    out = {}
    for mode, name, goal in (("exact", REDIS_OURS, REDIS_MIN_RPS_RATIO),
                             ("hybrid", REDIS_HYBRID, REDIS_HYBRID_MIN_RPS_RATIO)):
        redis = targets.get(name)
        if not redis or redis.get("rps") is None:
            continue
        ratio = redis["rps"] / memory["rps"]
        added = (redis["p99_us"] - memory["p99_us"]
                 if redis.get("p99_us") is not None and memory.get("p99_us") is not None
                 else None)
        out[mode] = {
            "rps_ratio": ratio,
            "rps_ratio_goal": goal,
            "rps_ratio_met": ratio >= goal,
            "p99_added_us": added,
            "p99_added_met": added is not None and added <= REDIS_MAX_P99_ADDED_US,
        }
    return out


def redis_lines(targets: dict, meta: dict) -> list:
    lines = [""]
    for mode, c in redis_comparison(targets).items():
        lines.append(f"Redis store ({mode}) / memory store: req/s {fmt(c['rps_ratio'], 2)}x "
                     f"(target >= {c['rps_ratio_goal']:.2f}: "
                     f"{'met' if c['rps_ratio_met'] else 'MISSED'}); "
                     f"p99 added {fmt(c['p99_added_us'])} µs (target <= "
                     f"{REDIS_MAX_P99_ADDED_US:.0f}: "
                     f"{'met' if c['p99_added_met'] else 'MISSED'}).")
    for name in (REDIS_OURS, REDIS_HYBRID, "base-redis", "base-hybrid"):
        per_request = meta.get(f"redis.commands_per_request.{name}")
        if per_request:
            lines.append(f"Redis commands per proxied request, {name} (INFO commandstats, "
                         f"measured rounds): {per_request}.")
        cpu_us = meta.get(f"redis.cpu_us_per_request.{name}")
        if cpu_us:
            lines.append(f"redis-server CPU per proxied request, {name}: {cpu_us} µs.")
    # Which core was full: with the proxy alone on cpu 0 and wrk, the backend and redis-server
    # on cpu 1, req/s is capped by whichever is busy all the time; when it is cpu 1, a Redis
    # mode's req/s also pays for redis-server's work there, and the proxy's CPU per request says
    # more about the proxy (docs/benchmarks.md, "Hybrid mode, 2026-12-02 11:00").
    for name in (REDIS_MEMORY, REDIS_OURS, REDIS_HYBRID, "base-redis", "base-hybrid"):
        busy = meta.get(f"redis.cpu_busy.{name}")
        if busy:
            proxy, load = busy.split()
            lines.append(f"Busy over the measured rounds, {name}: cpu 0 (the proxy) {proxy} %, "
                         f"cpu 1 (wrk, the backend, redis-server) {load} %.")
    memory = targets.get(REDIS_MEMORY) or {}
    for name in (REDIS_OURS, REDIS_HYBRID):
        redis = targets.get(name) or {}
        if memory.get("cpu_us_per_req") and redis.get("cpu_us_per_req"):
            ratio = memory["cpu_us_per_req"] / redis["cpu_us_per_req"]
            lines.append(f"Proxy CPU per request, memory store / {name}: {fmt(ratio, 3)}x "
                         "(the req/s ratio where the proxy's core is the one that is full).")
    ceiling = meta.get("redis.ceiling.redis-benchmark")
    if ceiling:
        lines.append(f"Ceiling, redis-benchmark running the same EVALSHA directly: {ceiling}.")
    lines.append("")
    return lines


def memory_tables(memory: list) -> tuple:
    data: dict = {}
    for row in memory:
        data.setdefault(row["test"], {}).setdefault(row["target"], {})[row["metric"]] = row["value"]
    lines = []
    idle = data.get("idle", {})
    if idle:
        lines.append("### Idle keep-alive connections (each sent one GET /ok, then stays idle)")
        lines.append("")
        lines.append("| server | connections held | RSS before | RSS with connections | "
                     "growth per connection | target |")
        lines.append("| --- | ---: | ---: | ---: | ---: | --- |")
        per_conn = {}
        for target, m in idle.items():
            before, after = number(m.get("rss_before_kb")), number(m.get("rss_with_conns_kb"))
            held = number(m.get("open_after_hold"))
            per_conn[target] = (after - before) * 1024 / held if before and after and held else None
        for target, m in idle.items():
            before, after = number(m.get("rss_before_kb")), number(m.get("rss_with_conns_kb"))
            held = number(m.get("open_after_hold"))
            per = per_conn[target]
            goal = "≤ 64 MB" if target.startswith("sluice") else "(reference)"
            if target.startswith("sluice") and after is not None:
                goal += ": met" if after <= 64 * 1024 else ": **missed**"
            if target == "sluice-tls-idle":
                peer = per_conn.get("nginx-tls-idle")
                ratio = per / peer if per is not None and peer else None
                goal = (f"per connection ≤ {TLS_MAX_IDLE_MEMORY_RATIO:g}x nginx's: "
                        f"{fmt(ratio, 2)}x" + ("" if ratio is None else
                                               ": met" if ratio <= TLS_MAX_IDLE_MEMORY_RATIO
                                               else ": **missed**"))
            lines.append(
                f"| {m.get('label', target)} | {fmt(held)} (failed {m.get('failed', '?')}) | "
                f"{fmt(kb_to_mb(before), 1, ' MB')} | {fmt(kb_to_mb(after), 1, ' MB')}"
                f" | {fmt(per, 0, ' B')} | {goal} |")
        lines.append("")
    stream = data.get("stream", {})
    if stream:
        lines.append("### Streaming through sluice (threads=1), VmRSS sampled every 100 ms")
        lines.append("")
        lines.append("| transfer | result | MB/s | RSS before | peak RSS | peak growth | target |")
        lines.append("| --- | --- | ---: | ---: | ---: | ---: | --- |")
        for target, m in stream.items():
            before, peak = number(m.get("rss_before_kb")), number(m.get("rss_peak_kb"))
            growth = peak - before if before is not None and peak is not None else None
            growth_mb = growth / 1024 if growth is not None else None
            goal = "≤ 16 MB"
            if growth is not None:
                goal += ": met" if growth <= 16 * 1024 else ": **missed**"
            lines.append(
                f"| {m.get('label', target)} | {m.get('result', '?')} | "
                f"{fmt(number(m.get('mb_per_s')), 0)} | {fmt(kb_to_mb(before), 1, ' MB')} | "
                f"{fmt(kb_to_mb(peak), 1, ' MB')} | "
                f"{fmt(growth_mb, 1, ' MB')} | {goal} |")
        lines.append("")
    ws_idle = data.get("ws-idle", {})
    if ws_idle:
        figures = ws_idle_figures(data)
        lines.append("### Idle WebSocket tunnels (sluice_ws_load --idle: an upgrade and one echo "
                     "each, then silent)")
        lines.append("")
        lines.append("| proxy | tunnels held | RSS before | RSS with tunnels | per tunnel |")
        lines.append("| --- | ---: | ---: | ---: | ---: |")
        for target, m in ws_idle.items():
            before = number(m.get("rss_before_kb"))
            after = number(m.get("rss_with_tunnels_kb"))
            lines.append(
                f"| {m.get('label', target)} | {fmt(number(m.get('tunnels')))} (failed "
                f"{m.get('failed', '?')}; {m.get('alive_after_hold', '?')} still echo after "
                f"the hold) | {fmt(kb_to_mb(before), 1, ' MB')} | "
                f"{fmt(kb_to_mb(after), 1, ' MB')} | "
                f"{fmt(number(m.get('kib_per_tunnel')), 1, ' KiB')} |")
        if "ratio" in figures:
            lines.append("")
            lines.append(f"{WS_OURS} / {WS_PEER}: {fmt(figures['ratio'], 2)}x the memory per "
                         "tunnel.")
        lines.append("")
    h2_idle = data.get("h2-idle", {})
    if h2_idle:
        figures = h2_idle_figures(data)
        lines.append("### Idle HTTP/2 connections (TLS 1.3 + ALPN h2: the client preface and "
                     "SETTINGS exchanged, no stream opened, then silent)")
        lines.append("")
        lines.append("| server | connections held | RSS before | RSS with connections | "
                     "per connection |")
        lines.append("| --- | ---: | ---: | ---: | ---: |")
        for target, m in h2_idle.items():
            f = figures[target]
            lines.append(
                f"| {m.get('label', target)} | {fmt(f['connections'])} (failed "
                f"{m.get('failed', '?')}) | {fmt(kb_to_mb(f['rss_before_kb']), 1, ' MB')} | "
                f"{fmt(kb_to_mb(f['rss_with_conns_kb']), 1, ' MB')} | "
                f"{fmt(f['kib_per_conn'], 1, ' KiB')} |")
        for peer, ratio in figures.get("ratios", {}).items():
            lines.append("")
            lines.append(f"{H2_OURS} / {peer}: {fmt(ratio, 2)}x the memory per idle h2 "
                         "connection.")
        lines.append("")
    return lines, data


def keys_figures(throughput: dict, memory: dict) -> dict:
    """Per key count of the `keys` section: req/s medians and RSS growth per key held."""
    figures = {}
    for test in sorted((t for t in memory if t.startswith("keys-")),
                       key=lambda t: int(t.split("-", 1)[1])):
        per = {}
        for target, m in memory[test].items():
            start, end = number(m.get("rss_start_kb")), number(m.get("rss_end_kb"))
            held = number(m.get("keys_held"))
            growth = (end - start) * 1024 if start is not None and end is not None else None
            per[target] = {
                "keys_held": held,
                "rss_growth_bytes": growth,
                "bytes_per_key": growth / held if growth is not None and held else None,
                "rps": throughput.get(test, {}).get(target, {}).get("rps"),
            }
        ours, peer = per.get(KEYS_OURS, {}), per.get(KEYS_PEER, {})
        if ours.get("rps") and peer.get("rps"):
            per["rps_ratio"] = ours["rps"] / peer["rps"]
        figures[test] = per
    return figures


def keys_lines(figures: dict) -> list:
    if not figures:
        return []
    lines = ["### Key cardinality (the `keys` section: fresh processes per count; RSS growth "
             "since start over the keys held)", "",
             "| keys | proxy | keys held | req/s (median) | RSS growth | per key held | "
             "target |", "| ---: | --- | ---: | ---: | ---: | ---: | --- |"]
    for test, per in figures.items():
        count = int(test.split("-", 1)[1])
        for target in (KEYS_OURS, KEYS_PEER):
            f = per.get(target)
            if not f:
                continue
            goal = "(reference)"
            if target == KEYS_OURS and count >= 1_000_000:
                b, r = f["bytes_per_key"], per.get("rps_ratio")
                goal = (f"≤ {KEYS_MAX_BYTES_PER_KEY} B/key: "
                        + ("?" if b is None else "met" if b <= KEYS_MAX_BYTES_PER_KEY
                           else "**missed**")
                        + f"; req/s ≥ {KEYS_MIN_RPS_RATIO:g}x nginx: {fmt(r, 2)}x "
                        + ("" if r is None else "met" if r >= KEYS_MIN_RPS_RATIO
                           else "**missed**"))
            growth = f["rss_growth_bytes"]
            lines.append(
                f"| {count:,} | {LABELS.get(target, target)} | {fmt(f['keys_held'])} | "
                f"{fmt(f['rps'])} | {fmt(None if growth is None else growth / 1048576, 1, ' MB')}"
                f" | {fmt(f['bytes_per_key'], 0, ' B')} | {goal} |")
    lines.append("")
    return lines


RECEIVES = ("recvfrom", "recvmsg", "read", "readv", "recv")
SENDS = ("sendto", "sendmsg", "write", "writev", "send")


def syscalls_figures(rows: list) -> dict:
    """target -> system calls per proxied request: all, failed, receives (and failed ones),
    sends, epoll_wait, epoll_ctl, and every call by name."""
    figures = {}
    for row in rows:
        requests = number(row["requests"])
        if not requests:
            continue
        f = figures.setdefault(row["target"], {"requests": int(requests), "by_name": {}})
        calls, errors = number(row["calls"]) or 0, number(row["errors"]) or 0
        f["by_name"][row["syscall"]] = {"calls": calls / requests, "errors": errors / requests}
    for f in figures.values():
        by_name = f["by_name"]

        def total(names, key="calls"):
            return sum(by_name[n][key] for n in names if n in by_name)

        f["all"] = total(by_name)
        f["failed"] = total(by_name, "errors")
        f["receives"], f["receives_failed"] = total(RECEIVES), total(RECEIVES, "errors")
        f["sends"] = total(SENDS)
        f["epoll_wait"], f["epoll_ctl"] = total(("epoll_wait",)), total(("epoll_ctl",))
    return figures


def syscalls_lines(figures: dict, meta: dict) -> list:
    if not figures and not any(k.startswith("syscalls.") for k in meta):
        return []
    lines = ["### SYSCALLS: system calls per proxied request (`strace -c -f`, one run each, "
             "pinned like PINNED)", "",
             "strace slows the process it traces: read the calls per request, not the rates. "
             "The TLS targets (section `tlssyscalls`) answer one request per connection: their "
             "figures are per new TLS connection.", "",
             "| target | requests traced | all | failed | receives (failed) | sends | "
             "epoll_wait | epoll_ctl |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for target, f in figures.items():
        lines.append(f"| {LABELS.get(target, target)} | {f['requests']:,} | {f['all']:.3f} | "
                     f"{f['failed']:.3f} | {f['receives']:.3f} ({f['receives_failed']:.3f}) | "
                     f"{f['sends']:.3f} | {f['epoll_wait']:.3f} | {f['epoll_ctl']:.3f} |")
    for key, value in sorted(meta.items()):
        if key.startswith("syscalls.skipped"):
            lines.append(f"\n{key.removeprefix('syscalls.skipped').lstrip('.') or 'section'}: "
                         f"skipped ({value})")
    return lines + [""]


def h2_summary(throughput: dict, memory: dict):
    """Per h2 variant sluice-h2 / nginx-h2; the idle h2 connections."""
    variants = {v: h2_ratio(throughput[v]) or None for v in H2_VARIANTS if v in throughput}
    against_haproxy = {v: h2_ratio(throughput[v], "haproxy-h2") or None for v in H2_VARIANTS
                       if v in throughput}
    idle = h2_idle_figures(memory)
    if not variants and not idle:
        return None
    return {"variants": variants, "against_haproxy": against_haproxy, "idle": idle}


def main() -> int:
    out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "build/bench/peers")
    meta = {row["key"]: row["value"] for row in read_tsv(out_dir / "meta.tsv")}
    raw = read_tsv(out_dir / "raw.tsv")
    throughput = summarize_throughput(raw)
    mem_lines, memory = memory_tables(read_tsv(out_dir / "memory.tsv"))

    lines = [f"## Peer comparison, {meta.get('date', '?')}", "",
             f"Load average at start {meta.get('load_start', '?')}, at end "
             f"{meta.get('load_end', '?')}; {meta.get('cpus', '?')} CPUs; "
             f"{meta.get('versions', '')}.", ""]
    lines += throughput_tables(throughput, meta, raw)
    lines += websocket_tables(throughput, meta)
    lines += mem_lines
    keys = keys_figures(throughput, memory)
    lines += keys_lines(keys)
    syscalls = syscalls_figures(read_tsv(out_dir / "syscalls.tsv"))
    lines += syscalls_lines(syscalls, meta)
    text = "\n".join(lines)
    (out_dir / "summary.md").write_text(text + "\n")
    summary = {
        "meta": meta,
        "throughput": throughput,
        "ratios": {variant: ratios(targets) for variant, targets in throughput.items()
                   if variant not in NO_PLAIN_RATIOS and not variant.startswith("keys-")},
        "tls": {variant: tls_ratio(throughput.get(variant, {})) for variant in ("tls", "tlsnew")
                if variant in throughput},
        "limits": (limits_comparison(throughput.get("limits", {}), raw)
                   if "limits" in throughput else None),
        "redis": (redis_comparison(throughput.get("redis", {}))
                  if "redis" in throughput else None),
        "websocket": websocket_summary(throughput, meta, memory),
        "h2": h2_summary(throughput, memory),
        "keys": keys or None,
        "syscalls": syscalls or None,
        "memory": memory,
        "raw": raw,
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
