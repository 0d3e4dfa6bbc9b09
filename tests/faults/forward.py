"""A TCP forwarder for the multi-host test: PostgreSQL and the broker listen on 127.0.0.1
only, so workers in other network namespaces reach them through it, over their own links.

    python -m tests.faults.forward 10.231.1.1:0=127.0.0.1:5432 10.231.1.1:0=127.0.0.1:6379 ...

Prints ``<listen spec> <bound address>:<port>`` per route, then ``ready``; runs until killed.
A connection is forwarded as bytes, both ways; when either side ends it, both are closed,
so a server that drops a client (PostgreSQL ending an idle transaction) is seen as such.
"""

import asyncio
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def _forward(target_host: str, target_port: int, reader, writer) -> None:
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection(target_host, target_port)
    except OSError:
        writer.close()
        return
    await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))


async def serve(routes: list[str]) -> None:
    servers = []
    for route in routes:
        listen, target = route.split("=")
        listen_host, listen_port = listen.rsplit(":", 1)
        target_host, target_port = target.rsplit(":", 1)
        server = await asyncio.start_server(
            lambda r, w, h=target_host, p=int(target_port): _forward(h, p, r, w),
            listen_host,
            int(listen_port),
        )
        servers.append(server)
        bound = server.sockets[0].getsockname()
        print(f"{route} {bound[0]}:{bound[1]}", flush=True)
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1:]))
