"""Servers and a client that the Rust interop tests (tests/interop.rs) talk to.

    interop.py websockets   a `websockets` echo server; the message "fragments" is answered
                            with a fragmented, compressed message with a ping between its
                            fragments
    interop.py uvicorn      an ASGI echo app under uvicorn (the platform's server)
    interop.py client URL   a `websockets` client: a large message and a fragmented one with a
                            ping between fragments, each echoed back

Servers print "PORT <n>" and the extension they agreed on per connection on stdout.
"""

import asyncio
import socket
import sys

FRAGMENTED = "".join(f"line {i:06d} of a fragmented message\n" for i in range(6000))


async def fragments(ws):
    third = len(FRAGMENTED) // 3

    async def parts():
        yield FRAGMENTED[:third]
        await ws.ping(b"between")
        yield FRAGMENTED[third : 2 * third]
        yield FRAGMENTED[2 * third :]

    await ws.send(parts())


async def websockets_server():
    from websockets.asyncio.server import serve

    async def handler(ws):
        print("EXT", ws.response.headers.get("Sec-WebSocket-Extensions"), flush=True)
        async for msg in ws:
            if msg == "fragments":
                await fragments(ws)
            else:
                await ws.send(msg)

    async with serve(handler, "127.0.0.1", 0, max_size=None) as server:
        print("PORT", server.sockets[0].getsockname()[1], flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


async def app(scope, receive, send):
    if scope["type"] != "websocket":
        return
    await receive()
    await send({"type": "websocket.accept"})
    while True:
        m = await receive()
        if m["type"] == "websocket.disconnect":
            return
        if m.get("text") is not None:
            await send({"type": "websocket.send", "text": m["text"]})
        else:
            await send({"type": "websocket.send", "bytes": m["bytes"]})


async def uvicorn_server():
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    config = uvicorn.Config(app, lifespan="off", log_level="warning", ws_max_size=64 << 20)
    server = uvicorn.Server(config)
    print("PORT", sock.getsockname()[1], flush=True)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    server.should_exit = True
    await task


async def client(url):
    from websockets.asyncio.client import connect

    async with connect(url, max_size=None) as ws:  # compression="deflate" is the default
        ext = ws.response.headers.get("Sec-WebSocket-Extensions")
        assert ext and "permessage-deflate" in ext, ext
        big = "".join(f'{{"line":{i},"text":"client to server"}}\n' for i in range(20000))
        await ws.send(big)
        assert await ws.recv() == big
        await fragments(ws)
        assert await ws.recv() == FRAGMENTED
        print("OK", ext, flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "websockets":
        asyncio.run(websockets_server())
    elif mode == "uvicorn":
        asyncio.run(uvicorn_server())
    elif mode == "client":
        asyncio.run(client(sys.argv[2]))
    else:
        sys.exit(f"unknown mode {mode}")
