#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Redis' CPU per request for two layouts of hybrid mode's fleet counts (docs/benchmarks.md,
"A hash per key and window-long span, replayed"; docs/decisions/0032-hybrid-one-hash-per-key.md).

    tests/bench/hybrid_layout_replay.py [--rounds 3] [--keys 10000] [--rate 42000]
                                        [--warm 65] [--measure 60] [--cold]

Replays the commands that one sluice thread's exchanges send (docs/distributed.md, "Hybrid
mode"), paced in real time, against a fresh redis-server per run (pinned to cpu 1, this script
to cpu 0), and reports redis-server's CPU per replayed request over the measured seconds:

hash  one hash per key, as sluice writes it: HINCRBY of the current bucket's field, PEXPIRE once
      a window, HMGET of the bucket before the current one until it is held and once when it
      settles (decision 0031), HDEL of the fields that left the window every fourth bucket,
      HGETALL on a key's first exchange.
span  one hash per key and window-long span (`...:fleet:SPAN_START`): the same pushes and reads
      on the span that holds each bucket, PEXPIRE once per span, no HDEL (a span expires
      whole), and a first read of two HGETALLs (the current span and the one before).

Requests arrive at --rate per second over --keys keys drawn uniformly (the bench's keys.lua
walks its keys in order; at 10,000 keys both give each key about one request per exchange), or
with --cold, each request on a key never seen before. A window is 60 s of 60 buckets, the
exchange period 50 ms (`sync_ms` 100), the settle delay 500 ms (a 250 ms timeout twice).
The layouts alternate per round; each run prints a line, and the summary gives the medians and
the median of the rounds' span / hash ratios. Needs redis-server and taskset.
"""

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

WINDOW_MS = 60_000
WIDTH_MS = 1_000
SYNC_MS = 100
SETTLE_MS = 500
PERIOD_S = SYNC_MS / 2 / 1000
COMMANDS = ("HINCRBY", "HMGET", "HDEL", "PEXPIRE", "HGETALL")


def resp(*args):
    """One command in the Redis protocol."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


class KeyView:
    """What one replica's ledger knows of a key: which closed buckets it holds and has settled."""

    __slots__ = ("held", "settled", "expires_at", "spans_expiring", "last_deletion")

    def __init__(self):
        self.held = set()
        self.settled = set()
        self.expires_at = -1
        self.spans_expiring = set()
        self.last_deletion = 0


def exchange_commands(layout, index, delta, view, now_ms, counts):
    """The commands one key's exchange sends; a new view (first exchange) reads it whole."""
    name = f"sluice:{{replay:{index:016x}}}:fleet"
    bucket = now_ms - now_ms % WIDTH_MS
    live_from = bucket - (WINDOW_MS - WIDTH_MS)
    span = now_ms - now_ms % WINDOW_MS

    def key_of(start):
        return name if layout == "hash" else f"{name}:{start - start % WINDOW_MS}"

    out = [resp("HINCRBY", key_of(bucket), bucket, delta)]
    counts["HINCRBY"] += 1
    if layout == "hash" and view.expires_at < now_ms:
        out.append(resp("PEXPIRE", name, 2 * WINDOW_MS + WIDTH_MS))
        counts["PEXPIRE"] += 1
        view.expires_at = now_ms + WINDOW_MS
    elif layout == "span" and span not in view.spans_expiring:
        view.spans_expiring.add(span)
        out.append(resp("PEXPIRE", key_of(bucket), span + 2 * WINDOW_MS + WIDTH_MS - now_ms))
        counts["PEXPIRE"] += 1
    if view.last_deletion == 0:
        # The first exchange: read whole, and everything before the current bucket is known.
        out.append(resp("HGETALL", key_of(bucket)))
        counts["HGETALL"] += 1
        if layout == "span":
            out.append(resp("HGETALL", key_of(span - WINDOW_MS)))
            counts["HGETALL"] += 1
        view.held = set(range(live_from, bucket, WIDTH_MS))
        view.settled = set(view.held)
        view.last_deletion = bucket
        return out
    before = bucket - WIDTH_MS
    if before not in view.held:
        out.append(resp("HMGET", key_of(before), before))
        counts["HMGET"] += 1
        if now_ms >= bucket + SYNC_MS:
            view.held.add(before)
    elif before not in view.settled and now_ms >= bucket + SETTLE_MS:
        out.append(resp("HMGET", key_of(before), before))
        counts["HMGET"] += 1
        view.settled.add(before)
    if layout == "hash" and bucket - view.last_deletion >= 4 * WIDTH_MS:
        dead = range(live_from - 4 * WIDTH_MS, live_from, WIDTH_MS)
        out.append(resp("HDEL", name, *dead))
        counts["HDEL"] += 1
        view.last_deletion = bucket
    view.held = {b for b in view.held if b >= live_from}
    view.settled = {b for b in view.settled if b >= live_from}
    return out


def cpu_seconds(pid):
    """redis-server's user + system CPU so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_redis(workdir):
    port = free_port()
    proc = subprocess.Popen(
        ["taskset", "-c", "1", "redis-server", "--bind", "127.0.0.1", "--port", str(port),
         "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            return proc, socket.create_connection(("127.0.0.1", port))
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit(f"redis-server did not listen on port {port} within 10 s")


def drain(sock):
    """Reads and drops the replies: the replay measures Redis, not what it answers."""
    try:
        while sock.recv(1 << 20):
            pass
    except OSError:
        pass


def replay(layout, args, workdir):
    """One run on a fresh redis-server: (CPU µs per request, requests per second, counts)."""
    proc, sock = start_redis(workdir)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=drain, args=(sock,), daemon=True).start()
    views = {}
    counts = dict.fromkeys(COMMANDS, 0)
    requests = 0
    next_cold = 0
    started = time.monotonic()
    due = started
    measure_from = None
    try:
        while True:
            now = time.monotonic()
            if measure_from is None and now - started >= args.warm:
                measure_from, cpu_from = now, cpu_seconds(proc.pid)
                counts = dict.fromkeys(COMMANDS, 0)
                requests = 0
            if now - started >= args.warm + args.measure:
                break
            deltas = {}
            arrivals = int(args.rate * PERIOD_S)
            for _ in range(arrivals):
                if args.cold:
                    index, next_cold = next_cold, next_cold + 1
                else:
                    index = random.randrange(args.keys)
                deltas[index] = deltas.get(index, 0) + 1
            requests += arrivals
            now_ms = int(time.time() * 1000)
            batch = []
            for index, delta in deltas.items():
                view = views.setdefault(index, KeyView())
                batch += exchange_commands(layout, index, delta, view, now_ms, counts)
            sock.sendall(b"".join(batch))
            due += PERIOD_S
            time.sleep(max(0.0, due - time.monotonic()))
        seconds = time.monotonic() - measure_from
        used = cpu_seconds(proc.pid) - cpu_from
    finally:
        sock.close()
        proc.kill()
        proc.wait()
    return used / requests * 1e6, requests / seconds, {c: n / requests for c, n in counts.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--rate", type=int, default=42_000, help="requests per second")
    parser.add_argument("--warm", type=float, default=65, help="seconds before measuring")
    parser.add_argument("--measure", type=float, default=60, help="seconds measured")
    parser.add_argument("--cold", action="store_true", help="every request on a new key")
    args = parser.parse_args()
    os.sched_setaffinity(0, {0})
    results = {"hash": [], "span": []}
    with tempfile.TemporaryDirectory() as workdir:
        for round_number in range(1, args.rounds + 1):
            for layout in ("hash", "span"):
                cpu_us, rate, per_request = replay(layout, args, workdir)
                results[layout].append(cpu_us)
                mix = " ".join(f"{c} {n:.3f}" for c, n in per_request.items() if n > 0)
                print(f"round {round_number} {layout}: redis-server {cpu_us:.2f} µs per request "
                      f"at {rate:,.0f} req/s; commands per request: {mix}", flush=True)
    ratios = [s / h for s, h in zip(results["span"], results["hash"])]
    print(f"median redis-server CPU per request: hash {statistics.median(results['hash']):.2f} "
          f"µs, span {statistics.median(results['span']):.2f} µs; span / hash by round "
          f"{', '.join(f'{r:.2f}' for r in ratios)}, median {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
