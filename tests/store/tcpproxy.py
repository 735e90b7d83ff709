"""A TCP proxy for fault injection: ``python -m tests.store.tcpproxy LISTEN TARGET`` forwards
127.0.0.1:LISTEN to 127.0.0.1:TARGET until it is killed. Killing it (SIGKILL) cuts every
connection mid-request and refuses new ones until it is started again on the same port: to a
client, a server restart (without the data loss of restarting moto, whose state is in
memory). :class:`Proxy` runs one."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time


async def _pipe(reader, writer) -> None:
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


async def _serve(listen: int, target: int) -> None:
    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            _pipe(client_reader, server_writer),
            _pipe(server_reader, client_writer),
            return_exceptions=True,
        )

    server = await asyncio.start_server(handle, "127.0.0.1", listen, reuse_address=True)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proxy:
    """127.0.0.1:<port> forwarding to ``target`` (a port), in a child process."""

    def __init__(self, target: int):
        self.target = target
        self.port = free_port()
        self.proc = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Proxy:
        for _ in range(100):  # the port may linger a moment after a kill
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.store.tcpproxy", str(self.port), str(self.target)],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            if self.proc.stdout.readline().strip() == "ready":
                return self
            self.proc.wait()
            time.sleep(0.05)
        raise RuntimeError(f"the proxy could not listen on port {self.port}")

    def kill(self) -> None:
        """SIGKILL: every connection through it is cut."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self, downtime: float) -> None:
        self.kill()
        time.sleep(downtime)
        self.start()


if __name__ == "__main__":
    asyncio.run(_serve(int(sys.argv[1]), int(sys.argv[2])))
