#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What verified identity costs on the data path (docs/identity.md; figures in
docs/benchmarks.md "Identity"), measured in one run on this machine:

  throughput  sluice-bearer (identity {"bearer": true}: the token is an opaque user key) against
              sluice-jwt (identity {"jwt": true}, the route `auth: required`): the same per-user
              policy (far above the load), the same wrk script sending `Authorization: Bearer`
              tokens of USERS distinct users (ES256, signed here by python3-cryptography),
              repeated; 1 worker on cpu 0, wrk and the demo backend on cpu 1; ROUNDS interleaved
              rounds of DURATION; the ratio of the medians
  flood       sluice-jwt with legitimate users at a fixed rate (LEGIT_RATE req/s, their own
              addresses through X-Forwarded-For from a trusted proxy): their p50/p99 alone, then
              with FLOOD_RATE req/s of forged tokens (a new bad signature each time) from one
              other address; then the flood alone, with sluice's CPU time (utime + stime of
              /proc/PID/stat) divided by the requests refused in that time
              (sluice_auth_total{result="shed"} and bad_signature); beside it two floors of
              the same flood: sluice answering 404 for a host no route serves, and nginx (one
              worker, pinned on cpu 0 like sluice) answering every request `return 429;`
              from its config, the least work any proxy does for a request (skipped, and said,
              without an nginx on the PATH); and below both, sluice-answer-floor (the benchmarks
              target, tests/bench/answer_floor.cpp): one recv and one send of a fixed 429 per
              request, no parsing, the least any server on this machine can do (skipped, and
              said, when it is not built)

    tests/bench/auth_compare.py [throughput] [flood]     (default: both)

Environment: ROUNDS [3] DURATION [10] USERS [3000] LEGIT_RATE [1000] FLOOD_RATE [10000]
FLOOD_NICE [10] (the flooding wrk's niceness beside the measured legitimate users; 0: the same
as theirs) BIN_DIR [build/bin] OUT_DIR [build/bench/auth].
"""

import base64
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "support"))
from child import Child  # noqa: E402 (tests/support, after the path is set)

ROUNDS = int(os.environ.get("ROUNDS", "3"))
DURATION = int(os.environ.get("DURATION", "10"))
USERS = int(os.environ.get("USERS", "3000"))
LEGIT_RATE = int(os.environ.get("LEGIT_RATE", "1000"))
FLOOD_RATE = int(os.environ.get("FLOOD_RATE", "10000"))
# The flooding client's niceness while the legitimate users are measured beside it. Both clients
# and the backend share cpu 1 here; a real flood comes from machines of its own, so by default
# the flooder yields cpu 1 to the legitimate client and the backend. Its rate is printed.
FLOOD_NICE = int(os.environ.get("FLOOD_NICE", "10"))
BIN_DIR = Path(os.environ.get("BIN_DIR", ROOT / "build" / "bin"))
OUT_DIR = Path(os.environ.get("OUT_DIR", ROOT / "build" / "bench" / "auth"))
TICKS = os.sysconf("SC_CLK_TCK")

# wrk: each request a token of `tokens.txt` (one per line), walked with a stride, with an
# X-Forwarded-For of its user's own (so the failure policy counts users apart); `delay` (ms
# per request per connection) sets a fixed rate when given.
TOKENS_LUA = r"""
local tokens, requests, index, delay_ms = {}, {}, 0, 0
function init(args)
  for line in io.lines(args[1]) do tokens[#tokens + 1] = line end
  delay_ms = tonumber(args[2]) or 0
  for n, token in ipairs(tokens) do
    local headers = {}
    for name, value in pairs(wrk.headers) do headers[name] = value end
    headers["Authorization"] = "Bearer " .. token
    headers["X-Forwarded-For"] = "10." .. math.floor(n / 65536) .. "." ..
                                 (math.floor(n / 256) % 256) .. "." .. (n % 256)
    requests[n] = wrk.format(nil, nil, headers)
  end
  index = math.random(#requests)
end
function request()
  index = index % #requests + 1
  return requests[index]
end
function delay() return delay_ms end
"""

# wrk: forged tokens from one address, a new signature byte pattern each time.
FORGED_LUA = r"""
local prefix, last, n, delay_ms, host = "", "", 0, 0, nil
function init(args)
  local token = io.open(args[1]):read("l")
  delay_ms = tonumber(args[2]) or 0
  host = args[3]  -- given: requests for a host no route serves (the 404 floor)
  prefix, last = token:sub(1, #token - 13), token:sub(#token)  -- the last character stays: it
  n = math.random(1, 1000000000)                              -- carries padding bits
end
function request()
  n = n + 1
  local middle = string.format("%012d", n):gsub("%d", function(d) return string.char(65 + d) end)
  local headers = {["Authorization"] = "Bearer " .. prefix .. middle .. last,
                   ["X-Forwarded-For"] = "203.0.113.66"}
  if host then headers["Host"] = host end
  return wrk.format(nil, nil, headers)
end
function delay() return delay_ms end
"""


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_tokens(directory):
    key = ec.generate_private_key(ec.SECP256R1())
    n = key.public_key().public_numbers()
    jwks = {"keys": [{"kty": "EC", "crv": "P-256", "kid": "bench", "use": "sig",
                      "x": b64(n.x.to_bytes(32, "big")), "y": b64(n.y.to_bytes(32, "big"))}]}
    (directory / "jwks.json").write_text(json.dumps(jwks))
    header = b64(json.dumps({"alg": "ES256", "kid": "bench"}).encode())
    lines = []
    for user in range(USERS):
        claims = b64(json.dumps({"sub": f"user-{user}", "iss": "https://id.example.com/",
                                 "aud": "api", "exp": 4102444800}).encode())
        data = f"{header}.{claims}".encode()
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
        lines.append(data.decode() + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big")))
    (directory / "tokens.txt").write_text("\n".join(lines) + "\n")
    (directory / "tokens.lua").write_text(TOKENS_LUA)
    (directory / "forged.lua").write_text(FORGED_LUA)


def config(directory, backend, jwt):
    # Only Host 127.0.0.1 is routed: another host is the 404 floor of the flood section.
    route = {"name": "api", "prefix": "/", "backend": "demo", "limit": "per-user",
             "host": "127.0.0.1"}
    c = {"listen": {"address": "127.0.0.1", "port": 0},
         "admin": {"address": "127.0.0.1", "port": 0},
         "threads": 1,
         "access_log": {"enabled": False, "path": "-"},
         "http": {"trusted_proxies": ["127.0.0.1/32"]},
         "limits": {"per-user": {"requests": 1000000000, "window_ms": 60000, "buckets": 10}},
         "backends": {"demo": {"endpoints": [backend]}},
         "routes": [route]}
    if jwt:
        c["identity"] = [{"jwt": True}]
        c["auth"] = {"jwt": {"issuer": "https://id.example.com/", "audiences": ["api"],
                             "jwks_file": str(directory / "jwks.json"), "algorithms": ["ES256"]}}
        route["auth"] = "required"
    else:
        c["identity"] = [{"bearer": True}]
    return c


def start_sluice(directory, name, backend, jwt):
    path = directory / f"{name}.json"
    path.write_text(json.dumps(config(directory, backend, jwt)))
    child = Child(["taskset", "-c", "0", str(BIN_DIR / "sluice"), "--config", str(path)],
                  directory)
    ready = child.wait_for(r"ready proxy=(\S+) admin=(\S+)")
    return child, ready.group(1), ready.group(2)


def wrk(url, script, args, duration, connections, latency=False):
    command = ["taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", f"-d{duration}s",
               "-s", str(script)]
    if latency:
        command.append("--latency")
    out = subprocess.run(command + [url, "--"] + args, capture_output=True, text=True,
                         check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    result = {"rps": rps, "non2xx": int((re.search(r"Non-2xx or 3xx responses: (\d+)", out)
                                         or [0, 0])[1])}
    for pct in ("50", "99"):
        m = re.search(rf"^\s+{pct}(?:\.000)?%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if m:
            scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]
            result[f"p{pct}_ms"] = float(m.group(1)) * scale
    return result


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def metric(admin, name, **labels):
    text = urllib.request.urlopen(f"http://{admin}/metrics", timeout=5).read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def sluice_pid(child):
    """The sluice process under taskset (taskset execs it: the same pid)."""
    return child.process.pid


NGINX_CONF = """worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/nginx-error.log crit;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {dir}/nginx-body;
  server {{
    listen 127.0.0.1:{port};
    location / {{ return 429; }}
  }}
}}
"""


def nginx_floor(directory, tokens, flood_delay, flood_connections):
    """The flood against nginx answering 429 from its config: (wrk result, CPU µs per request
    of the master and its worker), or None without nginx."""
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists()
                                      else None)
    if nginx is None:
        return None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    conf = directory / "nginx-floor.conf"
    conf.write_text(NGINX_CONF.format(dir=directory, port=port))
    child = Child(["taskset", "-c", "0", nginx, "-p", str(directory), "-c", str(conf), "-g",
                   "daemon off;"], directory)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("nginx did not start: " +
                                       (directory / "nginx-error.log").read_text())
                time.sleep(0.05)
        master = child.process.pid
        pids = [master] + [int(p) for p in Path(f"/proc/{master}/task/{master}/children")
                           .read_text().split()]
        return flood_cpu(f"http://127.0.0.1:{port}/ok", pids, directory, tokens, flood_delay,
                         flood_connections)
    finally:
        child.stop()


def flood_cpu(url, pids, directory, tokens, flood_delay, flood_connections):
    """The flood against `url` after a 2 s warm-up: (wrk result, CPU µs per request of `pids`)."""
    wrk(url, directory / "forged.lua", [tokens, str(flood_delay)], 2, flood_connections)
    before = sum(cpu_seconds(p) for p in pids)
    result = wrk(url, directory / "forged.lua", [tokens, str(flood_delay)], DURATION,
                 flood_connections)
    cpu_us = (sum(cpu_seconds(p) for p in pids) - before) / max(result["rps"] * DURATION, 1) * 1e6
    return result, cpu_us


def answer_floor(directory, tokens, flood_delay, flood_connections):
    """The flood against sluice-answer-floor (one recv and one send of a fixed 429 per request,
    pinned on cpu 0 like the proxies): (wrk result, CPU µs per request), or None when the
    benchmarks target was not built."""
    binary = BIN_DIR / "sluice-answer-floor"
    if not binary.exists():
        return None
    child = Child(["taskset", "-c", "0", str(binary), "--port", "0"], directory)
    try:
        address = child.wait_for(r"listening (\S+)").group(1)
        return flood_cpu(f"http://{address}/ok", [child.process.pid], directory, tokens,
                         flood_delay, flood_connections)
    finally:
        child.stop()


def throughput(directory, backend, report):
    tokens = str(directory / "tokens.txt")
    runs = {"sluice-bearer": [], "sluice-jwt": []}
    for round_ in range(ROUNDS):
        for name in runs:
            child, proxy, _ = start_sluice(directory, name, backend, name == "sluice-jwt")
            try:
                wrk(f"http://{proxy}/ok", directory / "tokens.lua", [tokens], 3, 64)  # warm-up
                result = wrk(f"http://{proxy}/ok", directory / "tokens.lua", [tokens], DURATION,
                             64)
            finally:
                child.stop()
            runs[name].append(result)
            print(f"round {round_ + 1} {name}: {result['rps']:.0f} req/s "
                  f"non-2xx {result['non2xx']}", flush=True)
    medians = {name: statistics.median(r["rps"] for r in rs) for name, rs in runs.items()}
    report["throughput"] = {"runs": runs, "median_rps": medians,
                            "ratio_jwt_to_bearer": medians["sluice-jwt"] / medians["sluice-bearer"]}
    print(f"median req/s: bearer {medians['sluice-bearer']:.0f}, jwt {medians['sluice-jwt']:.0f}"
          f", ratio {report['throughput']['ratio_jwt_to_bearer']:.3f}", flush=True)


def flood(directory, backend, report):
    tokens = str(directory / "tokens.txt")
    legit_connections = 8
    legit_delay = max(1, round(legit_connections * 1000 / LEGIT_RATE))
    flood_connections = 20
    flood_delay = max(1, round(flood_connections * 1000 / FLOOD_RATE))
    child, proxy, admin = start_sluice(directory, "sluice-jwt-flood", backend, True)
    url = f"http://{proxy}/ok"
    try:
        wrk(url, directory / "tokens.lua", [tokens], 3, 64)  # every user's token verified once
        alone = wrk(url, directory / "tokens.lua", [tokens, str(legit_delay)], DURATION,
                    legit_connections, latency=True)
        print(f"legit alone: {alone}", flush=True)
        flooder = subprocess.Popen(
            ["nice", "-n", str(FLOOD_NICE), "taskset", "-c", "1", "wrk", "-t1",
             f"-c{flood_connections}",
             f"-d{DURATION + 2}s", "-s", str(directory / "forged.lua"), url, "--", tokens,
             str(flood_delay)], stdout=subprocess.PIPE, text=True)
        time.sleep(1)
        flooded = wrk(url, directory / "tokens.lua", [tokens, str(legit_delay)], DURATION,
                      legit_connections, latency=True)
        flood_out = flooder.communicate()[0]
        flood_rps = float(re.search(r"Requests/sec:\s+([\d.]+)", flood_out).group(1))
        print(f"legit with the flood ({flood_rps:.0f} forged/s): {flooded}", flush=True)
        # The flood alone: CPU per refused request.
        refused_before = (metric(admin, "sluice_auth_total", result="shed") +
                          metric(admin, "sluice_auth_total", result="bad_signature"))
        cpu_before = cpu_seconds(sluice_pid(child))
        alone_flood = wrk(url, directory / "forged.lua", [tokens, str(flood_delay)], DURATION,
                          flood_connections)
        cpu_after = cpu_seconds(sluice_pid(child))
        # The floor: the same flood for a host no route serves, answered 404 before any step.
        floor_before = cpu_seconds(sluice_pid(child))
        floor = wrk(url, directory / "forged.lua", [tokens, str(flood_delay), "unrouted.example"],
                    DURATION, flood_connections)
        floor_cpu_us = (cpu_seconds(sluice_pid(child)) - floor_before) / max(
            floor["rps"] * DURATION, 1) * 1e6
        refused = (metric(admin, "sluice_auth_total", result="shed") +
                   metric(admin, "sluice_auth_total", result="bad_signature") - refused_before)
        shed = metric(admin, "sluice_auth_total", result="shed")
        verified_bad = metric(admin, "sluice_auth_total", result="bad_signature")
    finally:
        child.stop()
    peer = nginx_floor(directory, tokens, flood_delay, flood_connections)
    least = answer_floor(directory, tokens, flood_delay, flood_connections)
    cpu_us = (cpu_after - cpu_before) / max(refused, 1) * 1e6
    report["flood"] = {
        "legit_alone": alone, "legit_with_flood": flooded, "flood_rps": flood_rps,
        "p99_ratio": flooded.get("p99_ms", 0) / max(alone.get("p99_ms", 1e-9), 1e-9),
        "flood_alone": alone_flood, "refused": refused, "cpu_us_per_refused": cpu_us,
        "shed_total": shed, "bad_signature_total": verified_bad,
        "floor_404": floor, "floor_cpu_us_per_request": floor_cpu_us,
        "nginx_429": peer[0] if peer else None,
        "nginx_429_cpu_us_per_request": peer[1] if peer else None,
        "answer_floor": least[0] if least else None,
        "answer_floor_cpu_us_per_request": least[1] if least else None}
    print(f"flood alone: {alone_flood['rps']:.0f} req/s refused {refused:.0f}, "
          f"CPU {cpu_us:.2f} us per refused request (a 404 for an unrouted host: "
          f"{floor_cpu_us:.2f} us); legit p99 {alone.get('p99_ms')} ms alone, "
          f"{flooded.get('p99_ms')} ms flooded (ratio {report['flood']['p99_ratio']:.2f}); "
          f"verified before the policy tripped: {verified_bad:.0f}", flush=True)
    if peer:
        print(f"nginx answering 429 from its config, the same flood: {peer[0]['rps']:.0f} req/s, "
              f"CPU {peer[1]:.2f} us per request", flush=True)
    else:
        print("nginx not found: its floor was not measured", flush=True)
    if least:
        print(f"sluice-answer-floor (one recv and one send per request), the same flood: "
              f"{least[0]['rps']:.0f} req/s, CPU {least[1]:.2f} us per request", flush=True)
    else:
        print(f"{BIN_DIR / 'sluice-answer-floor'} is not built (cmake --build --preset release "
              "--target benchmarks): the machine's floor was not measured", flush=True)


def main():
    sections = sys.argv[1:] or ["throughput", "flood"]
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="sluice-auth-bench-"))
    make_tokens(directory)
    backend_child = Child(["taskset", "-c", "1", str(BIN_DIR / "sluice-demo-backend"),
                           "--address", "127.0.0.1", "--port", "0", "--threads", "1"], directory)
    backend = backend_child.wait_for(r"listening (\S+)").group(1)
    report = {"users": USERS, "rounds": ROUNDS, "duration_s": DURATION,
              "legit_rate": LEGIT_RATE, "flood_rate": FLOOD_RATE, "flood_nice": FLOOD_NICE}
    try:
        if "throughput" in sections:
            throughput(directory, backend, report)
        if "flood" in sections:
            flood(directory, backend, report)
    finally:
        backend_child.stop()
    out = OUT_DIR / "summary.json"
    out.write_text(json.dumps(report, indent=1))
    print(f"summary: {out}")


if __name__ == "__main__":
    main()
