#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Holds many idle keep-alive client connections open against an HTTP server.

Opens --count connections to --host:--port (over TLS with --tls, the certificate not
verified: the server's memory is what is measured), sends one `GET --path` on each, reads the whole
response (Content-Length framed), then keeps every connection open and idle. Talks to
tests/bench/peer_compare.sh through stdout and signals:
  - prints `ready open=N failed=M seconds=S` once every connection has its response (or failed);
  - on SIGUSR1 prints `status open=N closed=M` (closed = the server has closed it since);
  - exits on SIGTERM / SIGINT, closing everything.
"""

import argparse
import asyncio
import resource
import signal
import ssl
import sys
import time


def raise_fd_limit(count: int) -> None:
    """Each connection is one descriptor here: ask for enough, up to the hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = count + 256
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    if soft == resource.RLIM_INFINITY or soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


async def open_one(args, gate: asyncio.Semaphore, held: list, failures: list) -> None:
    async with gate:  # bounds the connects in flight, so the listen backlog never overflows
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(args.host, args.port, ssl=args.ssl_context,
                                        server_hostname="localhost" if args.ssl_context else None),
                args.timeout)
            request = f"GET {args.path} HTTP/1.1\r\nHost: {args.host}:{args.port}\r\n\r\n"
            writer.write(request.encode())
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), args.timeout)
            lines = head.decode("latin-1").split("\r\n")
            status = lines[0].split(" ")[1]
            if status != "200":
                raise RuntimeError(f"status {status}")
            length = None
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if length is None:
                raise RuntimeError("response without Content-Length")
            await asyncio.wait_for(reader.readexactly(length), args.timeout)
            held.append((reader, writer))
        except Exception as error:  # noqa: BLE001 - any failure is counted and reported
            failures.append(repr(error))


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", default="/ok")
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--parallel", type=int, default=256)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--tls", action="store_true", help="connect over TLS")
    args = parser.parse_args()
    args.ssl_context = None
    if args.tls:
        args.ssl_context = ssl.create_default_context()
        args.ssl_context.check_hostname = False
        args.ssl_context.verify_mode = ssl.CERT_NONE
    raise_fd_limit(args.count)

    held: list = []
    failures: list = []
    started = time.monotonic()
    gate = asyncio.Semaphore(args.parallel)
    await asyncio.gather(*(open_one(args, gate, held, failures) for _ in range(args.count)))
    seconds = time.monotonic() - started
    print(f"ready open={len(held)} failed={len(failures)} seconds={seconds:.1f}", flush=True)
    if failures:
        kinds = sorted(set(failures))[:5]
        print(f"failures (first kinds): {kinds}", flush=True)

    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    def report() -> None:
        # The protocol sees the server's FIN even though nobody reads: at_eof() turns true.
        closed = sum(1 for reader, _ in held if reader.at_eof())
        print(f"status open={len(held) - closed} closed={closed}", flush=True)

    loop.add_signal_handler(signal.SIGUSR1, report)
    loop.add_signal_handler(signal.SIGTERM, done.set)
    loop.add_signal_handler(signal.SIGINT, done.set)
    await done.wait()
    for _, writer in held:
        writer.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
