#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus of every fuzz target (tests/fuzz/corpus/<target>/<name>).

The seeds are the kinds of input each parser meets, valid and not, so the fuzzer starts deep
inside the parsers instead of rediscovering HTTP from nothing. Run it after changing a seed;
the files are committed (docs/fuzzing.md). What the fuzzer adds while it runs (`dev.sh fuzz`
keeps its own corpus under build/fuzz/corpus) is not committed.
"""
import hashlib
import json
import pathlib
import re
import struct

ROOT = pathlib.Path(__file__).resolve().parent / "corpus"
REPO = pathlib.Path(__file__).resolve().parents[2]


def write(target, name, data):
    path = ROOT / target / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


def request_heads():
    seeds = {
        "get_keep_alive": "GET /api/a?x=1 HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
        "post_length": "POST /api/p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
        "post_chunked": "POST /api/p HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                        "5;ext=1\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n",
        "absolute_form": "GET http://h.example:8080/x/../y?q HTTP/1.1\r\nHost: other\r\n\r\n",
        "vhost": "GET /%2e/a//b/./c HTTP/1.1\r\nHost: H.Example\r\nX-Forwarded-For: 192.0.2.9\r\n\r\n",
        "limited": "GET /api/x HTTP/1.1\r\nHost: a\r\nX-API-Key: k\r\n\r\n" * 3,
        "bearer": "GET /api/x HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer vip\r\n\r\n",
        "upgrade": "GET /ws/chat HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
                   "\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58",
        "expect_continue": "PUT /api/u HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n"
                           "Content-Length: 3\r\n\r\nabc",
        "options_asterisk": "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
        "connect": "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n",
        "http10": "GET /x HTTP/1.0\r\n\r\n",
        "two_hosts": "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "length_list": "POST /api/p HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\nabc",
        "length_mismatch": "POST /api/p HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 4\r\n\r\nabc",
        "te_and_length": "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
                         "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "request_id": "GET / HTTP/1.1\r\nHost: a\r\nX-Request-Id: abc-123\r\n"
                      "Connection: close, X-Drop\r\nX-Drop: 1\r\nTE: trailers\r\n\r\n",
        "obs_fold": "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n  continued\r\n\r\n",
        "head": "HEAD /api/h HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
        "partial": "GET /slow HTTP/1.1\r\nHost: a\r\nX-",
        "lf_only": "GET / HTTP/1.1\nHost: a\n\n",
        "method_not_allowed": "TRACE /api/x HTTP/1.1\r\nHost: a\r\n\r\n",
    }
    for name, text in seeds.items():
        write("request_head", name, text.encode("latin-1"))


def request_differentials():
    """Connections of requests sluice forwards, and the desync shapes it must refuse or forward
    in one canonical form (docs/http-conformance.md)."""
    smuggled = "GET /SMUGGLED HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    seeds = {
        "pipelined": "GET /api/a?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"
                     "POST /b HTTP/1.1\r\nHost: h.example\r\nContent-Length: 5\r\n\r\nhello"
                     "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
        "chunked": "POST /api/p HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-T: t\r\n\r\n"
                   "GET /after HTTP/1.1\r\nHost: a\r\n\r\n",
        "absolute_form": "GET http://h.example:8080/x/../y?q HTTP/1.1\r\nHost: other\r\n\r\n",
        "empty_line": "\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n",
        "http10": "POST /x HTTP/1.0\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nab"
                  "GET /y HTTP/1.1\r\nHost: a\r\n\r\n",
        "fold_te": "POST /c HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding:\r\n chunked\r\n\r\n"
                   "2b\r\n" + smuggled + "\r\n0\r\n\r\n",
        "fold_length": "POST /c HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length:\r\n 43\r\n\r\n"
                       + smuggled,
        "fold_host": "GET / HTTP/1.1\r\nHost:\r\n other.example\r\n\r\n",
        "te_two_codings": "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked identity\r\n\r\n"
                          "0\r\n\r\n" + smuggled,
        "te_parameter": "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;x\r\n\r\n"
                        "0\r\n\r\n" + smuggled,
        "te_two_lines": "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" + smuggled,
        "length_list": "POST /api/p HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\nabc" + smuggled,
        "expect_continue": "PUT /api/u HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n"
                           "Content-Length: 3\r\n\r\nabc",
        "cut_body": "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc",
    }
    for name, text in seeds.items():
        write("request_differential", name, text.encode("latin-1"))


def response_heads():
    seeds = {
        "length_twice": (0, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok2"),
        "chunked_trailers": (0, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                "4;a=b\r\nabcd\r\n0\r\nServer-Timing: x\r\nContent-Length: 9\r\n\r\n"),
        "head_length": (1, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"),
        "switching": (2, "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n"
                         "Upgrade: websocket\r\n\r\n\x81\x02hi"),
        "upgrade_refused": (2, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
        "continue_then_created": (3, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n"
                                     "Content-Length: 0\r\n\r\n"),
        "close_delimited": (4, "HTTP/1.0 200 OK\r\nServer: old\r\n\r\nuntil the end"),
        "no_content": (0, "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"),
        "not_modified": (0, "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"),
        "unavailable": (0, "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n"
                           "Content-Length: 4\r\n\r\nbusy"),
        "folded": (0, "HTTP/1.1 200 OK\r\nX-Long: a\r\n\tb\r\nContent-Length: 0\r\n\r\n"),
        "hop_by_hop": (0, "HTTP/1.1 200 OK\r\nConnection: X-Secret, keep-alive\r\nX-Secret: s\r\n"
                          "Keep-Alive: timeout=5\r\nContent-Length: 0\r\n\r\n"),
        "bad_length": (0, "HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nok"),
        "gzip_then_close": (0, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz"),
        "short_body": (0, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"),
    }
    for name, (kind, text) in seeds.items():
        write("response_head", name, bytes([kind]) + text.encode("latin-1"))


def chunked_bodies():
    seeds = {
        "request_chunked": (0x80 | 3, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                                      "a\r\n0123456789\r\n3;x=\"y\"\r\nabc\r\n0\r\nT: 1\r\n\r\n"),
        "request_length": (0x80 | 1, "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\n\r\nabcdefg"),
        "response_chunked": (7, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                "1\r\na\r\nFF\r\n" + "b" * 255 + "\r\n0\r\n\r\n"),
        "response_eof": (2, "HTTP/1.1 200 OK\r\n\r\nuntil close"),
        "response_length": (0x3F, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd"),
        "chunk_size_overflow": (0x80 | 5, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                                          "\r\nFFFFFFFFFFFFFFFFF\r\n"),
    }
    for name, (first, text) in seeds.items():
        write("chunked_body", name, bytes([first]) + text.encode("latin-1"))


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(index, value):
    """An HPACK literal without indexing, name from the static table."""
    value = value.encode()
    return bytes([index]) + bytes([len(value)]) + value


def http2_frames():
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    settings = frame(0x4, 0, 0, struct.pack(">HI", 0x3, 100) + struct.pack(">HI", 0x4, 65535))
    get = b"\x82\x86" + literal(4, "/api/x?y=1") + literal(1, "a")
    post = b"\x83\x86" + literal(4, "/api/p") + literal(1, "a") + literal(15, "5")  # content-length
    seeds = {
        "get": settings + frame(0x1, 0x5, 1, get),
        "post_data": settings + frame(0x1, 0x4, 1, post) + frame(0x0, 0x0, 1, b"hel")
                     + frame(0x0, 0x1, 1, b"lo"),
        "continuation": settings + frame(0x1, 0x1, 1, get[:3]) + frame(0x9, 0x4, 1, get[3:]),
        "two_streams": settings + frame(0x1, 0x5, 1, get) + frame(0x1, 0x5, 3, get),
        "reset": settings + frame(0x1, 0x4, 1, post) + frame(0x3, 0, 1, struct.pack(">I", 8)),
        "control": settings + frame(0x6, 0, 0, b"12345678") + frame(0x8, 0, 0, struct.pack(">I", 1000))
                   + frame(0x2, 0, 1, struct.pack(">IB", 0, 16)) + frame(0x4, 0x1, 0)
                   + frame(0x7, 0, 0, struct.pack(">II", 0, 0)),
        "trailers": settings + frame(0x1, 0x4, 1, post) + frame(0x0, 0, 1, b"hello")
                    + frame(0x1, 0x5, 1, b"\x00\x01x\x011"),
        "bad_pseudo": settings + frame(0x1, 0x5, 1, b"\x82" + literal(4, "/") + literal(2, "GET")),
        "connection_field": settings + frame(0x1, 0x5, 1, get + b"\x00\x0aconnection\x05close"),
        "huge_window": settings + frame(0x8, 0, 0, struct.pack(">I", 0x7FFFFFFF)),
        "upgrade_like": settings + frame(0x1, 0x5, 1, b"\x82\x86" + literal(4, "/ws") + literal(1, "a")),
    }
    for name, data in seeds.items():
        write("http2_frames", name, preface + data)


def h2_upstream_responses():
    """A backend's frames to sluice's client session (streams 1, 3 and 5 are its requests)."""
    def field(name, value):  # a literal with a literal name, without indexing
        return bytes([0, len(name)]) + name.encode() + bytes([len(value)]) + value.encode()

    settings = frame(0x4, 0, 0, struct.pack(">HI", 0x3, 100)) + frame(0x4, 0x1, 0)
    ok = b"\x88"  # :status 200 (static table)
    grpc = ok + field("content-type", "application/grpc")
    message = b"\x00\x00\x00\x00\x02hi"
    seeds = {
        "three_answers": settings + frame(0x1, 0x5, 1, b"\x89")  # 204, ends the stream
        + frame(0x1, 0x4, 3, grpc) + frame(0x0, 0, 3, message)
        + frame(0x1, 0x5, 3, field("grpc-status", "0") + field("grpc-message", ""))
        + frame(0x1, 0x4, 5, ok + field("content-length", "2")) + frame(0x0, 0x1, 5, b"ok"),
        "trailers_only": settings + frame(0x1, 0x5, 3, grpc + field("grpc-status", "14")),
        "resets": settings + frame(0x3, 0, 1, struct.pack(">I", 7))
        + frame(0x1, 0x4, 3, grpc) + frame(0x3, 0, 3, struct.pack(">I", 2)),
        "goaway": settings + frame(0x7, 0, 0, struct.pack(">II", 1, 0))
        + frame(0x1, 0x4, 1, ok) + frame(0x0, 0x1, 1, b"body"),
        "interim_then_final": settings + frame(0x1, 0x4, 1, field(":status", "100"))
        + frame(0x1, 0x5, 1, ok),
        "control": settings + frame(0x6, 0, 0, b"12345678") + frame(0x8, 0, 0, struct.pack(">I", 1000))
        + frame(0x8, 0, 5, struct.pack(">I", 1000)),
        "length_mismatch": settings + frame(0x1, 0x4, 5, ok + field("content-length", "9"))
        + frame(0x0, 0x1, 5, b"short"),
        "bad_field": settings + frame(0x1, 0x5, 1, ok + field("bad name", "x\r\ny")),
    }
    for name, data in seeds.items():
        write("h2_upstream_response", name, data)


def proxy_headers():
    sig = b"\r\n\r\n\x00\r\nQUIT\n"
    v4 = bytes([192, 0, 2, 1, 198, 51, 100, 7]) + struct.pack(">HH", 40000, 443)
    v6 = bytes(15) + b"\x01" + bytes(15) + b"\x02" + struct.pack(">HH", 1, 2)
    tlv = bytes([0x01]) + struct.pack(">H", 2) + b"h2" + bytes([0x04]) + struct.pack(">H", 0)
    seeds = {
        "v1_tcp4": b"PROXY TCP4 192.0.2.1 198.51.100.7 40000 443\r\nGET / HTTP/1.1\r\n",
        "v1_tcp6": b"PROXY TCP6 2001:db8::1 ::1 1 65535\r\n",
        "v1_unknown": b"PROXY UNKNOWN ffff::1 ::1 1 2\r\n",
        "v1_partial": b"PROXY TCP4 192.0.2.1 ",
        "v2_tcp4": sig + b"\x21\x11" + struct.pack(">H", len(v4)) + v4 + b"GET /",
        "v2_tcp6_tlv": sig + b"\x21\x21" + struct.pack(">H", len(v6) + len(tlv)) + v6 + tlv,
        "v2_local": sig + b"\x20\x00" + struct.pack(">H", 0),
        "v2_unix": sig + b"\x21\x31" + struct.pack(">H", 216) + bytes(216),
        "v2_short": sig + b"\x21\x11" + struct.pack(">H", 4) + bytes(4),
    }
    for name, data in seeds.items():
        write("proxy_header", name, data)


def config_texts():
    write("config_text", "dev_config", (REPO / "conf/sluice.json").read_bytes())
    write("config_text", "compose_config", (REPO / "deploy/compose/sluice.json").read_bytes())
    full = {
        "listeners": [
            {"name": "web", "address": "127.0.0.1", "port": 8080, "proxy_protocol": False},
            {"name": "tls", "address": "127.0.0.1", "port": 8443,
             "tls": {"certificates": [{"cert": "/c.pem", "key": "/k.pem"}]}, "http2": True},
        ],
        "admin": {"address": "127.0.0.1", "port": 9901, "persist": False},
        "http": {"max_header_bytes": 8192, "request_id": "replace", "trusted_proxies": ["10.0.0.0/8"]},
        "identity": [{"header": "X-API-Key"}, {"client_ip": True}],
        "store": {"type": "redis", "redis": {"address": "127.0.0.1:6379"}},
        "limits": {"p": {"requests": 10, "window_ms": 1000, "buckets": 10}},
        "overrides": {"p": {"vip": {"requests": 100}}},
        "backends": {"b": {"endpoints": ["127.0.0.1:9001", "[::1]:9002"], "balance": "least_request",
                           "health_check": {"path": "/healthz"}, "outlier": {}, "retry": {"attempts": 3},
                           "breaker": {"enabled": True}}},
        "routes": [{"name": "r", "prefix": "/", "backend": "b", "limit": "p", "host": "a.example"}],
    }
    write("config_text", "many_sections", json.dumps(full, indent=1))
    identity = dict(full)
    identity["identity"] = [{"jwt": True}, {"api_key": True}, {"client_ip": True}]
    identity["auth"] = {
        "jwt": {"issuer": "https://id.example.com/", "audiences": ["api"], "jwks_file": "/j.json",
                "algorithms": ["ES256", "HS256"], "hs256_secret_env": "JWT_SECRET",
                "tier_claim": "plan"},
        "api_keys": {"keys_file": None, "keys": [{"sha256": "a" * 64, "user": "u", "tier": "gold"}]},
        "failure_policy": {"failures": 5, "window_ms": 10000}}
    identity["tiers"] = {"p": {"gold": {"requests": 50}}}
    identity["routes"] = [dict(full["routes"][0], auth="required", strip_credentials=True)]
    write("config_text", "identity_sections", json.dumps(identity, indent=1))
    write("config_text", "minimal", json.dumps({"backends": {"b": {"endpoints": ["127.0.0.1:1"]}},
                                                "routes": [{"name": "r", "prefix": "/", "backend": "b"}]}))
    write("config_text", "duplicate_key", '{"routes": [], "routes": []}')
    write("config_text", "wrong_types", '{"threads": "x", "limits": {"p": {"requests": -1}}}')


def admin_requests():
    seeds = {
        "config": "GET /admin/config",
        "limits": "GET /admin/limits",
        "put_policy": 'PUT /admin/limits/p\n{"requests": 50, "window_ms": 60000, "buckets": 60}',
        "new_policy": 'PUT /admin/limits/q\n{"requests": 5, "window_ms": 1000, "mode": "shadow"}',
        "delete_policy": "DELETE /admin/limits/p",
        "put_override": 'PUT /admin/limits/p/overrides/user%2F1\n{"requests": 9}',
        "delete_override": "DELETE /admin/limits/p/overrides/vip",
        "key_state": "GET /admin/limits/p/keys/vip",
        "backends": "GET /admin/backends",
        "put_breaker": 'PUT /admin/backends/b/breaker\n{"k": 2.0, "protection": 10}',
        "put_endpoints": 'PUT /admin/backends/b/endpoints\n{"endpoints": ["10.0.0.3:80"]}',
        "endpoint_states": "GET /admin/backends/b/endpoints",
        "drain": 'PUT /admin/backends/b/endpoints/10.0.0.1:80/state\n{"state": "draining"}',
        "routes": 'PUT /admin/routes\n{"routes": [{"name": "x", "prefix": "/x", "backend": "b"}]}',
        "tls": "GET /admin/tls",
        "tls_reload": "POST /admin/tls/reload",
        "bad_json": 'PUT /admin/limits/p\n{"requests": ',
        "bad_escape": "GET /admin/limits/%zz",
        "query": "GET /admin?x=1",
    }
    for name, text in seeds.items():
        write("admin_request", name, text)


def redis_replies():
    seeds = {
        "script_decision": "*5\r\n:1\r\n:10\r\n:3\r\n:1000\r\n:0\r\n",
        "script_limited": "*5\r\n:0\r\n:10\r\n:10\r\n:500\r\n:250\r\n",
        "cluster_slots": "*2\r\n*3\r\n:0\r\n:8191\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n"
                         "*4\r\n:8192\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:7001\r\n*2\r\n$1\r\nh\r\n:7\r\n",
        "moved": "-MOVED 3999 127.0.0.1:6381\r\n",
        "ask": "-ASK 16383 [::1]:7002\r\n",
        "noscript": "-NOSCRIPT No matching script\r\n+OK\r\n",
        "bulk_and_nil": "$5\r\nhello\r\n$-1\r\n*-1\r\n+PONG\r\n:42\r\n",
        "nested": "*2\r\n*1\r\n*0\r\n$0\r\n\r\n",
        "bad_type": "?what\r\n",
    }
    for i, (name, text) in enumerate(seeds.items()):
        write("redis_reply", name, bytes([i * 7]) + text.encode())


def access_log_lines():
    line = {"ts": "2026-11-25T02:31:13.952Z", "request_id": "7f0c", "method": "GET",
            "path": "/api/login", "route": "api", "backend": "b", "endpoint": "10.0.0.7:8080",
            "user": "a0263a3365c5", "status": 200, "bytes_in": 0, "bytes_out": 153,
            "duration_ms": 0.636, "upstream_ms": 0.409, "attempts": 1, "limit": "allowed",
            "breaker": "pass", "client_ip": "203.0.113.9", "host": "api.example",
            "protocol": "HTTP/1.1", "listener": "default"}

    def logged(**fields):
        return json.dumps({**line, **fields}, separators=(",", ":"), ensure_ascii=False)

    seeds = {
        "gateway_line": logged(),
        "limited_burst": "\n".join(logged(ts="2026-11-25T02:31:13.%03dZ" % i,
                                           limit="limited" if i > 2 else "allowed")
                                    for i in range(6)),
        "out_of_order": "\n".join(logged(ts=t) for t in ("2026-11-25T02:31:15.000Z",
                                                          "2026-11-25T02:31:13.000Z",
                                                          "2026-11-25T02:31:10.000Z")),
        "null_user_unrouted": logged(route="none", backend="none", user=None, limit="none",
                                     host=None),
        "renamed_route": logged(route="old-api", path="/api/items", method="POST"),
        "shadow_login": logged(route="login", path="/login", method="POST",
                               limit="shadow_limited"),
        "escapes": logged(path="/caf\u00e9/\x80\"q", request_id="a\\b\u0001"),
        "crlf_and_blank": logged() + "\r\n\n  \n" + logged(user="bbbbbbbbbbbb"),
        "whitespace": json.dumps({**line, "user": "cccccccccccc"}, indent=1).replace("\n", " "),
        "duplicate_route": logged()[:-1] + ',"route":"web"}',
        "nested_and_exponent": logged()[:-1] + ',"x":{"y":[1,2e3]}}',
        "malformed": '{"ts":"2026-13-40T25:61:61.000Z","route":"api","user":"xyz",'
                     '"limit":"maybe"}\n{"ts":\n[]\n',
    }
    for name, text in seeds.items():
        write("access_log_line", name, text + "\n")


def jose_tokens():
    # The tokens and key set python3-cryptography signed for the unit tests, then variants.
    header = pathlib.Path(__file__).resolve().parent.parent / "unit" / "auth" / "jws_vectors.hpp"
    text = header.read_text()
    vectors = dict(re.findall(r'inline constexpr const char\* k(\w+) = "([^"]*)";', text))
    jwks = re.search(r'kJwks = R"json\((.*)\)json"', text).group(1)
    seeds = {f"token_{alg.lower()}": token for alg, token in vectors.items()
             if alg not in ("Hs256Secret",)}
    seeds["jwks"] = jwks
    es256 = vectors["ES256"]
    seeds["alg_none"] = "eyJhbGciOiJub25lIn0." + es256.split(".")[1] + "."
    seeds["two_parts"] = ".".join(es256.split(".")[:2])
    seeds["padded"] = es256 + "=="
    seeds["base64url"] = "Zm9vYmFy-_"
    seeds["jwks_mixed"] = ('{"keys":[{"kty":"oct","k":"c2VjcmV0"},{"kty":"EC","crv":"P-256",'
                           '"x":"AQ","y":"AQ"},{"kty":"RSA","n":"AQAB","e":"AQAB","alg":"HS256"},'
                           '"x",{"kty":"OKP","crv":"Ed25519","x":"' + "A" * 43 + '"}]}')
    digest = hashlib.sha256(b"sk-seed-key-0123456789").hexdigest()
    seeds["api_keys"] = ('{"keys":[{"sha256":"' + digest + '","user":"robot","tier":"gold"},'
                         '{"sha256":"' + "0" * 64 + '","user":"other","tier":null}]}')
    for name, value in seeds.items():
        write("jose_token", name, value)


def sliding_windows():
    # Bytes: buckets (2), width in µs - 1 (1), limit (2), then (op, arg) pairs; ops mod 6 are
    # step, long gap, past sample, new limit, inspect, burst (tests/fuzz/sliding_window_fuzz.cpp).
    def shape(buckets, width_us, limit):
        return bytes([buckets >> 8, buckets & 255, width_us - 1, limit >> 8, limit & 255])

    steady = bytes(b for i in range(60) for b in (5, 40, 0, 16))  # bursts, a bucket apart
    seeds = {
        "sixty_buckets_steady": shape(60, 100, 100) + steady,
        "many_buckets_list_then_block": shape(600, 10, 2000) + bytes(
            b for i in range(200) for b in (5, 3, 0, 16 + i % 7)),
        "ten_buckets_past_samples": shape(10, 50, 20) + bytes(
            b for i in range(50) for b in (5, 9, 2, 40, 0, 8, 4, 0)),
        "one_bucket": shape(1, 200, 5) + bytes([5, 10, 1, 70, 5, 10, 4, 0]),
        "limit_changes_and_gaps": shape(3600, 1, 50) + bytes(
            b for i in range(40) for b in (3, i, 5, 60, 1, 20, 0, 200)),
        "huge_counts": shape(4, 255, 65535) + bytes([3, 255] + [5, 63] * 40 + [0, 16, 4, 0]),
    }
    for name, value in seeds.items():
        write("sliding_window", name, value)


if __name__ == "__main__":
    request_heads()
    request_differentials()
    response_heads()
    chunked_bodies()
    http2_frames()
    h2_upstream_responses()
    proxy_headers()
    config_texts()
    admin_requests()
    redis_replies()
    access_log_lines()
    jose_tokens()
    sliding_windows()
