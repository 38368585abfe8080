#!/usr/bin/env python3
"""A TCP proxy on 127.0.0.1 that holds every byte DELAY milliseconds in each direction, so a loopback
connection gets 2 x DELAY of round-trip time without limiting throughput (this kernel has no netem).

    scripts/delay-proxy.py --target 127.0.0.1:8080 --delay-ms 10 [--port 0] [--port-file F]

Each direction is a reader that stamps chunks with their arrival time and a writer that sends each chunk
once its time has come; a bounded queue (64 MiB in flight per direction) keeps memory bounded.
"""
import argparse, asyncio, socket, time

CHUNK = 256 << 10
QUEUE_CHUNKS = 256

async def pump(reader, writer, delay):
    queue = asyncio.Queue(QUEUE_CHUNKS)

    async def read_side():
        try:
            while True:
                data = await reader.read(CHUNK)
                await queue.put((time.monotonic() + delay, data))
                if not data:
                    return
        except (ConnectionError, OSError):
            await queue.put((time.monotonic(), b""))

    async def write_side():
        try:
            while True:
                due, data = await queue.get()
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass

    await asyncio.gather(read_side(), write_side())

async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--delay-ms", type=float, default=10)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file")
    args = parser.parse_args()
    host, port = args.target.rsplit(":", 1)
    delay = args.delay_ms / 1000

    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            client_writer.close()
            return
        for w in (client_writer, server_writer):
            w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.gather(pump(client_reader, server_writer, delay), pump(server_reader, client_writer, delay))
        for w in (client_writer, server_writer):
            w.close()

    server = await asyncio.start_server(handle, "127.0.0.1", args.port)
    bound = server.sockets[0].getsockname()[1]
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(bound))
        import os
        os.rename(args.port_file + ".tmp", args.port_file)
    else:
        print(bound, flush=True)
    async with server:
        await server.serve_forever()

asyncio.run(main())
