#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The fleet's figures (docs/benchmarks.md, "The fleet"): three replicas of the release sluice on
one local redis-server and a demo backend, on this machine.

    tests/bench/fleet_bench.py [--changes 200] [--writes-per-second 100] [--seconds 60]
                               [--baseline]

propagation  CHANGES admin changes, one at a time, each on the next replica in turn (an override
             with a new value); for each, the time from sending the PUT until the two other
             replicas answer it on GET (polled every millisecond by two threads, one per
             replica): p50, p90, p99, max. Then each replica's own sluice_fleet_sync_seconds
             histogram (change made -> applied here, measured inside sluice): its count and the
             share of changes under 50 ms and 250 ms, from the buckets.
writes       WRITES_PER_SECOND admin changes per second for SECONDS, spread over the three
             replicas (one paced writer thread each, every write a new override key; a writer
             behind schedule catches up and sends its whole share): the time until the last
             answer, answers by status, answer times; then, once all is quiet, every replica's override count and fleet
             version against the writes answered 200 (lost: an acknowledged key missing on a
             replica; duplicated: a fleet version beyond 1 + acknowledged writes).
baseline     (--baseline) the same write load on one replica without a fleet, three writer
             threads on its one admin API: what whole-document validation alone allows.

Prints a Markdown summary and writes it to build/bench/fleet/summary.md (logs beside it).
"""

import argparse
import json
import os
import shutil
import sys
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "soak"))

from faults import Child, DemoBackend, free_port  # noqa: E402  (the soak test's helpers)

OUT = ROOT / "build" / "bench" / "fleet"
BIN = Path(os.environ.get("BIN_DIR", ROOT / "build" / "bin"))


class Replica:
    def __init__(self, index, redis_port, backend, directory, fleet=True):
        config = {
            "listeners": [{"name": "http", "address": "127.0.0.1", "port": 0}],
            "admin": {"address": "127.0.0.1", "port": 0, "token_env": None, "persist": False},
            "threads": 1,
            "access_log": {"enabled": False, "path": "-"},
            "identity": [{"header": "X-API-Key"}],
            "store": {"type": "redis", "host": "127.0.0.1", "port": redis_port},
            "fleet": {"enabled": fleet, "name": "bench", "replica_id": f"replica-{index}"},
            "limits": {"p": {"requests": 1000000, "window_ms": 60000, "buckets": 60}},
            "backends": {"demo": {"endpoints": [backend.endpoint]}},
            "routes": [{"name": "all", "prefix": "/", "backend": "demo", "limit": "p"}],
        }
        path = directory / f"replica-{index}.json"
        path.write_text(json.dumps(config))
        self.child = Child(f"replica-{index}", [str(BIN / "sluice"), "--config", str(path)],
                           directory)
        ready = self.child.wait_for(r"ready proxy=\S+ admin=(\S+) ")
        self.admin = f"http://{ready.group(1)}"

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.admin + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, None

    def override(self, key):
        status, body = self.call("GET", f"/admin/limits/p/overrides/{key}")
        return body.get("requests") if status == 200 and body else None

    def metrics(self):
        with urllib.request.urlopen(self.admin + "/metrics", timeout=10) as response:
            return response.read().decode()


def quantile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def propagation(replicas, changes):
    latencies = []
    for i in range(changes):
        writer = replicas[i % 3]
        others = [r for r in replicas if r is not writer]
        key, value = f"prop-{i}", 1000 + i
        seen = {}

        def watch(replica):
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if replica.override(key) == value:
                    seen[replica] = time.monotonic()
                    return
                time.sleep(0.001)

        threads = [threading.Thread(target=watch, args=(r,)) for r in others]
        start = time.monotonic()
        for t in threads:
            t.start()
        status, _ = writer.call("PUT", f"/admin/limits/p/overrides/{key}", {"requests": value})
        for t in threads:
            t.join()
        if status != 200 or len(seen) != 2:
            raise SystemExit(f"change {i}: status {status}, seen on {len(seen)} of 2 replicas")
        latencies.append((max(seen.values()) - start) * 1000)
    return latencies


def sync_histogram(text):
    """sluice_fleet_sync_seconds: {le: cumulative count} and the count."""
    buckets, count = {}, 0
    for line in text.splitlines():
        if line.startswith("sluice_fleet_sync_seconds_bucket"):
            le = line.split('le="')[1].split('"')[0]
            buckets[le] = float(line.rsplit(" ", 1)[1])
        elif line.startswith("sluice_fleet_sync_seconds_count"):
            count = float(line.rsplit(" ", 1)[1])
    return buckets, count


def baseline(redis_port, backend, logs, per_second, seconds):
    """The same write load on one replica without a fleet: what the admin API itself takes."""
    single = Replica(9, redis_port, backend, logs, fleet=False)
    try:
        acknowledged, statuses, elapsed, _, latencies = writes([single] * 3, per_second,
                                                                seconds, check=False)
    finally:
        single.child.stop()
    return len(acknowledged), sum(statuses.values()), elapsed, latencies


def writes(replicas, per_second, seconds, check=True):
    acknowledged, statuses, latencies, lock = [], {}, [], threading.Lock()

    # Each writer sends its whole share of the schedule (per_second x seconds in all), paced: a
    # writer that fell behind catches up, and the elapsed time says whether the load was kept.
    def writer(index):
        replica = replicas[index]
        interval = 3.0 / per_second
        start = time.monotonic()
        for n in range(round(per_second * seconds / 3)):
            key = f"w-{index}-{n}"
            sent = time.monotonic()
            status, _ = replica.call("PUT", f"/admin/limits/p/overrides/{key}", {"requests": 7})
            took = time.monotonic() - sent
            with lock:
                latencies.append(took)
                statuses[status] = statuses.get(status, 0) + 1
                if status == 200:
                    acknowledged.append(key)
            pause = start + (n + 1) * interval - time.monotonic()
            if pause > 0:
                time.sleep(pause)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - began
    if not check:
        return acknowledged, statuses, elapsed, [], latencies
    time.sleep(2)  # every replica applies the last one
    results = []
    for replica in replicas:
        _, config = replica.call("GET", "/admin/config")
        keys = set(config["overrides"].get("p", {}))
        _, fleet = replica.call("GET", "/admin/fleet")
        results.append({"keys": keys, "version": fleet["version"]})
    return acknowledged, statuses, elapsed, results, latencies


def latency_line(latencies):
    """Answer times of the admin PUTs: p50, p99, max (ms)."""
    ordered = sorted(latencies)
    if not ordered:
        return "no answers"

    def at(share):
        return 1000 * ordered[min(len(ordered) - 1, int(share * len(ordered)))]

    return f"answer time p50 {at(0.5):.1f} ms, p99 {at(0.99):.1f} ms, max {1000 * ordered[-1]:.1f} ms"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--writes-per-second", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--baseline", action="store_true",
                        help="then the write load on one replica without a fleet")
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        raise SystemExit("redis-server is missing (apt package redis-server)")
    OUT.mkdir(parents=True, exist_ok=True)
    logs = OUT / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir()
    children = []
    try:
        redis_port = free_port()
        redis = Child("redis", ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
                                "--save", "", "--appendonly", "no"], logs)
        children.append(redis)
        redis.wait_for(r"Ready to accept connections")
        backend = DemoBackend(str(BIN / "sluice-demo-backend"), 0, logs)
        children.append(backend)
        replicas = []
        for i in range(3):
            replicas.append(Replica(i, redis_port, backend, logs))
            children.append(replicas[-1].child)

        lines = ["# The fleet: propagation and write load", "",
                 f"3 replicas (threads 1 each), one local redis-server, on this machine; "
                 f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", ""]
        latencies = propagation(replicas, args.changes)
        lines += [f"## Propagation: {args.changes} changes, each seen on the two other replicas",
                  "", "| p50 | p90 | p99 | max | target |", "| ---: | ---: | ---: | ---: | --- |",
                  f"| {quantile(latencies, 0.5):.1f} ms | {quantile(latencies, 0.9):.1f} ms | "
                  f"{quantile(latencies, 0.99):.1f} ms | {max(latencies):.1f} ms | "
                  f"p50 ≤ 50 ms, p99 ≤ 250 ms: "
                  f"{'met' if quantile(latencies, 0.5) <= 50 and quantile(latencies, 0.99) <= 250 else '**missed**'} |",
                  "", "`sluice_fleet_sync_seconds` on each replica (made → applied there):", "",
                  "| replica | observations | ≤ 5 ms | ≤ 10 ms | ≤ 50 ms | ≤ 250 ms |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for i, replica in enumerate(replicas):
            buckets, count = sync_histogram(replica.metrics())
            share = lambda le: f"{100 * buckets.get(le, 0) / count:.1f}%" if count else "-"  # noqa
            lines.append(f"| replica-{i} | {int(count)} | {share('0.005')} | {share('0.01')} | "
                         f"{share('0.05')} | {share('0.25')} |")

        acknowledged, statuses, elapsed, results, latencies = writes(
            replicas, args.writes_per_second, args.seconds)
        expected = {k for k in acknowledged}
        base_version = 1 + args.changes
        lines += ["", f"## Writes: {args.writes_per_second}/s over 3 replicas for "
                      f"{args.seconds:.0f} s", "",
                  f"{sum(statuses.values())} writes offered at {args.writes_per_second}/s, the "
                  f"last answered after {elapsed:.1f} s ({sum(statuses.values()) / elapsed:.1f}"
                  "/s); answers: "
                  + ", ".join(f"{s}: {n}" for s, n in sorted(statuses.items(), key=str))
                  + "; " + latency_line(latencies), "",
                  "| replica | write keys held | lost (acknowledged, missing) | fleet version | "
                  "expected version | duplicated |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for i, r in enumerate(results):
            held = {k for k in r["keys"] if k.startswith("w-")}
            lost = len(expected - held)
            want = base_version + len(acknowledged)
            lines.append(f"| replica-{i} | {len(held)} | {lost} | {r['version']} | {want} | "
                         f"{max(0, r['version'] - want)} |")
        same = len({r["version"] for r in results}) == 1
        lines += ["", f"Every replica at the same final version: {'yes' if same else '**no**'}."]
        if args.baseline:
            for replica in replicas:
                replica.child.stop()
            ok, sent, elapsed, latencies = baseline(redis_port, backend, logs,
                                                    args.writes_per_second, args.seconds)
            lines += ["", f"Baseline, the same load on one replica without a fleet (three "
                          f"writer threads on its admin API): {sent} writes, the last answered "
                          f"after {elapsed:.1f} s "
                          f"({sent / elapsed:.1f}/s), {ok} answered 200; "
                          + latency_line(latencies) + "."]
        text = "\n".join(lines) + "\n"
        (OUT / "summary.md").write_text(text)
        print(text)
    finally:
        for child in reversed(children):
            child.stop()


if __name__ == "__main__":
    main()
