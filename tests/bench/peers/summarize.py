#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns the raw files tests/bench/peer_compare.sh wrote into summary.json and summary.md.

Inputs in OUT_DIR (tab-separated, with a header line):
  raw.tsv     one line per wrk run: variant target round rps p50_us p99_us requests
              cpu_us_per_req backend_cpu_us_per_req non2xx socket_errors
  memory.tsv  test target metric value   (idle connections and streaming results)
  meta.tsv    key value                  (date, load, versions, settings)
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
    "nginx-1": "nginx 1 worker",
    "nginx-2": "nginx 2 workers",
    "haproxy-1": "haproxy nbthread 1",
    "haproxy-2": "haproxy nbthread 2",
}
VARIANTS = {
    "shared": "no pinning: wrk, backend and proxy share both cores",
    "pinned": "PINNED: proxy on cpu 0 (taskset -c 0), wrk + backend on cpu 1",
}
METRICS = ("rps", "p50_us", "p99_us", "cpu_us_per_req", "backend_cpu_us_per_req")


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

            rows.append({"pair": f"sluice-{workers} / {peer}-{workers}", "rps": ratio("rps"),
                         "p99": ratio("p99_us"), "cpu": ratio("cpu_us_per_req")})
    return rows


def kb_to_mb(kb):
    return kb / 1024 if kb is not None else None


def fmt(value, digits=0, suffix=""):
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}{suffix}"


def throughput_tables(summary: dict, meta: dict) -> list:
    lines = []
    for variant, targets in summary.items():
        lines.append(f"### {VARIANTS.get(variant, variant)}")
        lines.append("")
        lines.append(f"wrk -t{meta.get('wrk_threads', '?')} -c{meta.get('connections', '?')} "
                     f"-d{meta.get('duration', '?')} --latency GET {meta.get('path', '/ok')}, "
                     f"medians of {meta.get('rounds', '?')} interleaved rounds; "
                     f"backend: {meta.get('backend', '?')}.")
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
            label = LABELS[name]
            if name == "direct" and variant == "pinned":
                label = "backend direct (wrk + backend alone on cpu 1)"
            lines.append(
                f"| {label} | {fmt(s['rps'])} | {fmt(s.get('rps_min'))}–"
                f"{fmt(s.get('rps_max'))} | {fmt(s['p50_us'])} | {fmt(s['p99_us'])} | {cpu} | "
                f"{fmt(s['backend_cpu_us_per_req'], 1)} | {', '.join(errors) or 'none'} |")
        pairs = ratios(targets)
        if pairs:
            lines.append("")
            lines.append("Ratios at equal workers (req/s > 1: sluice faster; p99 and CPU < 1: "
                         "sluice better):")
            lines.append("")
            lines.append("| sluice / peer | req/s | p99 | CPU/req |")
            lines.append("| --- | ---: | ---: | ---: |")
            for p in pairs:
                lines.append(f"| {p['pair']} | {fmt(p['rps'], 2)} | {fmt(p['p99'], 2)} | "
                             f"{fmt(p['cpu'], 2)} |")
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
        for target, m in idle.items():
            before, after = number(m.get("rss_before_kb")), number(m.get("rss_with_conns_kb"))
            held = number(m.get("open_after_hold"))
            per = (after - before) * 1024 / held if before and after and held else None
            goal = "≤ 64 MB" if target.startswith("sluice") else "(reference)"
            if target.startswith("sluice") and after is not None:
                goal += ": met" if after <= 64 * 1024 else ": **missed**"
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
    return lines, data


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
    lines += throughput_tables(throughput, meta)
    lines += mem_lines
    text = "\n".join(lines)
    (out_dir / "summary.md").write_text(text + "\n")
    summary = {
        "meta": meta,
        "throughput": throughput,
        "ratios": {variant: ratios(targets) for variant, targets in throughput.items()},
        "memory": memory,
        "raw": raw,
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
