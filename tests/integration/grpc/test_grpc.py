#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""gRPC and HTTP/2 to backends through the real binary (docs/grpc.md), between real gRPC peers:
Debian's python3-grpcio as client and as server (grpc_peer.py), sluice in the middle with an h2c
listener and `h2c` and `h2` (TLS, ALPN) backends. Every call type, metadata and trailers both
ways, large messages (flow control), statuses from the backend, the answers sluice makes itself
(limited, no route, unreachable, timeout, grpc-timeout), many calls multiplexed on one
connection per worker, a backend going away under load, HTTP/1.1 clients of an h2 backend, the
access log's grpc_status and sluice_grpc_requests_total.

    SLUICE_BINARY=build/bin/sluice SLUICE_DEMO_BACKEND=build/bin/sluice-demo-backend \\
        tests/integration/grpc/test_grpc.py -v
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
from concurrent import futures
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from child import Child  # noqa: E402 (tests/support, after the path is set)
from self_signed import self_signed  # noqa: E402
import grpc_peer  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
SLUICE = os.environ.get("SLUICE_BINARY", str(ROOT / "build" / "bin" / "sluice"))
DEMO_BACKEND = os.environ.get("SLUICE_DEMO_BACKEND",
                              str(ROOT / "build" / "bin" / "sluice-demo-backend"))


def grpc_frame(payload):
    """One gRPC length-prefixed message, uncompressed."""
    return b"\x00" + len(payload).to_bytes(4, "big") + payload


def curl(url, body, *fields, http2=True):
    """(response head and trailers as text, body bytes) of a POST with curl."""
    args = ["/usr/bin/curl", "-sS", "--max-time", "20", "-D", "-", "-o", "-"]
    args += ["--http2-prior-knowledge"] if http2 else ["--http1.1"]
    for field in fields:
        args += ["-H", field]
    args += ["--data-binary", "@-", url]
    out = subprocess.run(args, input=body, capture_output=True, timeout=30, check=True).stdout
    return out


def metric(metrics_text, name, **labels):
    """The value of one series of the Prometheus text, or None."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in metrics_text.splitlines():
        if line.startswith(name + "{"):
            series, _, value = line.rpartition(" ")
            inner = series[len(name) + 1:-1]
            if ",".join(sorted(inner.split(","))) == want:
                return float(value)
    return None


class GrpcTest(unittest.TestCase):
    """One gateway (one worker) in front of an h2c gRPC backend, an h2 (TLS) one, an HTTP/1.1
    demo backend and an address where nothing listens."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="sluice-grpc-test-")
        cls.children = []
        cls.servers = []
        try:
            cls.start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start(cls):
        cls.plain, plain_port, cls.service = grpc_peer.serve()
        cert_path, key_path = self_signed(cls.dir, "backend", "grpc test")
        credentials = grpc.ssl_server_credentials([(key_path.read_bytes(),
                                                    cert_path.read_bytes())])
        cls.secure, secure_port, cls.secure_service = grpc_peer.serve(credentials)
        cls.servers += [cls.plain, cls.secure]
        demo = Child([DEMO_BACKEND, "--address", "127.0.0.1", "--port", "0"], cls.dir)
        cls.children.append(demo)
        demo_endpoint = demo.wait_for(r"listening (\S+)").group(1)
        cls.access_log = Path(cls.dir) / "access.log"
        config = {
            "listeners": [{"name": "h2c", "address": "127.0.0.1", "port": 0,
                           "http2": {"enabled": True}}],
            "admin": {"address": "127.0.0.1", "port": 0},
            "threads": 1,
            "access_log": {"enabled": True, "path": str(cls.access_log)},
            "limits": {"two": {"requests": 2, "window_ms": 60000, "buckets": 6}},
            "backends": {
                "grpc": {"endpoints": [f"127.0.0.1:{plain_port}"], "protocol": "h2c",
                         "max_streams_per_connection": 100},
                "grpc_tls": {"endpoints": [f"127.0.0.1:{secure_port}"], "protocol": "h2",
                             "tls": {"enabled": True, "ca": str(cert_path)}},
                "fast_timeout": {"endpoints": [f"127.0.0.1:{plain_port}"], "protocol": "h2c",
                                 "timeout_ms": 300},
                "demo": {"endpoints": [demo_endpoint]},
                "flaky": {"endpoints": [f"127.0.0.1:{plain_port}"], "protocol": "h2c"},
                "nowhere": {"endpoints": ["127.0.0.1:1"], "protocol": "h2c",
                            "connect_timeout_ms": 500},
            },
            "routes": [
                {"name": "limited", "prefix": "/limited/", "backend": "grpc", "limit": "two",
                 "strip_prefix": True},
                {"name": "tls", "prefix": "/tls/", "backend": "grpc_tls", "strip_prefix": True},
                {"name": "short", "prefix": "/short/", "backend": "fast_timeout",
                 "strip_prefix": True},
                {"name": "demo", "prefix": "/slow/", "backend": "demo"},
                {"name": "flaky", "prefix": "/flaky/", "backend": "flaky", "strip_prefix": True},
                {"name": "nowhere", "prefix": "/nowhere.Svc/", "backend": "nowhere"},
                {"name": "echo", "prefix": "/test.Echo/", "backend": "grpc"},
            ],
        }
        path = Path(cls.dir) / "sluice.json"
        path.write_text(json.dumps(config))
        cls.gateway = Child([SLUICE, "--config", str(path)], cls.dir)
        cls.children.append(cls.gateway)
        ready = cls.gateway.wait_for(r"ready proxy=(\S+) admin=(\S+)")
        cls.proxy = ready.group(1)
        cls.admin = f"http://{ready.group(2)}"
        cls.channel = grpc.insecure_channel(cls.proxy)

    @classmethod
    def tearDownClass(cls):
        for server in cls.servers:
            server.stop(None)
        for child in reversed(cls.children):
            child.stop()

    def call(self, name, request=b"x", kind="unary_unary", channel=None, **kwargs):
        return grpc_peer.method(channel or self.channel, kind, name)(request, timeout=10, **kwargs)

    def failed(self, path, request=b"x"):
        """The RpcError of a unary call to `path` (the test fails when it succeeds)."""
        stub = self.channel.unary_unary(path, request_serializer=None,
                                        response_deserializer=None)
        with self.assertRaises(grpc.RpcError) as caught:
            stub(request, timeout=10)
        return caught.exception

    def log_lines(self, path):
        lines = self.access_log.read_text().splitlines() if self.access_log.exists() else []
        return [json.loads(line) for line in lines if json.loads(line)["path"] == path]

    def wait_log(self, path, count=1):
        deadline = time.time() + 5
        while time.time() < deadline:
            lines = self.log_lines(path)
            if len(lines) >= count:
                return lines
            time.sleep(0.05)
        self.fail(f"no access log line for {path}")

    # -- the four call types ---------------------------------------------------------------

    def test_a_unary_call_carries_metadata_and_trailers_both_ways(self):
        response, call = grpc_peer.method(self.channel, "unary_unary", "Unary").with_call(
            b"hello", metadata=[("x-echo", "ping")], timeout=10)
        self.assertEqual(response, b"hello")
        self.assertIn(("x-echo", "ping"), [(m.key, m.value) for m in call.initial_metadata()])
        self.assertIn(("x-trailer", "done"), [(m.key, m.value) for m in call.trailing_metadata()])
        self.assertEqual(call.code(), grpc.StatusCode.OK)

    def test_a_server_stream_arrives_message_by_message(self):
        self.assertEqual(list(self.call("ServerStream", b"50", "unary_stream")),
                         [str(i).encode() for i in range(50)])

    def test_a_client_stream_is_sent_whole(self):
        parts = [f"p{i}".encode() for i in range(40)]
        self.assertEqual(self.call("ClientStream", iter(parts), "stream_unary"), b"+".join(parts))

    def test_a_bidirectional_stream_answers_each_message_before_the_next_is_sent(self):
        # Ping-pong: the next request is only produced once the previous answer came back, so
        # nothing on the way may hold a message back waiting for more.
        answers = []
        next_ready = threading.Event()
        next_ready.set()

        def requests():
            for i in range(20):
                self.assertTrue(next_ready.wait(5), "an answer was held back")
                next_ready.clear()
                yield f"m{i}".encode()

        for answer in self.call("Bidi", requests(), "stream_stream"):
            answers.append(answer)
            next_ready.set()
        self.assertEqual(answers, [f"m{i}".encode() for i in range(20)])

    def test_messages_larger_than_every_window_go_both_ways(self):
        big = os.urandom(3 * 1024 * 1024)  # beyond the stream and connection windows
        self.assertEqual(self.call("Unary", big), big)
        chunks = [os.urandom(300 * 1024) for _ in range(8)]
        self.assertEqual(list(self.call("Bidi", iter(chunks), "stream_stream")), chunks)

    def test_a_tls_backend_is_reached_over_h2_chosen_by_alpn(self):
        response = self.channel.unary_unary("/tls/test.Echo/Unary")(b"secure", timeout=10)
        self.assertEqual(response, b"secure")

    # -- statuses ---------------------------------------------------------------------------

    def test_a_status_from_the_backend_reaches_the_client_with_its_message(self):
        error = self.failed("/test.Echo/Fail", b"NOT_FOUND:no such thing")
        self.assertEqual(error.code(), grpc.StatusCode.NOT_FOUND)
        self.assertEqual(error.details(), "no such thing")
        trailers = [(m.key, m.value) for m in error.trailing_metadata()]
        self.assertIn(("x-trailer", "done"), trailers)
        self.assertNotIn("content-length", [k for k, _ in trailers])
        line = self.wait_log("/test.Echo/Fail")[-1]
        self.assertEqual((line["status"], line["grpc_status"]), (200, 5))

    def test_unavailable_from_the_backend_counts_against_its_breaker(self):
        # UNAVAILABLE is in failure_grpc_statuses by default: a backend answering only that is
        # shed by its breaker, whose drops reach the client as UNAVAILABLE backend_unavailable.
        details = [self.failed("/flaky/test.Echo/Fail", b"UNAVAILABLE:overloaded").details()
                   for _ in range(80)]
        self.assertIn("overloaded", details)
        self.assertIn("backend_unavailable", details)
        ok = self.failed("/flaky/test.Echo/Fail", b"NOT_FOUND:x")  # not a failure by default
        self.assertIn(ok.code(), (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE))

    def test_a_limited_call_is_resource_exhausted_with_the_ratelimit_fields(self):
        self.channel.unary_unary("/limited/test.Echo/Unary")(b"1", timeout=10)
        self.channel.unary_unary("/limited/test.Echo/Unary")(b"2", timeout=10)
        error = self.failed("/limited/test.Echo/Unary")
        self.assertEqual(error.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertEqual(error.details(), "rate_limited")
        names = [m.key for m in error.trailing_metadata()]
        self.assertIn("ratelimit", names)
        self.assertIn("retry-after", names)

    def test_a_call_without_a_route_is_unimplemented(self):
        error = self.failed("/other.Service/Method")
        self.assertEqual(error.code(), grpc.StatusCode.UNIMPLEMENTED)
        self.assertEqual(error.details(), "no_route")

    def test_an_unreachable_backend_is_unavailable(self):
        error = self.failed("/nowhere.Svc/Call")
        self.assertEqual(error.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(error.details(), "upstream_connect_error")
        self.assertEqual(self.wait_log("/nowhere.Svc/Call")[-1]["grpc_status"], 14)

    def test_a_backend_slower_than_the_timeout_is_deadline_exceeded(self):
        error = self.failed("/short/test.Echo/Slow", b"3000")
        self.assertEqual(error.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertEqual(error.details(), "upstream_timeout")

    def test_grpc_timeout_shortens_the_backends_timeout(self):
        # The demo backend (HTTP/1.1) does not know grpc-timeout: the 300 ms are sluice's.
        started = time.time()
        out = curl(f"http://{self.proxy}/slow/3000", grpc_frame(b""),
                   "content-type: application/grpc", "te: trailers", "grpc-timeout: 300m")
        elapsed = time.time() - started
        self.assertIn(b"grpc-status: 4", out)
        self.assertIn(b"grpc-message: upstream_timeout", out)
        self.assertLess(elapsed, 2.5, out)

    # -- connections ------------------------------------------------------------------------

    def test_concurrent_calls_share_one_connection_to_the_backend(self):
        with futures.ThreadPoolExecutor(max_workers=32) as pool:
            peers = list(pool.map(lambda _: self.call("Peer"), range(200)))
        # One worker, at most 100 streams a connection, 32 calls at a time: one connection.
        self.assertEqual(len(set(peers)), 1, set(peers))

    def test_http11_clients_use_an_h2_backend_and_get_the_trailers_chunked(self):
        out = curl(f"http://{self.proxy}/test.Echo/Unary", grpc_frame(b"from http/1.1"),
                   "content-type: application/grpc", "te: trailers", http2=False)
        self.assertTrue(out.startswith(b"HTTP/1.1 200"), out)
        self.assertIn(grpc_frame(b"from http/1.1"), out)
        self.assertIn(b"grpc-status: 0", out)  # curl prints the trailer fields after the body

    def test_metrics_count_calls_by_route_and_status(self):
        self.failed("/test.Echo/Fail", b"ABORTED:counted")
        # A call is counted after its answer is written: the client can read it first.
        deadline = time.monotonic() + 5
        while True:
            with urllib.request.urlopen(self.admin + "/metrics", timeout=5) as response:
                text = response.read().decode()
            counted = metric(text, "sluice_grpc_requests_total", route="echo",
                             grpc_status="10") or 0
            if counted >= 1 or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self.assertGreaterEqual(counted, 1)


def two_backends(test, backend):
    """Starts two gRPC servers and a gateway (one worker, an h2c listener) whose one backend
    `grpc` has both as endpoints, with the fields of `backend`; stops them when `test` ends.
    Returns (gateway's ready line match, [(port, service) of each server])."""
    directory = tempfile.mkdtemp(prefix="sluice-grpc-")
    servers = [grpc_peer.serve() for _ in range(2)]
    for server, _, _ in servers:
        test.addCleanup(server.stop, None)
    config = {
        "listeners": [{"name": "h2c", "address": "127.0.0.1", "port": 0,
                       "http2": {"enabled": True}}],
        "admin": {"address": "127.0.0.1", "port": 0},
        "threads": 1,
        "backends": {"grpc": dict(
            {"endpoints": [f"127.0.0.1:{port}" for _, port, _ in servers], "protocol": "h2c"},
            **backend)},
        "routes": [{"name": "echo", "prefix": "/", "backend": "grpc"}],
    }
    path = Path(directory) / "sluice.json"
    path.write_text(json.dumps(config))
    gateway = Child([SLUICE, "--config", str(path)], directory)
    test.addCleanup(gateway.stop)
    ready = gateway.wait_for(r"ready proxy=(\S+) admin=(\S+)")
    return ready, [(server, port, service) for server, port, service in servers]


class HealthTest(unittest.TestCase):
    """`health_check.type: "grpc"`: the gRPC Health Checking Protocol decides which endpoint is
    pickable."""

    def test_an_endpoint_not_serving_is_taken_out_and_brought_back(self):
        ready, [(_, first_port, first_service), (_, second_port, second_service)] = two_backends(
            self, {"health_check": {"type": "grpc", "interval_ms": 100, "timeout_ms": 100,
                                    "healthy_threshold": 1, "unhealthy_threshold": 1}})
        admin = f"http://{ready.group(2)}"

        def states():
            with urllib.request.urlopen(admin + "/admin/backends/grpc/endpoints",
                                        timeout=5) as response:
                listing = json.loads(response.read())
            return {e["endpoint"]: e["state"] for e in listing["endpoints"]}

        def wait_states(want):
            deadline = time.time() + 10
            while time.time() < deadline and states() != want:
                time.sleep(0.05)
            self.assertEqual(states(), want)

        a, b = f"127.0.0.1:{first_port}", f"127.0.0.1:{second_port}"
        deadline = time.time() + 10  # (endpoints start healthy: wait for real checks)
        while time.time() < deadline and min(first_service.health_checks,
                                             second_service.health_checks) < 2:
            time.sleep(0.05)
        self.assertGreaterEqual(first_service.health_checks, 2)
        wait_states({a: "healthy", b: "healthy"})
        first_service.health = 2  # NOT_SERVING
        wait_states({a: "unhealthy", b: "healthy"})
        channel = grpc.insecure_channel(ready.group(1))
        peer = grpc_peer.method(channel, "unary_unary", "Unary")
        before = first_service.calls
        for i in range(20):
            self.assertEqual(peer(b"x", timeout=10), b"x")
        self.assertEqual(first_service.calls, before)  # all went to the serving one
        first_service.health = 1
        wait_states({a: "healthy", b: "healthy"})


class StreamLimitTest(unittest.TestCase):
    """max_streams_per_connection: a burst of calls arriving before any connection is open is
    spread over as few connections as the limit allows, and none of them fails."""

    def test_a_burst_opens_few_connections_and_every_call_gets_through(self):
        ready, _ = two_backends(self, {"max_streams_per_connection": 10})
        channel = grpc.insecure_channel(ready.group(1))
        slow_peer = grpc_peer.method(channel, "unary_unary", "SlowPeer")
        with futures.ThreadPoolExecutor(max_workers=50) as pool:
            peers = list(pool.map(lambda _: slow_peer(b"300", timeout=10), range(50)))
        # 25 calls at once per endpoint, 10 streams a connection: 3 connections each at least;
        # a connection per call would be 50.
        self.assertGreaterEqual(len(set(peers)), 6, set(peers))
        self.assertLessEqual(len(set(peers)), 12, set(peers))


class GoawayTest(unittest.TestCase):
    """A backend that goes away (graceful stop: GOAWAY) under load: the calls it accepted finish,
    and the next ones go to the other endpoint on a new connection."""

    def test_calls_in_flight_finish_and_new_ones_go_elsewhere(self):
        ready, [(first, _, first_service), (_, _, second_service)] = two_backends(
            self, {"connect_timeout_ms": 500,
                   "retry": {"attempts": 3, "on": ["reset", "connect_error"]}})
        proxy = ready.group(1)
        channel = grpc.insecure_channel(proxy)
        slow = grpc_peer.method(channel, "unary_unary", "Slow")
        unary = grpc_peer.method(channel, "unary_unary", "Unary")
        self.assertEqual(unary(b"warm", timeout=10), b"warm")
        with futures.ThreadPoolExecutor(max_workers=16) as pool:
            in_flight = [pool.submit(slow, b"700", timeout=10) for _ in range(8)]
            time.sleep(0.3)  # they are on both backends now
            stopping = first.stop(grace=5)  # GOAWAY; the accepted calls may finish
            later = [pool.submit(unary, f"after{i}".encode(), timeout=10)
                     for i in range(40)]
            self.assertEqual([f.result() for f in in_flight], [b"700"] * 8)
            self.assertEqual([f.result() for f in later],
                             [f"after{i}".encode() for i in range(40)])
            stopping.wait(10)
        self.assertGreater(first_service.calls, 0)
        self.assertGreater(second_service.calls, 0)


if __name__ == "__main__":
    unittest.main()
