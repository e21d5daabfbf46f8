# SPDX-License-Identifier: Apache-2.0
"""The soak test's children (demo backends, redis-server, sluice) and the faults injected into
them (docs/soak.md, "Faults"). Every fault records when it happened, so the invariants can tell
an explained failure from an unexplained one."""

import json
import os
import random
import re
import select
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

START_TIMEOUT_S = 60.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Child:
    """A child process whose stdout and stderr go to a log file (appended across restarts)."""

    def __init__(self, name, args, log_dir, env=None):
        self.name = name
        self.args = list(args)
        self.log_path = Path(log_dir) / f"{name}.log"
        self.env = env
        self.process = None
        self.start()

    def start(self):
        self.log = open(self.log_path, "a")
        self.log.write(f"=== {time.strftime('%H:%M:%S')} start: {' '.join(self.args)}\n")
        self.log.flush()
        self.offset = self.log_path.stat().st_size
        self.process = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=self.env)

    def wait_for(self, pattern, timeout=START_TIMEOUT_S):
        """The first match of pattern in what this start of the child printed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.log_path, errors="replace") as f:
                f.seek(self.offset)
                match = re.search(pattern, f.read())
            if match:
                return match
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"{self.name}: no /{pattern}/ in {self.log_path} "
                           f"(exit status {self.process.poll()})")

    @property
    def pid(self):
        return self.process.pid

    def alive(self):
        return self.process.poll() is None

    def kill(self):
        if self.alive():
            self.process.kill()
        self.process.wait()
        self.log.close()

    def stop(self, timeout=15):
        """SIGTERM, then SIGKILL after timeout; the exit status (None when it had to be killed)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                self.log.close()
                return None
        self.log.close()
        return self.process.returncode


class DemoBackend(Child):
    def __init__(self, binary, index, log_dir):
        self.port = 0
        self.binary = binary
        super().__init__(f"backend-{index}", self.command(), log_dir)
        self.port = int(self.wait_for(r"listening \S+:(\d+)").group(1))
        self.args = self.command()  # restarts come back on the same port

    def command(self):
        return [self.binary, "--address", "127.0.0.1", "--port", str(self.port), "--threads", "1"]

    @property
    def endpoint(self):
        return f"127.0.0.1:{self.port}"


class Redis(Child):
    def __init__(self, log_dir):
        self.port = free_port()
        super().__init__("redis", ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                                   "--save", "", "--appendonly", "no", "--protected-mode", "no"],
                         log_dir)
        self.wait_ready()

    def wait_ready(self):
        self.wait_for(r"[Rr]eady to accept connections")


def make_certificates(directory):
    """A throwaway CA and a certificate for localhost and 127.0.0.1 signed by it."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)

    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-days", "2", "-subj", "/CN=sluice soak CA", "-keyout", str(d / "ca.key"),
            "-out", str(d / "ca.crt"), "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-subj", "/CN=localhost", "-keyout", str(d / "tls.key"), "-out", str(d / "tls.csr"))
    (d / "ext.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                               "extendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", str(d / "tls.csr"), "-CA", str(d / "ca.crt"), "-CAkey",
            str(d / "ca.key"), "-CAcreateserial", "-days", "2", "-extfile", str(d / "ext.cnf"),
            "-out", str(d / "tls.crt"))
    return d


class Admin:
    """The admin API and /metrics of the gateway under test."""

    def __init__(self, base, token):
        self.base = base
        self.token = token

    def call(self, method, path, body=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + path, data=data, method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def json(self, method, path, body=None):
        status, data = self.call(method, path, body)
        try:
            return status, json.loads(data) if data else None
        except ValueError:
            return status, None

    def metrics(self):
        with urllib.request.urlopen(self.base + "/metrics", timeout=30) as response:
            return response.read().decode()


class FaultLog:
    """What was injected and when: counts per kind, endpoint kill windows, Redis lifetimes."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.backend_windows = []  # {"backend", "endpoint", "start", "end"}
        self.redis_lives = [[time.monotonic(), None]]  # [start, end]; end None while alive
        self.redis_down = []  # [kill, back]
        self.events = []  # (t, text) for the progress lines
        self.admin_storms = []  # {"t", "puts", "problems"}
        self.slow_waves = []  # [start, end]: slowloris connections open (end None while open)
        self.slow = {"opened": 0, "cut": 0, "uncut": 0, "max_life_s": 0.0, "statuses": {}}
        self.garbage = {"sent": 0, "statuses": {}, "5xx": 0}

    def count(self, kind, text=None):
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.events.append((time.monotonic(), text or kind))


class Faults:
    """The fault injectors. Each runs in its own thread so faults overlap as they would."""

    def __init__(self, gateway, backends, redis, admin, config_path, target, log, rng,
                 down_s, header_timeout_s, stop):
        self.gateway = gateway
        self.backends = backends
        self.redis = redis
        self.admin = admin
        self.config_path = config_path
        self.target = target
        self.log = log
        self.rng = rng
        self.down_s = down_s
        self.header_timeout_s = header_timeout_s
        self.stop = stop
        self.admin_lock = threading.Lock()  # storms one at a time: the counter delta is theirs
        self.kill_lock = threading.Lock()  # one endpoint down at a time
        self.next_limit = 1000
        self.threads = []

    def launch(self, kind):
        thread = threading.Thread(target=getattr(self, kind), daemon=True, name=kind)
        thread.start()
        self.threads.append(thread)

    def join(self, timeout):
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.1, deadline - time.monotonic()))
        return [t.name for t in self.threads if t.is_alive()]

    # -- processes -----------------------------------------------------------------------------

    def kill_backend(self):
        """SIGKILL one endpoint of the pool, start it again on its port after down_s."""
        if not self.kill_lock.acquire(blocking=False):
            self.log.count("kill_backend skipped", "kill_backend skipped (one already down)")
            return
        try:
            backend = self.rng.choice(self.backends)
            window = {"backend": "pool", "endpoint": backend.endpoint, "start": time.monotonic(),
                      "end": None}
            with self.log.lock:
                self.log.backend_windows.append(window)
            backend.kill()
            self.log.count("kill_backend", f"SIGKILL backend {backend.endpoint}")
            self.stop.wait(self.down_s)
            backend.start()
            backend.wait_for(r"listening ")
            window["end"] = time.monotonic()
            self.log.count("restart_backend", f"backend {backend.endpoint} listening again")
        finally:
            self.kill_lock.release()

    def kill_redis(self):
        """SIGKILL redis-server, start it again (empty: nothing is persisted) after down_s."""
        # Both records err on the side of more overlap: the outage starts before the signal,
        # the old lifetime ends only once the process is gone (a decision it counted just
        # before dying is still its own), and the new one starts before the process does.
        with self.log.lock:
            if self.log.redis_down and self.log.redis_down[-1][1] is None:
                return
            self.log.redis_down.append([time.monotonic(), None])
        self.redis.kill()
        with self.log.lock:
            self.log.redis_lives[-1][1] = time.monotonic()
        self.log.count("kill_redis", "SIGKILL redis-server")
        self.stop.wait(self.down_s)
        with self.log.lock:
            self.log.redis_lives.append([time.monotonic(), None])
        self.redis.start()
        self.redis.wait_ready()
        with self.log.lock:
            self.log.redis_down[-1][1] = time.monotonic()
        self.log.count("restart_redis", "redis-server ready again (empty)")

    def sighup_storm(self, n=20, spacing_s=0.05):
        """n SIGHUPs spacing_s apart: reload after reload while traffic flows."""
        for _ in range(n):
            if not self.gateway.alive():
                return
            os.kill(self.gateway.pid, signal.SIGHUP)
            time.sleep(spacing_s)
        self.log.count("sighup_storm", f"SIGHUP storm ({n} signals)")

    # -- admin ---------------------------------------------------------------------------------

    def admin_storm(self, n=25):
        """n PUTs of the `storm` policy, each with a limit never sent before, one after another;
        then the policy read back, the file read back (persist is on) and the change counter."""
        from invariants import check_admin_storm, metric_sum, parse_metrics

        with self.admin_lock:
            before = metric_sum(parse_metrics(self.admin.metrics()), "sluice_admin_changes_total",
                                resource="limits")
            puts = []
            for _ in range(n):
                self.next_limit += self.rng.randint(1, 7)
                body = {"requests": self.next_limit, "window_ms": 60000,
                        "buckets": self.rng.choice([10, 60])}
                try:
                    status, _ = self.admin.call("PUT", "/admin/limits/storm", body)
                except OSError as e:
                    status = f"no answer ({e})"
                puts.append((body, status))
            status, policy = self.admin.json("GET", "/admin/limits/storm")
            try:
                persisted = json.loads(Path(self.config_path).read_text())["limits"]["storm"]
            except (OSError, ValueError, KeyError) as e:
                persisted = {"error": str(e)}
            after = metric_sum(parse_metrics(self.admin.metrics()), "sluice_admin_changes_total",
                               resource="limits")
            problems = check_admin_storm(puts, policy if status == 200 else None, before, after,
                                         persisted)
            with self.log.lock:
                self.log.admin_storms.append({"t": time.monotonic(), "puts": len(puts),
                                              "last": puts[-1][0], "problems": problems})
            self.log.count("admin_storm", f"admin storm ({n} PUTs){' PROBLEM' if problems else ''}")

    def admin_and_sighup_storm(self):
        """An admin storm and a SIGHUP storm at once: reloads of the file the PUTs write."""
        hup = threading.Thread(target=self.sighup_storm, kwargs={"n": 30, "spacing_s": 0.03})
        hup.start()
        self.admin_storm(40)
        hup.join()
        self.log.count("admin_and_sighup_storm", "admin storm during a SIGHUP storm")

    # -- hostile clients -----------------------------------------------------------------------

    def slowloris(self, n=60, dribble_s=2.0):
        """n connections that each send one byte of a request head every dribble_s. The gateway
        must answer 408 (or close) within header_timeout_ms; each one still open after the header
        timeout plus 10 s is 'uncut'."""
        head = b"GET /ok HTTP/1.1\r\nHost: localhost\r\nX-Soak-User: slow\r\nX-Pad: " + b"a" * 200
        wave = [time.monotonic(), None]
        with self.log.lock:
            self.log.slow_waves.append(wave)
        socks = {}
        for _ in range(n):
            try:
                s = socket.create_connection((self.target["host"], self.target["http_port"]), 30)
                s.setblocking(False)
                socks[s] = [time.monotonic(), 0, b""]
            except OSError:
                continue
        self.log.count("slowloris", f"slowloris: {len(socks)} connections dribbling")
        with self.log.lock:
            self.log.slow["opened"] += len(socks)
        give_up = time.monotonic() + self.header_timeout_s + 10
        next_byte = time.monotonic()
        while socks and time.monotonic() < give_up:
            now = time.monotonic()
            if now >= next_byte:
                for s, state in socks.items():
                    try:
                        s.send(head[state[1] % len(head):state[1] % len(head) + 1])
                        state[1] += 1
                    except OSError:
                        pass
                next_byte = now + dribble_s
            readable, _, _ = select.select(list(socks), [], [], 0.2)
            for s in readable:
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                socks[s][2] += data
                if not data:
                    self._slow_done(s, socks.pop(s))
        for s in list(socks):
            s.close()
            with self.log.lock:
                self.log.slow["uncut"] += 1
        wave[1] = time.monotonic()

    def _slow_done(self, s, state):
        life = time.monotonic() - state[0]
        s.close()
        match = re.match(rb"HTTP/1\.1 (\d{3})", state[2])
        status = match.group(1).decode() if match else "closed"
        with self.log.lock:
            slow = self.log.slow
            slow["cut"] += 1
            slow["max_life_s"] = max(slow["max_life_s"], round(life, 2))
            slow["statuses"][status] = slow["statuses"].get(status, 0) + 1

    GARBAGE = (
        lambda r: r.randbytes(r.randint(1, 3000)),
        lambda r: b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        lambda r: b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        lambda r: b"GET /../../etc/passwd HTTP/1.1\r\nHost: a\r\n\r\n",
        lambda r: b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n",
        lambda r: b"GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + b"b" * 70000 + b"\r\n\r\n",
        lambda r: b"G\x00T / HTTP/1.1\r\n\r\n",
        lambda r: b"GET / HTTP/9.9\r\nHost: a\r\n\r\n",
        lambda r: b"GET /ok HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
        lambda r: b"\r\n" * 100 + b"GET / HTTP/1.1\r\nHost\r\n\r\n",
        lambda r: b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + r.randbytes(200),
        lambda r: b"GET /ws/echo HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: bad\r\n\r\n" + r.randbytes(100),
    )

    def garbage(self, n=40):
        """n connections sending random bytes or malformed heads (half of the random ones to the
        TLS port); whatever answers must not be a 5xx."""
        for i in range(n):
            payload = self.GARBAGE[i % len(self.GARBAGE)](self.rng)
            port = self.target["http_port"]
            if i % len(self.GARBAGE) == 0 and i % 2:
                port = self.target["https_port"]
            answer = b""
            try:
                with socket.create_connection((self.target["host"], port), 30) as s:
                    s.settimeout(self.header_timeout_s + 10)
                    try:
                        s.sendall(payload)
                        s.shutdown(socket.SHUT_WR) if i % 3 == 0 else None
                        while len(answer) < 65536:
                            data = s.recv(65536)
                            if not data:
                                break
                            answer += data
                            if b"\r\n\r\n" in answer and i % 3:
                                break
                    except OSError:
                        pass
            except OSError:
                continue
            match = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
            status = match.group(1).decode() if match else "no answer"
            with self.log.lock:
                g = self.log.garbage
                g["sent"] += 1
                g["statuses"][status] = g["statuses"].get(status, 0) + 1
                if status.startswith("5") and status not in ("501", "505"):  # refusals
                    g["5xx"] += 1
        self.log.count("garbage", f"garbage: {n} connections")
