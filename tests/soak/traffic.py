# SPDX-License-Identifier: Apache-2.0
"""The soak test's traffic: client threads that each run one kind of request until stopped and
record every answer in a Recorder (docs/soak.md, "Traffic").

A slow answer is never a failure: every client timeout is generous (the machine is shared). A
5xx, a reset or a cut body is recorded as a failure with its send and end times, to be explained
by the fault windows later (invariants.explain_failures).
"""

import asyncio
import hashlib
import http.client
import os
import re
import ssl
import subprocess
import threading
import time

CLIENT_TIMEOUT_S = 60.0
BACKEND = "pool"  # every route of the generated config goes to this backend


class Recorder:
    """Thread-safe counts per (class, outcome), failures with times, and the 2xx times of the
    limited users."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}  # class -> {"2xx": n, "429": n, "4xx": n, "5xx": n, "error": n, ...}
        self.failures = []  # dicts for explain_failures
        self.admitted = {}  # limited user -> [(sent, done)]
        self.notes = {}  # class -> {note: n}, e.g. body mismatches

    def record(self, cls, sent, done, status=None, error=None, user=None, count=1):
        if status is None:
            outcome = "error"
        elif status == 429:
            outcome = "429"
        else:
            outcome = f"{status // 100}xx"
        with self.lock:
            bucket = self.counts.setdefault(cls, {})
            bucket[outcome] = bucket.get(outcome, 0) + count
            if status is None or status >= 500:
                self.failures.append({"class": cls, "backend": BACKEND, "sent": sent,
                                      "done": done, "status": status, "error": error,
                                      "user": user, "count": count})
            if user is not None and status is not None and 200 <= status < 300:
                self.admitted.setdefault(user, []).append((sent, done))

    def note(self, cls, what, count=1):
        with self.lock:
            bucket = self.notes.setdefault(cls, {})
            bucket[what] = bucket.get(what, 0) + count

    def snapshot(self):
        with self.lock:
            return ({k: dict(v) for k, v in self.counts.items()}, list(self.failures),
                    {k: list(v) for k, v in self.admitted.items()})

    def total(self):
        with self.lock:
            return sum(sum(v.values()) for v in self.counts.values())


class Worker(threading.Thread):
    """One client loop; subclasses implement step() (one request or one session)."""

    cls = "?"

    def __init__(self, target, recorder, stop, index=0, pause_s=0.0):
        super().__init__(daemon=True, name=f"{self.cls}-{index}")
        self.target = target
        self.recorder = recorder
        self.stop = stop
        self.index = index
        self.pause_s = pause_s
        self.conn = None

    def run(self):
        while not self.stop.is_set():
            try:
                self.step()
            except Exception as e:  # recorded by step; anything else is a bug of ours
                self.recorder.note(self.cls, f"worker exception {type(e).__name__}: {e}")
                self.drop()
                self.stop.wait(0.5)
            if self.pause_s:
                self.stop.wait(self.pause_s)
        self.drop()

    def drop(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except OSError:
                pass
            self.conn = None

    def connect(self):
        raise NotImplementedError

    def exchange(self, method, path, headers=None, body=None, user=None, chunked=False,
                 expect=None):
        """One request on the kept connection (opened when needed); records the outcome.
        Returns (status, body bytes) or (None, None) on a transport failure."""
        if self.conn is None:
            self.conn = self.connect()
        sent = time.monotonic()
        try:
            self.conn.request(method, path, body=body, headers=headers or {},
                              encode_chunked=chunked)
            response = self.conn.getresponse()
            data = response.read()
            done = time.monotonic()
        except (OSError, http.client.HTTPException, ssl.SSLError) as e:
            done = time.monotonic()
            self.drop()
            self.recorder.record(self.cls, sent, done, None, f"{type(e).__name__}: {e}", user)
            return None, None
        if response.will_close:
            self.drop()
        status = response.status
        if expect is not None and 200 <= status < 300 and not expect(data):
            # A 2xx with the wrong body is a failure without a status (a cut stream).
            self.recorder.record(self.cls, sent, done, None, "body mismatch", user)
            self.recorder.note(self.cls, "body mismatch")
            return None, None
        self.recorder.record(self.cls, sent, done, status, None, user)
        return status, data


class PlainClient(Worker):
    """Keep-alive HTTP/1.1 on the plain listener: small requests of several kinds."""

    cls = "http"
    PATHS = ("/ok", "/headers/soak", "/slow/20", "/bytes/2048", "/ok?x=1")

    def connect(self):
        return http.client.HTTPConnection(self.target["host"], self.target["http_port"],
                                          timeout=CLIENT_TIMEOUT_S)

    def step(self):
        self.n = getattr(self, "n", 0) + 1
        path = self.PATHS[self.n % len(self.PATHS)]
        method = "HEAD" if self.n % 11 == 0 else "GET"
        self.exchange(method, path, {"X-Soak-User": f"plain-{self.index}"})


class TlsClient(Worker):
    """HTTPS on the TLS listener, the certificate verified against the run's CA; every 25th
    request on a new connection, so handshakes (and resumptions) keep happening."""

    cls = "tls"

    def connect(self):
        return http.client.HTTPSConnection("localhost", self.target["https_port"],
                                           timeout=CLIENT_TIMEOUT_S,
                                           context=self.target["ssl_context"])

    def step(self):
        self.n = getattr(self, "n", 0) + 1
        if self.n % 25 == 0:
            self.drop()
        path = ("/ok", "/bytes/4096", "/headers")[self.n % 3]
        self.exchange("GET", path, {"X-Soak-User": f"tls-{self.index}"})


def pattern_ok(size):
    return lambda data: len(data) == size


class StreamClient(Worker):
    """Streaming both ways: a large response (/bytes), a chunked upload echoed back (/echo) and a
    Content-Length upload counted (/count), alternating, over plain or TLS."""

    cls = "stream"

    def connect(self):
        if self.index % 2:
            return http.client.HTTPSConnection("localhost", self.target["https_port"],
                                               timeout=CLIENT_TIMEOUT_S,
                                               context=self.target["ssl_context"])
        return http.client.HTTPConnection(self.target["host"], self.target["http_port"],
                                          timeout=CLIENT_TIMEOUT_S)

    def step(self):
        self.n = getattr(self, "n", 0) + 1
        headers = {"X-Soak-User": f"stream-{self.index}"}
        kind = self.n % 3
        if kind == 0:
            size = 1 << 20
            self.exchange("GET", f"/bytes/{size}", headers, expect=pattern_ok(size))
        elif kind == 1:
            piece = os.urandom(16384)
            pieces = 16
            digest = hashlib.sha256(piece * pieces).digest()
            self.exchange("POST", "/echo", headers, body=iter([piece] * pieces), chunked=True,
                          expect=lambda data: hashlib.sha256(data).digest() == digest)
        else:
            size = 300_000
            body = b"s" * size
            self.exchange("POST", "/count", {**headers, "Content-Type": "application/octet-stream"},
                          body=body, expect=lambda data: f'"bytes":{size}'.encode() in
                          data.replace(b" ", b""))


class LimitedUser(Worker):
    """One user of the small policy, asking faster than its limit allows (most answers 429)."""

    cls = "limited"

    def connect(self):
        return http.client.HTTPConnection(self.target["host"], self.target["http_port"],
                                          timeout=CLIENT_TIMEOUT_S)

    def step(self):
        user = f"limited-{self.index}"
        self.exchange("GET", "/lim/ok", {"X-Soak-User": user}, user=user)


class WebSocketClient(Worker):
    """WebSocket sessions through the gateway (plain and TLS alternately): open /ws/echo, send
    text and binary messages and check each echo, close; again."""

    cls = "ws"

    def run(self):
        import websockets  # python3-websockets (Debian), asyncio API

        self.websockets = websockets
        super().run()

    def step(self):
        asyncio.run(self.session())

    async def session(self):
        ws_lib = self.websockets
        self.n = getattr(self, "n", 0) + 1
        tls = self.n % 2 == 0
        if tls:
            uri = f"wss://localhost:{self.target['https_port']}/ws/echo"
            kwargs = {"ssl": self.target["ssl_context"]}
        else:
            uri = f"ws://{self.target['host']}:{self.target['http_port']}/ws/echo"
            kwargs = {}
        sent = time.monotonic()
        try:
            async with ws_lib.connect(uri, open_timeout=CLIENT_TIMEOUT_S, close_timeout=10,
                                      ping_interval=None, max_size=1 << 22,
                                      extra_headers={"X-Soak-User": f"ws-{self.index}"},
                                      **kwargs) as ws:
                for i in range(20):
                    message = f"soak {self.index} {i}" if i % 2 else os.urandom(1000 + i)
                    await ws.send(message)
                    echo = await asyncio.wait_for(ws.recv(), CLIENT_TIMEOUT_S)
                    if echo != message:
                        raise ValueError("echo differs")
                    if self.stop.is_set():
                        break
            self.recorder.record(self.cls, sent, time.monotonic(), 101)
        except ws_lib.exceptions.InvalidStatusCode as e:
            self.recorder.record(self.cls, sent, time.monotonic(), e.status_code,
                                 f"handshake {e.status_code}")
        except (OSError, asyncio.TimeoutError, ValueError, ssl.SSLError,
                ws_lib.exceptions.WebSocketException) as e:
            self.recorder.record(self.cls, sent, time.monotonic(), None,
                                 f"{type(e).__name__}: {e}")
        self.stop.wait(0.2)


H2_STATUS = re.compile(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx")
H2_REQUESTS = re.compile(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                         r"(\d+) failed, (\d+) errored, (\d+) timeout")


class H2Load(Worker):
    """HTTP/2 over TLS (ALPN h2) with h2load: a short burst every few seconds. h2load reports
    counts, not per-request times, so a burst's failures carry the burst's start and end."""

    cls = "h2"

    def step(self):
        sent = time.monotonic()
        try:
            out = subprocess.run(
                [self.target["h2load"], "-n", "200", "-c", "2", "-m", "4", "-t", "1",
                 "-H", "X-Soak-User: h2", "-T", "60", "-N", "60",
                 f"https://localhost:{self.target['https_port']}/ok"],
                capture_output=True, text=True, timeout=120).stdout
        except subprocess.TimeoutExpired:
            self.recorder.note(self.cls, "h2load timed out")
            return
        done = time.monotonic()
        statuses = H2_STATUS.search(out)
        requests = H2_REQUESTS.search(out)
        if not statuses or not requests:
            self.recorder.note(self.cls, "h2load output not understood")
            return
        s2, s3, s4, s5 = (int(x) for x in statuses.groups())
        total, _, _, _, _, errored, timeout = (int(x) for x in requests.groups())
        if s2:
            self.recorder.record(self.cls, sent, done, 200, count=s2)
        if s4:
            self.recorder.record(self.cls, sent, done, 400, count=s4)
        if s5:
            self.recorder.record(self.cls, sent, done, 503, "h2load 5xx", count=s5)
        unanswered = total - s2 - s3 - s4 - s5
        if unanswered > 0:
            self.recorder.record(self.cls, sent, done, None,
                                 f"h2load: {errored} errored, {timeout} timeout",
                                 count=unanswered)
        self.stop.wait(self.pause_s)
