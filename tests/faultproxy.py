"""A small HTTP proxy that sits in front of a real server (LocalStack) and injects faults.

It forwards each request to the upstream unchanged, one request per connection, unless a rule
says otherwise. Rules are callables `rule(method, target, headers) -> bytes | None`; the first
that returns bytes has those bytes sent back as the whole response instead (b"": the connection
is dropped without an answer).

Used by tests for what LocalStack cannot do by itself (it accepts any credentials); the
reliability work grows it into rates of 503/500/resets/stalls/short bodies.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Callable

Rule = Callable[[str, str, dict[str, str]], bytes | None]


def s3_error(status: int, reason: str, code: str, message: str) -> bytes:
    body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>").encode()
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    return head + body


def reject_access_key(access_key: str) -> Rule:
    """Answer 403 InvalidAccessKeyId to requests signed with `access_key`, as AWS does."""
    def rule(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if f"Credential={access_key}/" in headers.get("authorization", ""):
            return s3_error(403, "Forbidden", "InvalidAccessKeyId",
                            "The AWS Access Key Id you provided does not exist in our records.")
        return None
    return rule


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int, rules: list[Rule] | None = None) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.rules = rules or []
        self.requests = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.port = 0

    def __enter__(self) -> "FaultProxy":
        threading.Thread(target=self._run, daemon=True).start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
            self.requests += 1
            canned = next((r for r in (rule(method, target, headers) for rule in self.rules) if r is not None), None)
            if canned is not None:  # b"" means: drop the connection without an answer
                if canned:
                    writer.write(canned)
                    await writer.drain()
                return
            # one request per connection both ways: the upstream closes after answering
            kept = [line for line in lines[1:] if line and not line.lower().startswith("connection:")]
            up_head = "\r\n".join([lines[0], *kept, "Connection: close", "", ""]).encode("latin-1")
            up_r, up_w = await asyncio.open_connection(*self.upstream)
            up_w.write(up_head + body)
            await up_w.drain()
            resp = await up_r.read()
            up_w.close()
            resp_head, sep, resp_body = resp.partition(b"\r\n\r\n")
            writer.write(resp_head.replace(b"Connection: keep-alive", b"Connection: close") + sep + resp_body)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()
