#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Identity through the real binary (docs/identity.md): JWTs signed by python3-cryptography (a
signer independent of sluice's reader), API keys from a keys file, every refusal reason, the
route modes, credentials stripped before forwarding, the failure policy shedding a flood, the
access log's `auth` and `tier`, sluice_auth_total, and a key set served over HTTPS by this test
(fetched at start, rotated, refetched on an unknown kid, its last good set kept when the server
fails).

    SLUICE_BINARY=build/bin/sluice SLUICE_DEMO_BACKEND=build/bin/sluice-demo-backend \\
        tests/integration/identity/test_identity.py -v
"""

import base64
import hashlib
import hmac
import http.server
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
from child import Child  # noqa: E402 (tests/support, after the path is set)
from self_signed import self_signed  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
SLUICE = os.environ.get("SLUICE_BINARY", str(ROOT / "build" / "bin" / "sluice"))
DEMO_BACKEND = os.environ.get("SLUICE_DEMO_BACKEND",
                              str(ROOT / "build" / "bin" / "sluice-demo-backend"))
ISSUER = "https://id.example.com/"
SECRET = "an-hs256-secret-of-the-test-that-is-long-enough"
FAR = 4102444800  # 2100-01-01


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def uint(n, size=None):
    size = size or (n.bit_length() + 7) // 8
    return n.to_bytes(size, "big")


class Signer:
    """Keys of every kind sluice verifies, and tokens signed with them."""

    def __init__(self):
        self.p256 = ec.generate_private_key(ec.SECP256R1())
        self.p384 = ec.generate_private_key(ec.SECP384R1())
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ed = ed25519.Ed25519PrivateKey.generate()

    def jwks(self, prefix=""):
        keys = []
        for kid, key, curve, size in ((prefix + "ec256", self.p256, "P-256", 32),
                                      (prefix + "ec384", self.p384, "P-384", 48)):
            n = key.public_key().public_numbers()
            keys.append({"kty": "EC", "crv": curve, "kid": kid, "use": "sig",
                         "x": b64(uint(n.x, size)), "y": b64(uint(n.y, size))})
        n = self.rsa.public_key().public_numbers()
        keys.append({"kty": "RSA", "kid": prefix + "rsa", "n": b64(uint(n.n)),
                     "e": b64(uint(n.e))})
        keys.append({"kty": "OKP", "crv": "Ed25519", "kid": prefix + "ed",
                     "x": b64(self.ed.public_key().public_bytes(serialization.Encoding.Raw,
                                                                 serialization.PublicFormat.Raw))})
        return {"keys": keys}

    def token(self, alg="ES256", kid="ec256", tamper=False, **overrides):
        claims = {"sub": "alice", "iss": ISSUER, "aud": "api", "exp": FAR, "plan": "gold"}
        claims.update(overrides)
        claims = {k: v for k, v in claims.items() if v is not None}
        header = {"alg": alg, "typ": "JWT"}
        if kid:
            header["kid"] = kid
        data = (b64(json.dumps(header).encode()) + "." +
                b64(json.dumps(claims).encode())).encode()
        if alg in ("ES256", "ES384"):
            key, digest, size = ((self.p256, hashes.SHA256(), 32) if alg == "ES256"
                                 else (self.p384, hashes.SHA384(), 48))
            r, s = decode_dss_signature(key.sign(data, ec.ECDSA(digest)))
            signature = uint(r, size) + uint(s, size)
        elif alg == "RS256":
            signature = self.rsa.sign(data, padding.PKCS1v15(), hashes.SHA256())
        elif alg == "PS256":
            signature = self.rsa.sign(data, padding.PSS(padding.MGF1(hashes.SHA256()), 32),
                                      hashes.SHA256())
        elif alg == "EdDSA":
            signature = self.ed.sign(data)
        elif alg == "HS256":
            signature = hmac.new(SECRET.encode(), data, hashlib.sha256).digest()
        elif alg == "HS256-confusion":  # the RS256 -> HS256 attack: the public key as secret
            pem = self.rsa.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            data = data.replace(data.split(b".")[0], b64(json.dumps(
                {"alg": "HS256", "kid": kid}).encode()).encode())
            signature = hmac.new(pem, data, hashlib.sha256).digest()
        else:  # "none" and anything else: no signature
            signature = b""
        if tamper:
            signature = bytes([signature[0] ^ 1]) + signature[1:]
        return data.decode() + "." + b64(signature)


def sent_names(body):
    """The field names the demo backend's /headers saw, lower case."""
    return {name.lower() for name, _ in body["headers"]}


def request(url, headers=None):
    """(status, headers, parsed JSON body or text)."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as response:
            status, fields, body = response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as e:
        status, fields, body = e.code, e.headers, e.read().decode()
    try:
        body = json.loads(body)
    except ValueError:
        pass
    return status, fields, body


def admin_call(admin, method, path, body=None):
    """(status, parsed JSON body or None) of an admin API call."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(admin + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    return status, json.loads(text) if text else None


class JwksServer:
    """A key set over HTTPS; `document` and `status` may change at any time."""

    def __init__(self, directory, document):
        self.document, self.status, self.fetches = document, 200, 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                server.fetches += 1
                body = json.dumps(server.document).encode()
                self.send_response(server.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.cert, key = self_signed(directory, "jwks", "jwks test")
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}/.well-known/jwks.json"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def metric(metrics_text, name, **labels):
    total = 0.0
    for line in metrics_text.splitlines():
        if not line.startswith(name + "{"):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def gateway_config(backend, directory, jwt):
    return {
        "listen": {"address": "127.0.0.1", "port": 0},
        "admin": {"address": "127.0.0.1", "port": 0},
        "threads": 1,
        "access_log": {"enabled": True, "path": str(Path(directory) / "access.log")},
        "http": {"trusted_proxies": ["127.0.0.1/32"]},
        "identity": [{"jwt": True}, {"api_key": True}, {"client_ip": True}],
        "auth": {"jwt": jwt,
                 "api_keys": {"keys_file": str(Path(directory) / "keys.json")},
                 "failure_policy": {"failures": 5, "window_ms": 60000}},
        "limits": {"p": {"requests": 3, "window_ms": 60000, "buckets": 6}},
        "tiers": {"p": {"gold": {"requests": 5}}},
        "backends": {"demo": {"endpoints": [backend]}},
        "routes": [
            {"name": "required", "prefix": "/headers/required", "backend": "demo",
             "auth": "required", "strip_credentials": True},
            {"name": "limited", "prefix": "/headers/limited", "backend": "demo",
             "auth": "required", "limit": "p"},
            {"name": "optional", "prefix": "/headers/optional", "backend": "demo",
             "auth": "optional"},
            {"name": "open", "prefix": "/headers/open", "backend": "demo", "limit": "p"},
        ],
    }


API_KEY = "sk-test-9f0c2a7d41"


class IdentityTest(unittest.TestCase):
    """One gateway with a key set file, an HS256 secret and a keys file."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="sluice-identity-test-")
        cls.children = []
        try:
            cls.start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start(cls):
        cls.signer = Signer()
        directory = Path(cls.dir)
        (directory / "jwks.json").write_text(json.dumps(cls.signer.jwks()))
        (directory / "keys.json").write_text(json.dumps({"keys": [
            {"sha256": hashlib.sha256(API_KEY.encode()).hexdigest(), "user": "robot",
             "tier": "silver"}]}))
        backend = Child([DEMO_BACKEND, "--address", "127.0.0.1", "--port", "0"], cls.dir)
        cls.children.append(backend)
        endpoint = backend.wait_for(r"listening (\S+)").group(1)
        jwt = {"issuer": ISSUER, "audiences": ["api"], "jwks_file": str(directory / "jwks.json"),
               "algorithms": ["ES256", "ES384", "RS256", "PS256", "EdDSA", "HS256"],
               "hs256_secret_env": "SLUICE_TEST_JWT_SECRET", "tier_claim": "plan",
               "leeway_s": 30}
        config_path = directory / "sluice.json"
        config_path.write_text(json.dumps(gateway_config(endpoint, cls.dir, jwt)))
        env = dict(os.environ, SLUICE_TEST_JWT_SECRET=SECRET)
        cls.gateway = Child([SLUICE, "--config", str(config_path)], cls.dir, env)
        cls.children.append(cls.gateway)
        ready = cls.gateway.wait_for(r"ready proxy=(\S+) admin=(\S+)")
        cls.proxy = f"http://{ready.group(1)}"
        cls.admin = f"http://{ready.group(2)}"

    @classmethod
    def tearDownClass(cls):
        for child in reversed(cls.children):
            child.stop()

    def get(self, path, token=None, client=None, headers=None):
        fields = dict(headers or {})
        if token is not None:
            fields["Authorization"] = "Bearer " + token
        # Each test speaks as its own client address (a trusted proxy's X-Forwarded-For), so the
        # failure policy of one never sheds another's requests.
        fields["X-Forwarded-For"] = client or "203.0.113.1"
        return request(self.proxy + path, fields)

    def assert_refused(self, reply, reason, challenge_error=True):
        status, fields, body = reply
        self.assertEqual(status, 401, body)
        self.assertEqual(body, {"error": "unauthorized", "reason": reason})
        challenge = fields["WWW-Authenticate"]
        self.assertTrue(challenge.startswith('Bearer realm="sluice"'), challenge)
        self.assertEqual('error="invalid_token"' in challenge, challenge_error, challenge)

    def test_every_algorithm_verifies_and_the_backend_never_sees_the_credential(self):
        s = self.signer
        for alg, kid in (("ES256", "ec256"), ("ES384", "ec384"), ("RS256", "rsa"),
                         ("PS256", "rsa"), ("EdDSA", "ed"), ("HS256", None)):
            with self.subTest(alg=alg):
                status, _, body = self.get("/headers/required", s.token(alg, kid, sub="u-" + alg),
                                           client="203.0.113.10")
                self.assertEqual(status, 200, body)
                sent = sent_names(body)
                self.assertNotIn("authorization", sent)

    def test_every_refusal_reason_is_a_401_with_a_bearer_challenge(self):
        s = self.signer
        now = int(time.time())
        client = "203.0.113.20"
        cases = [
            ("malformed", "not.a-token"),
            ("bad_signature", s.token(tamper=True)),
            ("bad_signature", s.token("HS256-confusion", "rsa")),
            ("expired", s.token(exp=now - 3600)),
            ("not_yet_valid", s.token(nbf=now + 3600)),
            ("wrong_issuer", s.token(iss="https://evil.example/")),
            ("wrong_audience", s.token(aud="other")),
            ("unknown_key", s.token(kid="nobody")),
            ("algorithm_not_allowed", s.token("none", "ec256")),
            ("algorithm_not_allowed", s.token("HS512", None)),
        ]
        for i, (reason, token) in enumerate(cases):
            with self.subTest(reason=reason, case=i):
                # Five failures per address trip the failure policy: two cases per address.
                self.assert_refused(self.get("/headers/required", token,
                                             client=f"203.0.113.{30 + i // 2}"), reason)
        self.assert_refused(self.get("/headers/required", client=client), "missing",
                            challenge_error=False)
        # Within the leeway an expired token still verifies.
        status, _, _ = self.get("/headers/required", s.token(exp=now - 10), client=client)
        self.assertEqual(status, 200)

    def test_api_keys_name_their_user_and_an_unknown_key_is_refused(self):
        status, _, body = self.get("/headers/required", headers={"X-API-Key": API_KEY},
                                   client="203.0.113.50")
        self.assertEqual(status, 200, body)
        self.assertNotIn("x-api-key", sent_names(body))
        self.assert_refused(self.get("/headers/required", headers={"X-API-Key": "guess"},
                                     client="203.0.113.51"), "unknown_key")

    def test_optional_and_off_routes(self):
        client = "203.0.113.60"
        self.assertEqual(self.get("/headers/optional", client=client)[0], 200)
        self.assert_refused(self.get("/headers/optional", self.signer.token(tamper=True),
                                     client=client), "bad_signature")
        # auth off: a bad credential is ignored (the client address is the user).
        status, _, body = self.get("/headers/open", self.signer.token(tamper=True),
                                   client=client)
        self.assertEqual(status, 200, body)
        # ...and a good one is forwarded (no strip_credentials there).
        status, _, body = self.get("/headers/open", self.signer.token(), client=client)
        self.assertIn("authorization", sent_names(body))

    def test_the_verified_user_is_limited_with_the_tier_of_the_token(self):
        s = self.signer
        client = "203.0.113.70"
        # Two different tokens of one user (gold: 5 in the window) share one allowance; refused
        # requests count for nobody.
        first, second = s.token(sub="carol", jti="1"), s.token(sub="carol", jti="2")
        self.assert_refused(self.get("/headers/limited", s.token(sub="carol", tamper=True),
                                     client=client), "bad_signature")
        statuses = [self.get("/headers/limited", t, client=client)[0]
                    for t in (first, second, first, second, first, second)]
        self.assertEqual(statuses, [200, 200, 200, 200, 200, 429])
        # Another user of the standard tier (no plan claim) gets the policy's own 3.
        plain = s.token(sub="dave", plan=None)
        statuses = [self.get("/headers/limited", plain, client=client)[0] for _ in range(4)]
        self.assertEqual(statuses, [200, 200, 200, 429])
        # The API key's user is silver: no override, so the policy's 3.
        statuses = [self.get("/headers/limited", headers={"X-API-Key": API_KEY},
                             client="203.0.113.71")[0] for _ in range(4)]
        self.assertEqual(statuses, [200, 200, 200, 429])

    def test_a_flood_of_forged_tokens_is_shed_before_any_signature_check(self):
        s = self.signer
        flood, bystander = "198.51.100.9", "198.51.100.10"
        good = s.token(sub="erin")
        self.assertEqual(self.get("/headers/required", good, client=flood)[0], 200)
        for i in range(5):
            self.assert_refused(self.get("/headers/required", s.token(tamper=True, jti=str(i)),
                                         client=flood), "bad_signature")
        status, fields, body = self.get("/headers/required", s.token(tamper=True, jti="x"),
                                        client=flood)
        self.assertEqual(status, 429, body)
        self.assertEqual(body, {"error": "too_many_auth_failures"})
        self.assertGreaterEqual(int(fields["Retry-After"]), 1)
        # A token it has not verified before is shed too; one it has still passes (no check).
        self.assertEqual(self.get("/headers/required", s.token(sub="frank"), client=flood)[0],
                         429)
        self.assertEqual(self.get("/headers/required", good, client=flood)[0], 200)
        # Nobody else is affected.
        self.assertEqual(self.get("/headers/required", s.token(sub="gina"),
                                  client=bystander)[0], 200)
        _, _, text = request(self.admin + "/metrics")
        self.assertGreaterEqual(metric(text, "sluice_auth_total", route="required", method="jwt",
                                       result="shed"), 2)

    def test_the_admin_api_adds_lists_and_removes_keys_by_hash_only(self):
        key = "sk-admin-added-7d1e4b9c"
        client = "203.0.113.110"
        self.assert_refused(self.get("/headers/required", headers={"X-API-Key": key},
                                     client=client), "unknown_key")
        status, body = admin_call(self.admin, "PUT", "/admin/auth/keys/newbot",
                                  {"key": key, "tier": "gold"})
        self.assertEqual(status, 200, body)
        digest = hashlib.sha256(key.encode()).hexdigest()
        self.assertEqual(body, {"sha256": digest, "user": "newbot", "tier": "gold"})
        status, body = admin_call(self.admin, "GET", "/admin/auth/keys")
        self.assertEqual(status, 200)
        sources = {k["user"]: (k["source"], k["sha256"]) for k in body["keys"]}
        self.assertEqual(sources["newbot"], ("admin", digest))
        self.assertEqual(sources["robot"][0], "file")
        status, _, body = self.get("/headers/required", headers={"X-API-Key": key},
                                   client=client)
        self.assertEqual(status, 200, body)
        # A file's user is the file's to change; a short key is refused.
        self.assertEqual(admin_call(self.admin, "PUT", "/admin/auth/keys/robot",
                                    {"key": "x" * 20})[0], 409)
        status, body = admin_call(self.admin, "PUT", "/admin/auth/keys/newbot", {"key": "short"})
        self.assertEqual((status, body.get("field")), (400, "(body).key"))
        self.assertEqual(admin_call(self.admin, "DELETE", "/admin/auth/keys/newbot")[0], 204)
        self.assertEqual(admin_call(self.admin, "DELETE", "/admin/auth/keys/newbot")[0], 404)
        self.assert_refused(self.get("/headers/required", headers={"X-API-Key": key},
                                     client=client), "unknown_key")
        # The key itself never reached a log or the config.
        self.assertNotIn(key, self.gateway.output())
        _, config = admin_call(self.admin, "GET", "/admin/config")
        self.assertNotIn(key, json.dumps(config))

    def test_metrics_and_the_access_log_show_how_each_request_was_identified(self):
        self.assertEqual(self.get("/headers/required", self.signer.token(sub="hana"),
                                  client="203.0.113.80")[0], 200)
        self.assert_refused(self.get("/headers/required", client="203.0.113.80"), "missing",
                            challenge_error=False)
        _, _, text = request(self.admin + "/metrics")
        self.assertGreaterEqual(metric(text, "sluice_auth_total", route="required", method="jwt",
                                       result="ok"), 1)
        self.assertGreaterEqual(metric(text, "sluice_auth_total", route="required",
                                       method="none", result="missing"), 1)
        lines = []
        deadline = time.time() + 5
        while time.time() < deadline:
            lines = [json.loads(line) for line in
                     (Path(self.dir) / "access.log").read_text().splitlines()]
            if any(line["client_ip"] == "203.0.113.80" and line["status"] == 401
                   for line in lines):
                break
            time.sleep(0.2)
        mine = [line for line in lines if line["client_ip"] == "203.0.113.80"]
        self.assertEqual([(m["status"], m["auth"], m["tier"]) for m in mine],
                         [(200, "jwt", "gold"), (401, "none", None)])
        self.assertNotIn("hana", json.dumps(mine))  # the user is a keyed hash only


class JwksUrlTest(unittest.TestCase):
    """A key set fetched over HTTPS from a server this test runs, rotated while sluice runs."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sluice-jwks-test-")
        self.children = []
        self.signer = Signer()
        self.server = JwksServer(self.dir, self.signer.jwks("v1-"))
        self.addCleanup(self.server.stop)
        backend = Child([DEMO_BACKEND, "--address", "127.0.0.1", "--port", "0"], self.dir)
        self.children.append(backend)
        self.addCleanup(lambda: [c.stop() for c in reversed(self.children)])
        endpoint = backend.wait_for(r"listening (\S+)").group(1)
        (Path(self.dir) / "keys.json").write_text('{"keys": []}')
        jwt = {"issuer": ISSUER, "audiences": ["api"], "jwks_url": self.server.url,
               "jwks_ca": str(self.server.cert), "algorithms": ["ES256", "EdDSA"],
               "jwks_refresh_s": 3600}
        config_path = Path(self.dir) / "sluice.json"
        config_path.write_text(json.dumps(gateway_config(endpoint, self.dir, jwt)))
        self.gateway = Child([SLUICE, "--config", str(config_path)], self.dir)
        self.children.append(self.gateway)
        ready = self.gateway.wait_for(r"ready proxy=(\S+) admin=(\S+)")
        self.proxy, self.admin = f"http://{ready.group(1)}", f"http://{ready.group(2)}"
        self.gateway.wait_for(r"jwks refreshed url=\S+ keys=4")

    def get(self, token, client="203.0.113.90"):
        return request(self.proxy + "/headers/required",
                       {"Authorization": "Bearer " + token, "X-Forwarded-For": client})

    def test_keys_from_the_url_verify_and_a_rotation_is_picked_up_on_an_unknown_kid(self):
        self.assertEqual(self.get(self.signer.token(kid="v1-ec256"))[0], 200)
        # Rotate: new keys under new kids. The first token with a new kid is unknown, asks for
        # a fetch (at most once per 10 s since the last one), and then verifies.
        rotated = Signer()
        self.server.document = rotated.jwks("v2-")
        token = rotated.token("EdDSA", "v2-ed")
        status, _, body = self.get(token)
        self.assertEqual((status, body.get("reason")), (401, "unknown_key"))
        deadline = time.time() + 15
        while time.time() < deadline and status != 200:
            time.sleep(0.5)
            status, _, _ = self.get(token, client=f"203.0.113.{91 + int(time.time()) % 50}")
        self.assertEqual(status, 200)
        # The old key is gone from the set: its tokens no longer verify.
        status, _, body = self.get(self.signer.token(kid="v1-ec256", jti="after"),
                                   client="203.0.113.200")
        self.assertEqual((status, body.get("reason")), (401, "unknown_key"))
        _, _, text = request(self.admin + "/metrics")
        self.assertGreaterEqual(metric(text, "sluice_jwks_refreshes_total", result="ok"), 2)

    def test_a_failing_key_server_keeps_the_last_good_set(self):
        self.server.status = 500
        token = self.signer.token(kid="v1-ec384-missing")  # unknown: asks for a fetch
        deadline = time.time() + 15
        errors = 0
        while time.time() < deadline and errors == 0:
            self.get(token)
            time.sleep(0.5)
            _, _, text = request(self.admin + "/metrics")
            errors = metric(text, "sluice_jwks_refreshes_total", result="error")
        self.assertGreaterEqual(errors, 1)
        self.gateway.wait_for(r"jwks refresh failed .*answered 500")
        self.assertEqual(self.get(self.signer.token(kid="v1-ec256"), client="203.0.113.201")[0],
                         200)


class CheckTest(unittest.TestCase):
    """`sluice --check` reads the auth files as a start would."""

    def test_a_broken_keys_file_and_a_missing_secret_are_named(self):
        directory = tempfile.mkdtemp(prefix="sluice-identity-check-")
        (Path(directory) / "jwks.json").write_text(json.dumps(Signer().jwks()))
        (Path(directory) / "keys.json").write_text('{"keys": [{"sha256": "abc", "user": "x"}]}')
        jwt = {"jwks_file": str(Path(directory) / "jwks.json"), "algorithms": ["ES256"]}
        config_path = Path(directory) / "sluice.json"
        config_path.write_text(json.dumps(gateway_config("127.0.0.1:1", directory, jwt)))
        result = subprocess.run([SLUICE, "--config", str(config_path), "--check"],
                                capture_output=True, text=True, check=False)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("auth.api_keys.keys_file: " + str(Path(directory) / "keys.json") +
                      ": keys[0].sha256: must be 64 lower-case hex digits", result.stderr)
        jwt.update(algorithms=["HS256"], hs256_secret_env="SLUICE_TEST_UNSET_SECRET")
        (Path(directory) / "keys.json").write_text('{"keys": []}')
        config_path.write_text(json.dumps(gateway_config("127.0.0.1:1", directory, jwt)))
        env = {k: v for k, v in os.environ.items() if k != "SLUICE_TEST_UNSET_SECRET"}
        result = subprocess.run([SLUICE, "--config", str(config_path), "--check"],
                                capture_output=True, text=True, check=False, env=env)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("auth.jwt.hs256_secret_env: the environment variable "
                      "SLUICE_TEST_UNSET_SECRET is not set", result.stderr)


if __name__ == "__main__":
    unittest.main()
