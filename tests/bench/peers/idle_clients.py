#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Holds many idle keep-alive client connections open against an HTTP server.

Opens --count connections to --host:--port (over TLS with --tls, the certificate not
verified: the server's memory is what is measured), sends one `GET --path` on each, reads the whole
response (Content-Length framed), then keeps every connection open and idle. With --h2 (TLS
implied) each connection instead negotiates h2 by ALPN, sends the client connection preface and an
empty SETTINGS frame, reads frames until it has the server's SETTINGS and the ACK of its own (and
acknowledges the server's), then stays idle without opening a stream. Talks to
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


# The HTTP/2 client connection preface (RFC 9113 section 3.4): the magic, then a SETTINGS frame
# (here empty: every setting at its default).
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
H2_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
H2_SETTINGS_ACK = b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"
H2_FRAME_SETTINGS, H2_FRAME_PING, H2_FRAME_GOAWAY, H2_FLAG_ACK = 0x4, 0x6, 0x7, 0x1


async def h2_handshake(reader, writer, timeout: float) -> None:
    """ALPN must have chosen h2; sends the preface and SETTINGS, then reads frames until the
    server's SETTINGS (acknowledged at once) and the ACK of ours have both arrived."""
    protocol = writer.get_extra_info("ssl_object").selected_alpn_protocol()
    if protocol != "h2":
        raise RuntimeError(f"ALPN chose {protocol!r}, not h2")
    writer.write(H2_PREFACE + H2_SETTINGS)
    server_settings = settings_acked = False
    while not (server_settings and settings_acked):
        header = await asyncio.wait_for(reader.readexactly(9), timeout)
        length = int.from_bytes(header[:3], "big")
        kind, flags = header[3], header[4]
        payload = await asyncio.wait_for(reader.readexactly(length), timeout)
        if kind == H2_FRAME_GOAWAY:
            code = int.from_bytes(payload[4:8], "big") if len(payload) >= 8 else -1
            raise RuntimeError(f"GOAWAY (error code {code}) during the handshake")
        if kind == H2_FRAME_SETTINGS:
            if flags & H2_FLAG_ACK:
                settings_acked = True
            else:
                server_settings = True
                writer.write(H2_SETTINGS_ACK)
    await writer.drain()


async def h2_hold(reader, writer, gone: set) -> None:
    """Reads whatever the server sends an idle h2 connection (answering PINGs) until it closes
    the connection, then adds the writer to `gone`. (Unread bytes, e.g. a GOAWAY before the
    close, would keep StreamReader.at_eof() false: the HTTP/1.1 mode's test would miss it.)"""
    try:
        while True:
            header = await reader.readexactly(9)
            payload = await reader.readexactly(int.from_bytes(header[:3], "big"))
            if header[3] == H2_FRAME_PING and not header[4] & H2_FLAG_ACK:
                writer.write(b"\x00\x00\x08\x06\x01\x00\x00\x00\x00" + payload)
    except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
        pass
    gone.add(writer)


async def open_one(args, gate: asyncio.Semaphore, held: list, failures: list) -> None:
    async with gate:  # bounds the connects in flight, so the listen backlog never overflows
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(args.host, args.port, ssl=args.ssl_context,
                                        server_hostname="localhost" if args.ssl_context else None),
                args.timeout)
            if args.h2:
                await h2_handshake(reader, writer, args.timeout)
                held.append((reader, writer))
                args.h2_tasks.append(asyncio.create_task(h2_hold(reader, writer, args.h2_gone)))
                return
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
    parser.add_argument("--h2", action="store_true",
                        help="TLS with ALPN h2: the HTTP/2 handshake, then idle (no request)")
    args = parser.parse_args()
    args.ssl_context = None
    if args.tls or args.h2:
        args.ssl_context = ssl.create_default_context()
        args.ssl_context.check_hostname = False
        args.ssl_context.verify_mode = ssl.CERT_NONE
    if args.h2:
        args.ssl_context.set_alpn_protocols(["h2"])
    args.h2_tasks, args.h2_gone = [], set()  # --h2: the hold tasks, the connections closed
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
        if args.h2:
            closed = len(args.h2_gone)
        else:
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
