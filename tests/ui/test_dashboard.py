#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The dashboard page in a real browser (docs/operating.md "Dashboard").

    tests/ui/test_dashboard.py [-v] [--artifacts DIR]

Starts two demo backends, a redis-server and the release sluice (an admin token, two routes,
two policies, a breaker on each backend, a fleet of one on that Redis), then Debian's headless `chromium`, driven over the DevTools protocol
(python3-websockets). The browser loads /admin/ui, is asked for the token and types it into the
form; the test then makes one backend fail and checks what the page's scripts rendered: the
routes, the policies with their rates and top users, the failing backend's breaker open, the
endpoints, the fleet, live events. A screenshot goes to DIR/dashboard.png (build/test-artifacts by
default), the children's logs to DIR/dashboard/. Exits 77 (ctest: skipped) without chromium.
"""

import argparse
import asyncio
import base64
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "soak"))

from faults import Admin, Child, DemoBackend, free_port  # noqa: E402  (the soak test's process helpers)

SKIP = 77  # ctest SKIP_RETURN_CODE
TOKEN_ENV = "SLUICE_UI_TEST_ADMIN_TOKEN"
WAIT_S = 30.0  # every wait on the page is bounded by this
ARTIFACTS = ROOT / "build" / "test-artifacts"


def binary(env_name, default):
    return os.environ.get(env_name) or str(ROOT / "build" / "bin" / default)


def make_config(steady, flaky, redis_port):
    breaker = {"enabled": True, "k": 1.5, "protection": 5, "window_ms": 5000, "buckets": 10,
               "failure_statuses": [500, 502, 503, 504]}
    return {
        "listeners": [{"name": "http", "address": "127.0.0.1", "port": 0}],
        "admin": {"address": "127.0.0.1", "port": 0, "token_env": TOKEN_ENV, "persist": False},
        "threads": 2,
        "access_log": {"enabled": False, "path": "-"},
        "identity": [{"header": "X-User"}, {"client_ip": True}],
        # A fleet of one on a real Redis, so the fleet panel has something to show.
        "store": {"type": "redis", "host": "127.0.0.1", "port": redis_port},
        "fleet": {"enabled": True, "name": "ui-test", "replica_id": "ui-replica",
                  "heartbeat_ms": 200},
        "limits": {
            "standard": {"requests": 100000, "window_ms": 60000, "buckets": 60},
            "strict": {"requests": 5, "window_ms": 10000, "buckets": 10},
        },
        "backends": {
            "steady": {"endpoints": [steady.endpoint], "breaker": dict(breaker),
                       "concurrency": {"enabled": True, "min": 4, "max": 1000}},
            "flaky": {"endpoints": [flaky.endpoint], "breaker": dict(breaker)},
        },
        "routes": [
            {"name": "api", "prefix": "/api", "backend": "steady", "limit": "standard",
             "strip_prefix": True},
            {"name": "flaky", "prefix": "/flaky", "backend": "flaky", "limit": "strict",
             "methods": ["GET"], "strip_prefix": True},
        ],
    }


class Traffic(threading.Thread):
    """Requests through the gateway until stopped: a heavy and a few light users on /api, a
    user over the strict policy's limit on /flaky, and, once `failing` is set, requests that
    the flaky backend answers with 500 (each from a new user, so the limit never hides them)."""

    def __init__(self, base):
        super().__init__(daemon=True)
        self.base = base
        self.stop = threading.Event()
        self.failing = threading.Event()
        self.statuses = {}

    def get(self, path, user):
        request = urllib.request.Request(self.base + path, headers={"X-User": user})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                status = response.status
                response.read()
        except urllib.error.HTTPError as e:
            status = e.code
        except OSError:
            status = "error"
        self.statuses[status] = self.statuses.get(status, 0) + 1

    def run(self):
        i = 0
        while not self.stop.is_set():
            i += 1
            self.get("/api/ok", "heavy-user")
            if i % 3 == 0:
                self.get("/api/ok", f"light-user-{i % 4}")
            if i % 5 == 0:
                self.get("/flaky/ok", "greedy-user")
            if self.failing.is_set():
                self.get("/flaky/status/500", f"one-off-{i}")
            self.stop.wait(0.02)


class DevTools:
    """A Chrome DevTools Protocol client on the browser's websocket: commands (optionally to
    a page session) and the events received, kept in order."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.pending = {}
        self.events = []
        self.reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def connect(cls, url):
        import websockets  # python3-websockets (dev.sh deps)
        return cls(await websockets.connect(url, max_size=None, ping_interval=None))

    async def _read(self):
        async for raw in self.ws:
            message = json.loads(raw)
            future = self.pending.pop(message.get("id"), None)
            if future is not None:
                if not future.done():
                    future.set_result(message)
            else:
                self.events.append(message)

    async def send(self, method, params=None, session=None, timeout=WAIT_S):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        future = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        await self.ws.send(json.dumps(message))
        reply = await asyncio.wait_for(future, timeout)
        if "error" in reply:
            raise RuntimeError(f"DevTools {method}: {reply['error']}")
        return reply.get("result", {})

    async def event(self, method, session, timeout=WAIT_S):
        """The first event `method` received for `session`, taken out of the kept events."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for i, message in enumerate(self.events):
                if message.get("method") == method and message.get("sessionId") == session:
                    return self.events.pop(i)["params"]
            await asyncio.sleep(0.05)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for the event {method}")

    async def close(self):
        self.reader.cancel()
        await self.ws.close()


class Page:
    """One browser tab, attached with a flat session."""

    def __init__(self, devtools, session):
        self.devtools = devtools
        self.session = session

    async def call(self, method, params=None):
        return await self.devtools.send(method, params, self.session)

    async def evaluate(self, expression):
        result = await self.call("Runtime.evaluate", {
            "expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise AssertionError(f"page script failed: {expression}\n{result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression, what, timeout=WAIT_S):
        """The first truthy value of `expression`, polled every 100 ms for at most `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = await self.evaluate(expression)
            if value:
                return value
            await asyncio.sleep(0.1)
        panels = await self.evaluate(PANEL_STATES)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; panels: "
                             f"{json.dumps(panels, indent=1)}")


# Whether the element with an id is rendered (the `hidden` attribute alone is not enough: CSS
# could override it).
VISIBLE = "((id) => { const e = document.getElementById(id); return e !== null && " \
          "getComputedStyle(e).display !== 'none' && e.getClientRects().length > 0; })"

PANEL_STATES = """[...document.querySelectorAll('section[data-panel]')].map((s) => ({
    panel: s.dataset.panel, state: s.dataset.state,
    message: s.querySelector('[data-role="message"]').textContent,
    text: s.innerText.slice(0, 400)}))"""


def http_get(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


class DashboardTest(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls):
        cls.logs = ARTIFACTS / "dashboard"
        cls.logs.mkdir(parents=True, exist_ok=True)
        for old in cls.logs.glob("*.log"):
            old.unlink()
        cls.children = []
        cls.tmp = Path(tempfile.mkdtemp(prefix="sluice-ui-"))
        try:
            cls.start_gateway()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_gateway(cls):
        demo = binary("SLUICE_DEMO_BACKEND", "sluice-demo-backend")
        cls.steady = DemoBackend(demo, 0, cls.logs)
        cls.children.append(cls.steady)
        cls.flaky = DemoBackend(demo, 1, cls.logs)
        cls.children.append(cls.flaky)
        redis_port = free_port()
        cls.redis = Child("redis", [shutil.which("redis-server") or "redis-server", "--port",
                                    str(redis_port), "--bind", "127.0.0.1", "--save", "",
                                    "--appendonly", "no"], cls.logs)
        cls.children.append(cls.redis)
        cls.redis.wait_for(r"Ready to accept connections")
        config_path = cls.tmp / "sluice.json"
        config_path.write_text(json.dumps(make_config(cls.steady, cls.flaky, redis_port),
                                          indent=2))
        cls.token = secrets.token_hex(16)
        env = {**os.environ, TOKEN_ENV: cls.token}
        cls.gateway = Child("sluice", [binary("SLUICE_BINARY", "sluice"), "--config",
                                       str(config_path)], cls.logs, env=env)
        cls.children.append(cls.gateway)
        ready = cls.gateway.wait_for(r"ready proxy=(\S+) admin=(\S+) ")
        cls.proxy = f"http://{ready.group(1)}"
        cls.admin_base = f"http://{ready.group(2)}"
        cls.admin = Admin(cls.admin_base, cls.token)
        cls.traffic = Traffic(cls.proxy)
        cls.traffic.start()

    @classmethod
    def tearDownClass(cls):
        traffic = getattr(cls, "traffic", None)
        if traffic:
            traffic.stop.set()
            traffic.join(10)
        for child in reversed(cls.children):
            child.kill()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_page_is_served_without_the_token_under_a_strict_policy(self):
        status, headers, body = http_get(self.admin_base + "/admin/ui")
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"], "text/html; charset=utf-8")
        self.assertIn("default-src 'none'", headers["Content-Security-Policy"])
        self.assertIn("frame-ancestors 'none'", headers["Content-Security-Policy"])
        self.assertEqual(headers["X-Content-Type-Options"], "nosniff")
        self.assertIn(b'src="/admin/ui/app.js"', body)
        status, headers, _ = http_get(self.admin_base + "/admin/ui/app.js")
        self.assertEqual((status, headers["Content-Type"]), (200, "text/javascript; charset=utf-8"))
        # The data behind it is not open.
        status, _, _ = http_get(self.admin_base + "/admin/routes")
        self.assertEqual(status, 401)

    async def test_browser_renders_every_panel(self):
        chromium = shutil.which("chromium")
        profile = self.tmp / "chromium"
        args = [chromium, "--headless=new", "--remote-debugging-port=0",
                f"--user-data-dir={profile}", "--no-first-run", "--no-default-browser-check",
                "--disable-gpu", "--disable-dev-shm-usage", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--mute-audio", "--hide-scrollbars", "--window-size=1400,1800",
                "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium's sandbox refuses to run as root
        log = open(self.logs / "chromium.log", "w")
        browser = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        devtools = None
        page = None
        try:
            devtools = await DevTools.connect(await self.devtools_url(profile, browser))
            target = await devtools.send("Target.createTarget", {"url": "about:blank"})
            attached = await devtools.send("Target.attachToTarget",
                                           {"targetId": target["targetId"], "flatten": True})
            page = Page(devtools, attached["sessionId"])
            await self.check_dashboard(page)
        finally:
            if page is not None:
                await self.screenshot(page)
            if devtools is not None:
                await devtools.close()
            os.killpg(browser.pid, signal.SIGKILL)
            browser.wait()
            log.close()

    async def devtools_url(self, profile, browser):
        """The browser's websocket, from the DevToolsActivePort file it writes once listening."""
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            if port_file.exists():
                lines = port_file.read_text().split("\n")
                if len(lines) >= 2 and lines[1]:
                    return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            if browser.poll() is not None:
                break
            await asyncio.sleep(0.1)
        raise AssertionError(f"chromium did not start (exit {browser.poll()}); see "
                             f"{self.logs / 'chromium.log'}")

    async def screenshot(self, page):
        try:
            shot = await page.call("Page.captureScreenshot",
                                   {"format": "png", "captureBeyondViewport": True})
            (ARTIFACTS / "dashboard.png").write_bytes(base64.b64decode(shot["data"]))
        except (RuntimeError, asyncio.TimeoutError) as e:
            print(f"no screenshot: {e}", file=sys.stderr)

    async def check_dashboard(self, page):
        for domain in ("Page", "Runtime", "Log"):
            await page.call(f"{domain}.enable")
        await page.call("Emulation.setDeviceMetricsOverride",
                        {"width": 1400, "height": 1800, "deviceScaleFactor": 1, "mobile": False})
        # The first poll's fleet read is held in the browser until the token is in, as a slow
        # answer would be: its 401 answers a request sent without the token and must not read
        # as the token refused (the page once showed the form again, and stopped polling).
        await page.call("Fetch.enable", {"patterns": [{"urlPattern": "*/admin/fleet*",
                                                       "requestStage": "Request"}]})
        await page.call("Page.navigate", {"url": self.admin_base + "/admin/ui"})
        held = await page.devtools.event("Fetch.requestPaused", page.session)

        # The API answers 401: the page asks for the token; it goes into the form.
        await page.wait_for(f"{VISIBLE}('token-form')", "the token form")
        await page.call("Runtime.evaluate", {"expression": "document.getElementById('token-input')"
                                                           ".focus()"})
        await page.call("Input.insertText", {"text": self.token})
        await page.evaluate("document.getElementById('token-submit').click()")
        await page.wait_for(f"!{VISIBLE}('token-form')", "the form to close")
        self.assertNotIn("Authorization", held["request"]["headers"])
        await page.call("Fetch.continueRequest", {"requestId": held["requestId"]})
        await page.call("Fetch.disable")  # lets go of any later read it caught
        await page.wait_for("document.querySelector('section[data-panel=\"fleet\"]')"
                            ".dataset.state === 'ok'", "the fleet after the held read's 401")
        await page.wait_for(f"!{VISIBLE}('token-form')", "the form to stay closed")
        await self.check_panels(page)

        # The token stays for the tab's session (a reload needs no form), in sessionStorage only.
        await page.call("Page.reload")
        await page.wait_for(f"document.querySelectorAll('#routes-body tr').length === 2 && "
                            f"!{VISIBLE}('token-form')",
                            "the routes after a reload, without the form")
        storage = await page.evaluate(
            "({session: sessionStorage.getItem('sluice.admin.token'), local: localStorage.length,"
            " cookie: document.cookie})")
        self.assertEqual(storage, {"session": self.token, "local": 0, "cookie": ""})
        await page.wait_for("document.querySelector('#breakers-list [data-backend=\"flaky\"]')"
                            " !== null", "the breakers after a reload")
        # The events before the reload come back: the first connection replays what is kept.
        await page.wait_for("document.querySelectorAll('#events-list li').length > 0",
                            "the replayed events after a reload")
        # Rates again (two scrapes after the reload), so the screenshot shows them.
        await page.wait_for("!document.querySelector('#policies-list [data-policy=\"standard\"] "
                            "[data-field=\"allowed-rate\"]').textContent.includes('…')",
                            "the rates after a reload")
        self.check_console(page)

    async def check_panels(self, page):
        routes = await page.wait_for("""(() => {
            const rows = [...document.querySelectorAll('#routes-body tr[data-route]')];
            return rows.length === 2 && rows.map((r) => [...r.querySelectorAll('td')]
                .map((c) => c.textContent));
          })()""", "two routes")
        self.assertEqual(routes, [["api", "/api", "steady", "standard"],
                                  ["flaky", "/flaky (GET)", "flaky", "strict"]])
        policies = await page.wait_for(
            "(() => { const p = [...document.querySelectorAll('#policies-list [data-policy]')]"
            ".map((c) => c.dataset.policy); return p.length === 2 && p; })()", "two policies")
        self.assertEqual(policies, ["standard", "strict"])

        # Live events: once the stream is open, make the flaky backend fail (the breaker opens:
        # breaker_open) and change a policy (admin_change).
        await page.wait_for("document.getElementById('events-stream').dataset.state === 'live'",
                            "the event stream to be live")
        self.traffic.failing.set()
        status, _ = await asyncio.to_thread(self.admin.json, "PUT", "/admin/limits/standard",
                                            {"requests": 200000, "window_ms": 60000,
                                             "buckets": 60})
        self.assertEqual(status, 200)

        breaker = await page.wait_for("""(() => {
            const card = document.querySelector('#breakers-list [data-backend="flaky"]');
            return card && card.dataset.breakerState === 'open' && {
              p: Number(card.dataset.dropProbability),
              shown: card.querySelector('[data-field="drop-probability"]').textContent,
              bars: card.querySelectorAll('[data-field="sparkline"] span').length};
          })()""", "the flaky backend's breaker to open")
        self.assertGreater(breaker["p"], 0)
        self.assertRegex(breaker["shown"], r"^\d+\.\d%$")
        self.assertGreaterEqual(breaker["bars"], 1)
        steady = await page.evaluate(
            "document.querySelector('#breakers-list [data-backend=\"steady\"]')"
            ".dataset.breakerState")
        self.assertEqual(steady, "closed")
        # The steady backend's concurrency limit, with what is in flight under it.
        concurrency = await page.wait_for("""(() => {
            const card = document.querySelector('#breakers-list [data-backend="steady"]');
            const limit = card && card.querySelector('[data-field="concurrency-limit"]');
            return limit && {limit: Number(limit.textContent),
                             inFlight: card.querySelector('[data-field="in-flight"]').textContent};
          })()""", "the steady backend's concurrency limit")
        self.assertGreaterEqual(concurrency["limit"], 4)
        self.assertRegex(concurrency["inFlight"], r"^\d+$")
        # Switched to shadow mode, the open breaker is shown as a shadow that drops nothing.
        status, _ = await asyncio.to_thread(self.admin.json, "PUT", "/admin/backends/flaky/breaker",
                                            {"mode": "shadow"})
        self.assertEqual(status, 200)
        await page.wait_for("document.querySelector('#breakers-list [data-backend=\"flaky\"]')"
                            "?.dataset.breakerState === 'shadow'", "the flaky breaker in shadow mode")

        endpoints = await page.wait_for("""(() => {
            const rows = [...document.querySelectorAll('#endpoints-body tr[data-endpoint]')];
            return rows.length === 2 && rows.map((r) => [r.dataset.backend, r.dataset.endpoint,
                                                         r.dataset.state]);
          })()""", "both endpoints")
        self.assertEqual(sorted(e[:2] for e in endpoints),
                         [["flaky", self.flaky.endpoint], ["steady", self.steady.endpoint]])
        for backend, endpoint, state in endpoints:
            self.assertTrue(state, f"{backend} {endpoint} shows no state")

        # The fleet: one replica, this one, named in the header.
        fleet = await page.wait_for("""(() => {
            const rows = [...document.querySelectorAll('#fleet-body tr[data-replica]')];
            return rows.length === 1 && !document.getElementById('fleet-panel').hidden && {
              replica: rows[0].querySelector('[data-field="replica"]').textContent,
              state: rows[0].dataset.state,
              header: document.getElementById('replica').textContent};
          })()""", "the fleet panel")
        self.assertEqual(fleet, {"replica": "ui-replica (this one)", "state": "ok",
                                 "header": "replica ui-replica of fleet ui-test"})

        events = await page.wait_for("""(() => {
            const items = [...document.querySelectorAll('#events-list li[data-event-type]')];
            return items.length > 0 && items.map((li) => li.dataset.eventType);
          })()""", "a live event")
        self.assertTrue({"breaker_open", "admin_change"} & set(events), events)

        # Rates come from two /metrics scrapes two seconds apart.
        rates = await page.wait_for("""(() => {
            const rate = (policy, field) => {
              const el = document.querySelector(
                  `#policies-list [data-policy="${policy}"] [data-field="${field}"]`);
              const m = el && /([\\d.]+)\\/s/.exec(el.textContent);
              return m ? Number(m[1]) : null;
            };
            const r = {allowed: rate('standard', 'allowed-rate'),
                       limited: rate('strict', 'limited-rate')};
            return r.allowed > 0 && r.limited > 0 && r;
          })()""", "allowed and limited rates")
        self.assertGreater(rates["allowed"], 0)

        users = await page.wait_for("""(() => {
            const items = document.querySelectorAll(
                '#policies-list [data-policy="standard"] [data-field="top-users"] li[data-user]');
            return items.length > 0 && [...items].map((li) => li.dataset.user);
          })()""", "the standard policy's top users")
        status, top = await asyncio.to_thread(self.admin.json, "GET",
                                              "/admin/limits/standard/top?n=5")
        self.assertEqual(status, 200)
        self.assertEqual(users[0], top["users"][0]["user"], "the heaviest user comes first")

    def check_console(self, page):
        exceptions = [e for e in page.devtools.events
                      if e.get("method") == "Runtime.exceptionThrown"]
        self.assertEqual(exceptions, [], "the page's script threw")
        csp = [e["params"]["entry"]["text"] for e in page.devtools.events
               if e.get("method") == "Log.entryAdded"
               and "Content Security Policy" in e["params"]["entry"].get("text", "")]
        self.assertEqual(csp, [], "the page broke its own Content-Security-Policy")


def main():
    global ARTIFACTS
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--artifacts", default=str(ARTIFACTS))
    args, rest = parser.parse_known_args()
    ARTIFACTS = Path(args.artifacts)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    if not shutil.which("chromium"):
        print("SKIP: chromium is not installed (Debian package chromium; ./deploy/dev.sh deps "
              "installs it)", flush=True)
        return SKIP
    try:
        import websockets  # noqa: F401
    except ImportError:
        print("SKIP: python3-websockets is not installed (./deploy/dev.sh deps installs it)",
              flush=True)
        return SKIP
    program = unittest.main(argv=[sys.argv[0], *rest], exit=False)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
