#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Soak test: the real sluice binary under mixed traffic and injected faults (docs/soak.md).

    tests/soak/soak.py [MINUTES] [--seconds S] [--out DIR] [--seed N]

Starts three demo backends, a redis-server and sluice (HTTP and TLS listeners, the Redis store
falling back to local, a small policy for the "limited" users, breaker, health checks and
retries, access log to a file, admin with a token and persist) in a temporary directory; runs
traffic (traffic.py) and faults (faults.py) for the duration; checks the invariants
(invariants.py) every 5 s; prints a summary, writes it to OUT/summary.json and exits 1 on any
breach. The children's logs stay in OUT (build/soak by default).
"""

import argparse
import json
import os
import random
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import invariants as inv  # noqa: E402
import traffic  # noqa: E402
from faults import Admin, Child, DemoBackend, FaultLog, Faults, Redis, make_certificates  # noqa: E402

ROOT = HERE.parents[1]
TOKEN_ENV = "SLUICE_SOAK_ADMIN_TOKEN"

# The small policy of the limited users, and its guarantee's span (window - window/buckets).
TIGHT = {"requests": 20, "window_ms": 10000, "buckets": 10, "mode": "enforce"}
TIGHT_SPAN_S = (TIGHT["window_ms"] - TIGHT["window_ms"] / TIGHT["buckets"]) / 1000
HEADER_TIMEOUT_MS = 5000
BREAKER_WINDOW_MS = 5000
HEALTH = {"path": "/healthz", "interval_ms": 1000, "timeout_ms": 1000, "healthy_threshold": 2,
          "unhealthy_threshold": 2, "expected_statuses": [200]}
# A failure is explained by an endpoint kill from EXPLAIN_BEFORE_S before the kill until
# EXPLAIN_AFTER_S after the endpoint listens again: a breaker window (5 s) to forget the
# failures, two health-check passes (2 s) to be picked again, and 3 s of slack.
EXPLAIN_BEFORE_S = 1.0
EXPLAIN_AFTER_S = BREAKER_WINDOW_MS / 1000 + HEALTH["interval_ms"] * HEALTH["healthy_threshold"] / 1000 + 3
FD_MIN_SLACK = 6  # fds: +-10 % of the baseline, but never less than this many (see docs/soak.md)
FAULT_KINDS = ("kill_backend", "sighup_storm", "admin_storm", "kill_redis", "slowloris", "garbage",
               "admin_and_sighup_storm")


def make_config(directory, backends, redis_port, certs, access_log):
    return {
        "listeners": [
            {"name": "http", "address": "127.0.0.1", "port": 0},
            {"name": "https", "address": "127.0.0.1", "port": 0,
             "tls": {"certificates": [{"cert": str(certs / "tls.crt"), "key": str(certs / "tls.key")}],
                     "alpn": ["h2", "http/1.1"]}},
        ],
        "admin": {"address": "127.0.0.1", "port": 0, "token_env": TOKEN_ENV, "persist": True},
        "threads": 2,
        "drain_timeout_ms": 5000,
        "http": {"header_timeout_ms": HEADER_TIMEOUT_MS, "idle_timeout_ms": 60000,
                 "max_connections": 10000},
        "access_log": {"enabled": True, "path": str(access_log)},
        "identity": [{"header": "X-Soak-User"}, {"client_ip": True}],
        "store": {"type": "redis", "host": "127.0.0.1", "port": redis_port, "timeout_ms": 1000,
                  "on_error": "local"},
        "limits": {
            "tight": dict(TIGHT),
            "roomy": {"requests": 100000000, "window_ms": 10000, "buckets": 10},
            "storm": {"requests": 1000, "window_ms": 60000, "buckets": 60},
        },
        "backends": {
            "pool": {
                "endpoints": [b.endpoint for b in backends],
                "balance": "round_robin",
                "connect_timeout_ms": 2000,
                "timeout_ms": 30000,
                "breaker": {"enabled": True, "k": 1.5, "protection": 5,
                            "window_ms": BREAKER_WINDOW_MS, "buckets": 10,
                            "failure_statuses": [500, 502, 503, 504]},
                "health_check": dict(HEALTH),
                "retry": {"attempts": 2, "on": ["connect_error", "reset", "timeout", 502, 503, 504],
                          "backoff_ms": 25, "budget_percent": 20, "min_retry_concurrency": 3},
            },
        },
        "routes": [
            {"name": "limited", "prefix": "/lim", "backend": "pool", "limit": "tight",
             "strip_prefix": True},
            {"name": "storm", "prefix": "/storm", "backend": "pool", "limit": "storm",
             "strip_prefix": True},
            {"name": "main", "prefix": "/", "backend": "pool", "limit": "roomy"},
        ],
    }


def proc_sample(pid):
    """(RSS in KiB, open fds) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return None


class Soak:
    def __init__(self, args):
        self.args = args
        self.duration = args.seconds if args.seconds else args.minutes * 60
        self.compressed = self.duration < 180
        self.warmup = min(60.0, max(8.0, 0.3 * self.duration))
        self.flat_window = min(60.0, max(8.0, (self.duration - self.warmup) / 3))
        self.down_s = 3.0 if self.compressed else 8.0
        self.out = Path(args.out)
        self.rng = random.Random(args.seed)
        self.stop = threading.Event()
        self.recorder = traffic.Recorder()
        self.faultlog = FaultLog()
        self.samples = []  # (t, rss KiB, fds)
        self.scrapes = []  # (t, redis failed ops, fallback active)
        self.metrics = {}
        self.children = []
        self.exit_status = "running"
        self.t0 = None

    def now(self):
        return time.monotonic() - self.t0

    def say(self, text):
        print(f"[{self.now():6.1f}s] {text}" if self.t0 else f"[setup] {text}", flush=True)

    # -- setup ---------------------------------------------------------------------------------

    def start(self):
        self.out.mkdir(parents=True, exist_ok=True)
        for old in self.out.glob("*"):
            if old.is_file():
                old.unlink()
        self.tmp = Path(tempfile.mkdtemp(prefix="sluice-soak-"))
        certs = make_certificates(self.tmp / "tls")
        self.backends = [DemoBackend(self.args.backend, i, self.out) for i in range(3)]
        self.children += self.backends
        self.redis = Redis(self.out)
        self.children.append(self.redis)
        self.config_path = self.tmp / "sluice.json"
        config = make_config(self.tmp, self.backends, self.redis.port, certs,
                             self.out / "access.log")
        self.config_path.write_text(json.dumps(config, indent=2))
        shutil.copy(self.config_path, self.out / "sluice.start.json")
        token = secrets.token_hex(16)
        env = {**os.environ, TOKEN_ENV: token}
        check = subprocess.run([self.args.sluice, "--config", str(self.config_path), "--check"],
                               capture_output=True, text=True, env=env)
        if check.returncode != 0:
            raise RuntimeError(f"sluice --check refused the config:\n{check.stdout}{check.stderr}")
        self.say(f"config ok ({self.config_path}); backends "
                 f"{', '.join(b.endpoint for b in self.backends)}; redis port {self.redis.port}")
        self.gateway = Child("sluice", [self.args.sluice, "--config", str(self.config_path)],
                             self.out, env=env)
        self.children.append(self.gateway)
        ready = self.gateway.wait_for(r"ready proxy=(\S+):(\d+) admin=(\S+) .*https@\S+:(\d+)")
        self.gateway.wait_for(r"redis store ready")
        self.admin = Admin(f"http://{ready.group(3)}", token)
        ssl_context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        self.target = {"host": ready.group(1), "http_port": int(ready.group(2)),
                       "https_port": int(ready.group(4)), "ssl_context": ssl_context,
                       "h2load": shutil.which("h2load")}
        self.say(f"sluice pid {self.gateway.pid}: http {self.target['http_port']}, "
                 f"https {self.target['https_port']}, admin {ready.group(3)}")
        self.faults = Faults(self.gateway, self.backends, self.redis, self.admin, self.config_path,
                             self.target, self.faultlog, self.rng, self.down_s,
                             HEADER_TIMEOUT_MS / 1000, self.stop)

    def start_traffic(self):
        t, r, s = self.target, self.recorder, self.stop
        self.workers = (
            [traffic.PlainClient(t, r, s, i, 0.02) for i in range(6)]
            + [traffic.TlsClient(t, r, s, i, 0.02) for i in range(2)]
            + [traffic.StreamClient(t, r, s, i, 0.1) for i in range(2)]
            + [traffic.LimitedUser(t, r, s, i, 0.03) for i in range(3)]
            + [traffic.WebSocketClient(t, r, s, i, 0.0) for i in range(2)])
        if t["h2load"]:
            self.workers.append(traffic.H2Load(t, r, s, 0, 3.0))
        for worker in self.workers:
            worker.start()

    def schedule(self):
        """(time, kind): the fault kinds in turn, from half the warm-up until the tail that is
        left calm so recovery can be seen."""
        first = self.warmup / 2
        last = self.duration - max(EXPLAIN_AFTER_S + self.down_s, 0.15 * self.duration)
        gap = 8.5 if not self.compressed else max(2.0, (last - first) / len(FAULT_KINDS))
        events, t, i = [], first, 0
        while t < last:
            events.append((t, FAULT_KINDS[i % len(FAULT_KINDS)]))
            t += gap
            i += 1
        return events

    # -- the run -------------------------------------------------------------------------------

    def scrape(self):
        try:
            samples = inv.parse_metrics(self.admin.metrics())
        except OSError as e:
            self.say(f"metrics scrape failed: {e}")
            return
        self.metrics = samples
        failed = inv.metric_sum(samples, "sluice_store_operations_total", store="redis",
                                result=("error", "timeout"))
        active = inv.metric_sum(samples, "sluice_store_fallback_active", store="redis")
        self.scrapes.append((time.monotonic(), failed, active))

    def run(self):
        self.start()
        self.scrape()
        self.t0 = time.monotonic()
        self.start_traffic()
        events = self.schedule()
        self.say(f"running {self.duration:.0f} s: warm-up {self.warmup:.0f} s, flatness windows "
                 f"{self.flat_window:.0f} s, {len(events)} faults scheduled, "
                 f"{len(self.workers)} client threads")
        next_sample = next_check = 0.0
        next_progress = 30.0
        while self.now() < self.duration:
            now = self.now()
            while events and events[0][0] <= now:
                self.faults.launch(events.pop(0)[1])
            if now >= next_sample:
                sample = proc_sample(self.gateway.pid) if self.gateway.alive() else None
                if sample:
                    self.samples.append((now, *sample))
                next_sample += 1.0
            if now >= next_check:
                if next_check > 0:
                    self.scrape()
                    self.print_check(self.evaluate())
                next_check += 5.0
            if now >= next_progress:
                self.print_progress()
                next_progress += 30.0
            if not self.gateway.alive():
                self.say(f"sluice exited with status {self.gateway.process.returncode}")
                break
            time.sleep(0.1)
        self.finish()

    def finish(self):
        self.say("stopping traffic and faults")
        self.stop.set()
        for worker in self.workers:
            worker.join(traffic.CLIENT_TIMEOUT_S + 30)
        stuck = self.faults.join(60)
        if stuck:
            self.say(f"faults still running: {stuck}")
        self.recovered = self.check_recovery()
        self.scrape()
        self.reloads = (inv.metric_sum(self.metrics, "sluice_config_reloads_total", result="ok"),
                        inv.metric_sum(self.metrics, "sluice_config_reloads_total", result="error"))
        if self.gateway.alive():
            self.exit_status = self.gateway.stop(timeout=30)
        else:
            self.exit_status = self.gateway.process.returncode
        for child in self.children:
            if child is not self.gateway:
                child.stop()
        shutil.copy(self.config_path, self.out / "sluice.end.json")
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check_recovery(self):
        """After the faults: every endpoint healthy and the store back on Redis, within 30 s."""
        deadline = time.monotonic() + 30
        last = None
        while time.monotonic() < deadline and self.gateway.alive():
            try:
                status, endpoints = self.admin.json("GET", "/admin/backends/pool/endpoints")
                metrics = inv.parse_metrics(self.admin.metrics())
            except OSError as e:
                last = str(e)
                time.sleep(1)
                continue
            states = [e.get("state") for e in (endpoints or {}).get("endpoints", endpoints or [])] \
                if isinstance(endpoints, (dict, list)) else []
            fallback = inv.metric_sum(metrics, "sluice_store_fallback_active", store="redis")
            last = f"endpoint states {states}, store fallback {fallback:.0f}"
            if status == 200 and states and all(s == "healthy" for s in states) and not fallback:
                return {"verdict": "ok", "detail": last}
            time.sleep(1)
        return {"verdict": "breach", "detail": f"not recovered 30 s after the faults: {last}"}

    # -- invariants ----------------------------------------------------------------------------

    def evaluate(self, final=False):
        counts, failures, admitted = self.recorder.snapshot()
        log = self.faultlog
        with log.lock:
            windows = [dict(w) for w in log.backend_windows]
            redis_lives = [tuple(life) for life in log.redis_lives]
            redis_down = [tuple(d) for d in log.redis_down]
            storms = list(log.admin_storms)
            slow = dict(log.slow)
            slow_waves = [tuple(w) for w in log.slow_waves]
            garbage = dict(log.garbage)
        result = {}

        if final:
            ok = self.exit_status == 0
            result["alive"] = {"verdict": "ok" if ok else "breach",
                               "detail": f"ran to the end; exit status on SIGTERM {self.exit_status}"}
        else:
            alive = self.gateway.alive()
            result["alive"] = {"verdict": "ok" if alive else "breach",
                               "detail": f"pid {self.gateway.pid}" if alive else
                               f"exited with status {self.gateway.process.returncode}"}

        warmup_end = self.t0 + self.warmup
        rss = [(self.t0 + t, r) for t, r, _ in self.samples]
        # The fds of slowloris connections are the gateway's to hold until the header timeout:
        # samples from a wave's start until 1 s after its last connection closed are left out.
        fds = [(self.t0 + t, f) for t, _, f in self.samples
               if not inv.in_any(self.t0 + t, slow_waves, after_s=1.0)]
        result["rss_flat"] = inv.flatness(rss, warmup_end, self.flat_window)
        result["fds_flat"] = inv.flatness(fds, warmup_end, self.flat_window, min_slack=FD_MIN_SLACK)
        for key in ("rss_flat", "fds_flat"):
            result[key]["detail"] = self.flat_detail(result[key], "KiB" if key == "rss_flat" else "fds")

        with_status = [f for f in failures if f["status"] is not None]
        without = [f for f in failures if f["status"] is None]
        explained, unexplained = inv.explain_failures(with_status, windows, EXPLAIN_BEFORE_S,
                                                      EXPLAIN_AFTER_S)
        unexplained_n = sum(f.get("count", 1) for f in unexplained) + garbage["5xx"]
        result["5xx_explained"] = {
            "verdict": "ok" if unexplained_n == 0 else "breach", "explained": explained,
            "unexplained": unexplained_n, "garbage_5xx": garbage["5xx"],
            "examples": [self.show_failure(f) for f in unexplained[:5]],
            "detail": f"{explained} explained, {unexplained_n} unexplained"}
        e_explained, e_unexplained = inv.explain_failures(without, windows, EXPLAIN_BEFORE_S,
                                                          EXPLAIN_AFTER_S)
        e_un = sum(f.get("count", 1) for f in e_unexplained)
        result["errors_explained"] = {
            "verdict": "ok" if e_un == 0 else "breach", "explained": e_explained,
            "unexplained": e_un, "examples": [self.show_failure(f) for f in e_unexplained[:5]],
            "detail": f"{e_explained} explained, {e_un} unexplained (resets, cut bodies, refused)"}

        episodes = inv.fallback_episodes_from_scrapes(self.scrapes)
        episodes = inv.merge_intervals(episodes + [(k - 1, (b if b else time.monotonic()) + 10)
                                                   for k, b in redis_down])

        def allowance(start, end):
            return inv.store_allowance(start, end, redis_lives, episodes)

        breaches, worst, worst_one_store = [], 0, 0
        for user, times in sorted(admitted.items()):
            judged = inv.limit_windows(times, TIGHT["requests"], TIGHT_SPAN_S, allowance)
            worst = max([worst] + [w["count"] for w in judged])
            worst_one_store = max([worst_one_store] + [w["count"] for w in judged
                                                       if w["bound"] == TIGHT["requests"]])
            for b in judged:
                if b["count"] > b["bound"]:
                    breaches.append({"user": user, "at_s": round(b["start"] - self.t0, 2),
                                     "count": b["count"], "bound": b["bound"]})
        result["limit_held"] = {
            "verdict": "ok" if not breaches else "breach", "max_in_span": worst,
            "max_in_span_one_store": worst_one_store,
            "limit": TIGHT["requests"], "span_s": TIGHT_SPAN_S, "breaches": breaches[:10],
            "fallback_episodes": len(episodes),
            "detail": f"most 2xx of one limited user in {TIGHT_SPAN_S:g} s: {worst_one_store} "
                      f"where one store decided (limit {TIGHT['requests']}), {worst} across store "
                      f"switches; {len(breaches)} windows over their bound"}

        problems = [p for s in storms for p in s["problems"]]
        result["admin_kept"] = {"verdict": "ok" if not problems else "breach",
                                "storms": len(storms), "puts": sum(s["puts"] for s in storms),
                                "problems": problems[:10],
                                "detail": f"{len(storms)} storms, {sum(s['puts'] for s in storms)} "
                                          f"PUTs, {len(problems)} problems"}
        reload_errors = inv.metric_sum(self.metrics, "sluice_config_reloads_total", result="error")
        reload_ok = inv.metric_sum(self.metrics, "sluice_config_reloads_total", result="ok")
        result["reloads_ok"] = {"verdict": "ok" if reload_errors == 0 else "breach",
                                "detail": f"{reload_ok:.0f} reloads ok, {reload_errors:.0f} failed"}
        result["slow_clients_cut"] = {
            "verdict": "ok" if slow["uncut"] == 0 else "breach", **slow,
            "detail": f"{slow['opened']} opened, {slow['cut']} cut (max life {slow['max_life_s']} s), "
                      f"{slow['uncut']} still open {HEADER_TIMEOUT_MS / 1000 + 10:g} s later"}
        if final:
            result["recovered"] = self.recovered
        return result

    def flat_detail(self, r, unit):
        if r["verdict"] == "pending":
            return f"warming up (now {r['max']} max {unit})" if r["max"] is not None else "no samples"
        worst = max((abs(w["median"] - r["baseline"]) for w in r["windows"]), default=0)
        return (f"baseline {r['baseline']:g} {unit}, {len(r['windows'])} windows, worst window "
                f"median off by {worst:g} (allowed {r['allowed']:g})")

    def show_failure(self, f):
        return {"class": f["class"], "status": f["status"], "error": f["error"],
                "sent_s": round(f["sent"] - self.t0, 2), "done_s": round(f["done"] - self.t0, 2),
                "count": f.get("count", 1)}

    def print_check(self, result):
        parts = []
        for name, r in result.items():
            short = {"alive": "", "rss_flat": f" {self.samples[-1][1] / 1024:.1f}MiB" if self.samples else "",
                     "fds_flat": f" {self.samples[-1][2]}" if self.samples else "",
                     "5xx_explained": f" {r.get('explained')}/{r.get('unexplained')}",
                     "errors_explained": f" {r.get('explained')}/{r.get('unexplained')}",
                     "limit_held": f" max {r.get('max_in_span_one_store')}/{r.get('max_in_span')}",
                     "admin_kept": f" {r.get('storms')} storms"}.get(name, "")
            parts.append(f"{name}={r['verdict']}{short}")
        self.say("check " + " ".join(parts))
        for name, r in result.items():
            if r["verdict"] == "breach":
                self.say(f"  BREACH {name}: {r.get('detail')}")

    def print_progress(self):
        counts, _, _ = self.recorder.snapshot()
        total = sum(sum(v.values()) for v in counts.values())
        by_class = ", ".join(f"{c} {sum(v.values())}" for c, v in sorted(counts.items()))
        with self.faultlog.lock:
            faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faultlog.counts.items()))
        rss = f"{self.samples[-1][1] / 1024:.1f} MiB" if self.samples else "?"
        fds = self.samples[-1][2] if self.samples else "?"
        self.say(f"progress: {total} requests ({by_class}); rss {rss}, fds {fds}; "
                 f"faults: {faults or 'none yet'}")

    # -- the end -------------------------------------------------------------------------------

    def summary(self):
        result = self.evaluate(final=True)
        counts, _, _ = self.recorder.snapshot()
        rss = [r for _, r, _ in self.samples]
        fds = [f for _, _, f in self.samples]
        with self.faultlog.lock:
            faults = dict(self.faultlog.counts)
            garbage = dict(self.faultlog.garbage)
        _, _, _ = self.recorder.snapshot()
        breaches = [name for name, r in result.items() if r["verdict"] != "ok"]
        access_lines = 0
        try:
            with open(self.out / "access.log", "rb") as f:
                access_lines = sum(1 for _ in f)
        except OSError:
            pass
        data = {
            "duration_s": self.duration, "seed": self.args.seed, "warmup_s": self.warmup,
            "flat_window_s": self.flat_window,
            "requests": counts, "notes": self.recorder.notes,
            "5xx": {"explained": result["5xx_explained"]["explained"],
                    "unexplained": result["5xx_explained"]["unexplained"]},
            "errors": {"explained": result["errors_explained"]["explained"],
                       "unexplained": result["errors_explained"]["unexplained"]},
            "rss_kib": inv.summarize(rss), "fds": inv.summarize(fds),
            "faults": faults, "garbage_answers": garbage["statuses"],
            "access_log_lines": access_lines,
            "access_log_dropped": inv.metric_sum(self.metrics, "sluice_access_log_dropped_total"),
            "invariants": result, "breaches": breaches,
        }
        (self.out / "summary.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
        self.print_summary(data)
        return breaches

    def print_summary(self, data):
        line = "-" * 78
        print(line)
        print(f"soak summary: {data['duration_s']:.0f} s, seed {data['seed']}")
        print(line)
        outcomes = sorted({o for v in data["requests"].values() for o in v})
        print(f"{'requests':<10}" + "".join(f"{o:>9}" for o in outcomes) + f"{'total':>10}")
        for cls, v in sorted(data["requests"].items()):
            print(f"{cls:<10}" + "".join(f"{v.get(o, 0):>9}" for o in outcomes)
                  + f"{sum(v.values()):>10}")
        total = {o: sum(v.get(o, 0) for v in data["requests"].values()) for o in outcomes}
        print(f"{'all':<10}" + "".join(f"{total[o]:>9}" for o in outcomes)
              + f"{sum(total.values()):>10}")
        print(f"5xx: {data['5xx']['explained']} explained, {data['5xx']['unexplained']} unexplained;"
              f" failures without a status: {data['errors']['explained']} explained, "
              f"{data['errors']['unexplained']} unexplained")
        r, f = data["rss_kib"], data["fds"]
        if r["min"] is not None:
            print(f"RSS MiB min/median/max: {r['min'] / 1024:.1f} / {r['median'] / 1024:.1f} / "
                  f"{r['max'] / 1024:.1f};  fds min/median/max: {f['min']} / {f['median']} / {f['max']}")
        print("faults: " + ", ".join(f"{k} {v}" for k, v in sorted(data["faults"].items())))
        print(f"garbage answers: {data['garbage_answers']}; access log: {data['access_log_lines']} "
              f"lines, {data['access_log_dropped']:.0f} dropped")
        if data["notes"]:
            print(f"notes: {data['notes']}")
        print(line)
        for name, result in data["invariants"].items():
            print(f"{name:<18} {result['verdict'].upper():<8} {result.get('detail', '')}")
            if result["verdict"] != "ok":
                for key in ("examples", "breaches", "problems", "windows"):
                    for item in (result.get(key) or [])[:5]:
                        if key != "windows" or not item.get("ok", True):
                            print(f"{'':<18}   {item}")
        print(line)
        print("verdict: " + ("PASS" if not data["breaches"] else
                             "BREACH of " + ", ".join(data["breaches"])))
        print(f"summary: {self.out / 'summary.json'}; logs: {self.out}")

    def cleanup(self):
        self.stop.set()
        for child in reversed(self.children):
            try:
                if child.process.poll() is None:
                    child.process.kill()
                    child.process.wait()
            except OSError:
                pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("minutes", nargs="?", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, help="duration in seconds (overrides MINUTES)")
    parser.add_argument("--out", default=str(ROOT / "build" / "soak"), help="logs and summary.json")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    parser.add_argument("--sluice", default=os.environ.get("SLUICE_BINARY",
                                                           str(ROOT / "build" / "bin" / "sluice")))
    parser.add_argument("--backend", default=os.environ.get(
        "SLUICE_DEMO_BACKEND", str(ROOT / "build" / "bin" / "sluice-demo-backend")))
    args = parser.parse_args(argv)
    soak = Soak(args)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
    try:
        soak.run()
        breaches = soak.summary()
    except BaseException:
        soak.cleanup()
        raise
    soak.cleanup()
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
