#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A chat room on Debian's python3-websockets: an implementation of WebSocket independent of
Beast (which the gateway's other tests use on both ends), for the upgrade tests
(tests/integration/proxy/upgrade_test.cpp).

  ws_chat.py server              listens on 127.0.0.1, an ephemeral port; prints "port N";
                                 every text message any member sends goes to every member
  ws_chat.py clients URL N M [CAFILE]
                                 N members join through URL (wss:// verified with CAFILE);
                                 each says M numbered lines; every member must hear all N*M
                                 lines (its own included); then each closes. Prints one
                                 line of JSON: {"members": N, "heard": [...], "ok": bool}
"""
import asyncio
import json
import ssl
import sys

import websockets


async def serve():
    members = set()

    async def room(ws, *_):
        members.add(ws)
        try:
            async for message in ws:
                websockets.broadcast(members, message)
        finally:
            members.discard(ws)

    async with websockets.serve(room, "127.0.0.1", 0, max_size=2**24) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print(f"port {port}", flush=True)
        await asyncio.Future()


async def member(url, index, count, lines, context, joined, everyone_in):
    async with websockets.connect(url, ssl=context, max_size=2**24, open_timeout=10) as ws:
        joined.release()
        await everyone_in.wait()
        heard = 0
        for line in range(lines):
            await ws.send(f"member {index} line {line}")
        while heard < count * lines:
            await asyncio.wait_for(ws.recv(), timeout=10)
            heard += 1
        return heard


async def clients(url, count, lines, cafile):
    context = ssl.create_default_context(cafile=cafile) if url.startswith("wss:") else None
    joined = asyncio.Semaphore(0)
    everyone_in = asyncio.Event()
    tasks = [asyncio.create_task(member(url, i, count, lines, context, joined, everyone_in))
             for i in range(count)]
    for _ in range(count):
        await asyncio.wait_for(joined.acquire(), timeout=20)
    everyone_in.set()
    heard = await asyncio.gather(*tasks)
    ok = all(h == count * lines for h in heard)
    print(json.dumps({"members": count, "heard": heard, "ok": ok}), flush=True)
    return 0 if ok else 1


def main():
    if sys.argv[1:2] == ["server"]:
        asyncio.run(serve())
        return 0
    if sys.argv[1:2] == ["clients"] and len(sys.argv) in (5, 6):
        cafile = sys.argv[5] if len(sys.argv) == 6 else None
        return asyncio.run(clients(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), cafile))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
