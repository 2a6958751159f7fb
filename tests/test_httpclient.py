"""The lean HTTP client (s3bulk/http/client.py) against a real asyncio server on loopback that
misbehaves on purpose: interim 1xx answers, chunked bodies split at awkward places, early closes,
garbage, slow trickles and stalls. Timeouts are limits on silence: a trickle that outlasts the
timeout many times over succeeds, a stall fails with the typed timeout. No clock races: a trickle
sends a byte every 0.2 s against a timeout of 1.5 s, and stalls are waited for with 30 s deadlines."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from email.utils import formatdate
import time
from typing import AsyncIterator, Awaitable, Callable

import pytest

from s3bulk.http.client import (ConnectError, ConnectTimeout, ConnectionDropped, DroppedBeforeAnswer,
                                DroppedMidAnswer, HttpClient, HttpError, ProtocolError, ReadTimeout, TLSError,
                                WriteTimeout, retry_after)
from s3bulk.stores.reading import read_all

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
DEADLINE = 30.0  # generous: only a broken client takes this long


async def read_request(reader: asyncio.StreamReader, *, body: bool = True) -> tuple[str, bytes]:
    """The request line and (unless body=False) the body of the next request."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    length = 0
    for line in head.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    data = await reader.readexactly(length) if body and length else b""
    return head.split("\r\n", 1)[0], data


@contextlib.asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[tuple[int, list[asyncio.StreamWriter]]]:
    """A loopback server running handler per connection; yields (port, connections seen)."""
    conns: list[asyncio.StreamWriter] = []

    async def on_conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conns.append(writer)
        try:
            await handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(on_conn, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], conns
    finally:
        server.close()
        for w in conns:
            w.close()


def run(coro: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 120))  # type: ignore[arg-type]


async def request(port: int, *args, timeout: float = 30.0, **kw):
    client = HttpClient("127.0.0.1", port, timeout=timeout)
    try:
        return await asyncio.wait_for(client.request(*args, **kw), DEADLINE)
    finally:
        await client.close()


# ---------------------------------------------------------------- framing


def test_interim_answers_are_skipped_before_the_final_one():
    async def handler(reader, writer):
        while True:
            await read_request(reader)
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await writer.drain()
            writer.write(b"HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n")
            await writer.drain()
            writer.write(b"\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"e\"\r\n\r\nhello")
            await writer.drain()

    async def main():
        async with serving(handler) as (port, conns):
            client = HttpClient("127.0.0.1", port)
            for _ in range(3):
                resp = await asyncio.wait_for(client.request("PUT", "/k", {}, b"data"), DEADLINE)
                assert (resp.status, bytes(resp.body), resp.headers["etag"]) == (200, b"hello", '"e"')
            await client.close()
            assert len(conns) == 1  # the connection stayed usable after each interim answer
    run(main())


def test_chunked_bodies_split_anywhere_with_extensions_and_trailers():
    big = bytes(range(256)) * 1000  # 256,000 bytes in uneven chunks
    pieces = [big[i:i + 70001] for i in range(0, len(big), 70001)]
    wire = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\nX-Trailer: t\r\n\r\n"

    async def handler(reader, writer):
        while True:
            line, _ = await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            data = b"5\r\nhello\r\n0\r\n\r\n" if line.startswith("GET /small") else wire
            for i in range(0, len(data), 7777):  # boundaries fall inside sizes, data and CRLFs
                writer.write(data[i:i + 7777])
                await writer.drain()

    async def main():
        async with serving(handler) as (port, conns):
            client = HttpClient("127.0.0.1", port)
            resp = await asyncio.wait_for(client.request("GET", "/big"), DEADLINE)
            assert resp.status == 200 and bytes(resp.body) == big
            resp = await asyncio.wait_for(client.request("GET", "/small"), DEADLINE)
            assert bytes(resp.body) == b"hello"
            await client.close()
            assert len(conns) == 1
    run(main())


def test_connection_close_answers_are_not_reused_and_close_delimited_bodies_arrive_whole():
    async def handler(reader, writer):
        line, _ = await read_request(reader)
        if line.startswith("GET /eof"):
            writer.write(b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 100_000)  # no length: ends with the connection
        else:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()
        # keep this connection open: only the client's reading of Connection: close may retire it
        await reader.read() if not line.startswith("GET /eof") else None

    async def main():
        async with serving(handler) as (port, conns):
            client = HttpClient("127.0.0.1", port)
            for _ in range(2):
                resp = await asyncio.wait_for(client.request("GET", "/close"), DEADLINE)
                assert bytes(resp.body) == b"ok"
            resp = await asyncio.wait_for(client.request("GET", "/eof"), DEADLINE)
            assert bytes(resp.body) == b"x" * 100_000
            await client.close()
            assert len(conns) == 3  # one connection per answer
    run(main())


def test_bytes_on_an_idle_connection_retire_it():
    """A server may send something (a 408) on an idle connection: it is not the next answer."""
    first = [True]

    async def handler(reader, writer):
        if first[0]:  # the first connection answers once, then sends a 408 it was not asked for
            first[0] = False
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none")
            await writer.drain()
            await asyncio.sleep(0.1)
            writer.write(b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
        while True:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo")

    async def main():
        async with serving(handler) as (port, conns):
            client = HttpClient("127.0.0.1", port)
            assert bytes((await asyncio.wait_for(client.request("GET", "/1"), DEADLINE)).body) == b"one"
            idle = client._idle[0]
            deadline = time.monotonic() + DEADLINE
            while idle.rx < 70 and time.monotonic() < deadline:  # wait until the 408 has arrived
                await asyncio.sleep(0.02)
            resp = await asyncio.wait_for(client.request("GET", "/2"), DEADLINE)
            assert (resp.status, bytes(resp.body)) == (200, b"two")
            await client.close()
    run(main())


@pytest.mark.parametrize("answer", [
    b"garbage that is not http at all\r\n\r\n",
    b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 1_0\r\n\r\n0123456789",
    b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
    b"HTTP/1.1 200 OK\r\nNo colon here\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc",
    b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
])
def test_malformed_answers_are_protocol_errors(answer):
    async def handler(reader, writer):
        await read_request(reader)
        writer.write(answer)
        await writer.drain()
        await reader.read()  # leave the closing to the client

    async def main():
        async with serving(handler) as (port, _):
            with pytest.raises(ProtocolError):
                await request(port, "GET", "/x")
    run(main())


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 0\r\n\r\n",  # no space in a field name
    b"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 0\r\n\r\n",  # no NUL in a value
    # a bare LF is not a line end: read as one, the second Content-Length would frame the answer
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX: a\nContent-Length: 0\r\n\r\nok",
])
def test_heads_a_lenient_parser_would_take_are_protocol_errors(answer):
    """Heads the hand-written parser let through (llhttp refuses them, as RFC 9112 says to): the
    shapes request smuggling is made of, never from a server we should trust."""
    async def handler(reader, writer):
        await read_request(reader)
        writer.write(answer)
        await writer.drain()
        await reader.read()

    async def main():
        async with serving(handler) as (port, _):
            with pytest.raises(ProtocolError):
                await request(port, "GET", "/x")
    run(main())


# ---------------------------------------------------------------- dropped connections


def test_a_close_mid_body_is_a_drop_mid_answer():
    async def handler(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"a" * 100)
        await writer.drain()

    async def main():
        async with serving(handler) as (port, _):
            with pytest.raises(DroppedMidAnswer) as info:
                await request(port, "GET", "/x")
            assert info.value.received == 100
    run(main())


def test_a_close_before_any_answer_is_a_drop_before_answer():
    async def handler(reader, writer):
        await read_request(reader)

    async def main():
        async with serving(handler) as (port, _):
            with pytest.raises(DroppedBeforeAnswer):
                await request(port, "GET", "/x")
    run(main())


def test_connect_refused_and_tls_failure_are_connect_errors():
    async def main():
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        with pytest.raises(ConnectError) as info:
            await request(port, "GET", "/x")
        assert not isinstance(info.value, (ConnectTimeout, TLSError))

        async def plain(reader, writer):  # answers the TLS hello with plain HTTP
            await reader.read(100)
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()

        async with serving(plain) as (port, _):
            client = HttpClient("127.0.0.1", port, tls=ssl.create_default_context())
            with pytest.raises(TLSError):
                await asyncio.wait_for(client.request("GET", "/x"), DEADLINE)
            await client.close()
    run(main())


# ---------------------------------------------------------------- timeouts are limits on silence


def test_a_slow_trickle_longer_than_the_timeout_succeeds():
    body = b"0123456789abcdefghij"  # a byte every 0.2 s: 4 s in all, against a 1.5 s timeout

    async def handler(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
        for i in range(len(body)):
            await asyncio.sleep(0.2)
            writer.write(body[i:i + 1])
            await writer.drain()

    async def main():
        async with serving(handler) as (port, _):
            resp = await request(port, "GET", "/slow", timeout=1.5)
            assert bytes(resp.body) == body
    run(main())


def test_a_stall_mid_body_raises_read_timeout():
    async def handler(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"a" * 5000)
        await writer.drain()
        await reader.read()  # silent until the client gives up

    async def main():
        async with serving(handler) as (port, _):
            with pytest.raises(ReadTimeout):
                await request(port, "GET", "/x", timeout=0.5)
    run(main())


def test_a_server_that_never_answers_raises_read_timeout():
    async def handler(reader, writer):
        await read_request(reader)
        await reader.read()

    async def main():
        async with serving(handler) as (port, _):
            with pytest.raises(ReadTimeout):
                await request(port, "PUT", "/x", body=b"small", timeout=0.5)
    run(main())


def test_a_slowly_read_upload_longer_than_the_timeout_succeeds():
    size = 6 * 1024 * 1024  # socket buffers hold some; the rest is taken 128 KiB every 0.05 s

    async def handler(reader, writer):
        _, _ = await read_request(reader, body=False)
        got = 0
        while got < size:
            got += len(await reader.read(min(128 * 1024, size - got)))
            await asyncio.sleep(0.05)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        await reader.read()

    async def main():
        async with serving(handler) as (port, _):
            resp = await request(port, "PUT", "/x", body=bytes(size), timeout=1.0)
            assert resp.status == 200  # the server's pace alone makes this take 2.4 s or more
    run(main())


def test_an_upload_the_server_stops_taking_raises_write_timeout():
    async def handler(reader, writer):
        await read_request(reader, body=False)
        await asyncio.sleep(DEADLINE)  # never reads the body

    async def main():
        async with serving(handler) as (port, _):
            with pytest.raises(WriteTimeout):
                await request(port, "PUT", "/x", body=bytes(64 * 1024 * 1024), timeout=1.0)
    run(main())


# ---------------------------------------------------------------- the error tree


def test_every_failure_is_an_http_error_and_retry_after_is_read():
    for cls in (ConnectError, ConnectTimeout, TLSError, ReadTimeout, WriteTimeout, ConnectionDropped,
                DroppedBeforeAnswer, DroppedMidAnswer, ProtocolError):
        assert issubclass(cls, HttpError)
    assert retry_after({"retry-after": "7"}) == 7.0
    later = retry_after({"retry-after": formatdate(time.time() + 120, usegmt=True)})
    assert later is not None and 60 < later <= 121
    assert retry_after({"retry-after": "soon"}) is None and retry_after({}) is None


def test_transport_failures_map_to_store_errors_by_type():
    import s3bulk.errors as errors  # (`from s3bulk import errors` recurses in s3bulk.__getattr__ when not yet imported)
    from s3bulk.http.client import DroppedBeforeAnswer as Before, Timeout

    cases = [(ConnectError("refused"), errors.ConnectFailed), (ConnectTimeout("slow"), errors.ConnectFailed),
             (TLSError("handshake"), errors.ConnectFailed), (ReadTimeout("quiet"), errors.Transient),
             (WriteTimeout("stuck"), errors.Transient), (Before("reset"), errors.Transient),
             (DroppedMidAnswer("cut", received=5), errors.Corrupt), (ProtocolError("junk"), errors.Transient)]
    for exc, kind in cases:
        mapped = errors.from_transport(exc, op="get", url="s3://b/k", key="k")
        assert type(mapped) is kind and mapped.retryable, (exc, mapped)
        assert (mapped.op, mapped.key) == ("get", "k")
    untrusted = errors.from_transport(TLSError("bad cert", certificate=True), op="get", url="u")
    assert not untrusted.retryable and "AWS_CA_BUNDLE" in str(untrusted)
    assert issubclass(ReadTimeout, Timeout)


def test_retry_after_of_a_503_is_waited_for_before_the_retry():
    """Through the list/get store and the retrying wrapper every store gets: the retry of a 503
    with Retry-After: 1 comes no sooner than a second later (backoff alone would be ~1 ms)."""
    from s3bulk.stores.listget import ListGetStore
    from s3bulk.stores.resilient import ResilienceOptions, wrap
    from s3bulk.config.urls import parse_location

    seen: list[float] = []

    async def handler(reader, writer):
        while True:
            await read_request(reader)
            seen.append(time.monotonic())
            if len(seen) == 1:
                writer.write(b"HTTP/1.1 503 Slow Down\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n")
            else:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndata")
            await writer.drain()

    async def main():
        async with serving(handler) as (port, _):
            store = wrap(ListGetStore(parse_location(f"http://127.0.0.1:{port}/")),
                         ResilienceOptions(backoff_base=0.001, adaptive=False))
            try:
                assert await asyncio.wait_for(read_all(store, "a"), DEADLINE) == b"data"
            finally:
                await store.close()
            assert store.stats.retries == 1 and store.stats.throttled == 1
            assert seen[1] - seen[0] >= 0.9
    run(main())


# ---------------------------------------------------------------- proxies


def test_plain_http_goes_to_the_proxy_in_absolute_form_with_its_credentials():
    seen: list[str] = []

    async def proxy(reader, writer):  # answers as the origin would, after the proxy hop
        while True:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            seen.append(head)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    async def main():
        async with serving(proxy) as (port, conns):
            client = HttpClient("origin.example", 8080, proxy=f"http://us%40er:p%3Ass@127.0.0.1:{port}")
            for _ in range(2):
                assert bytes((await asyncio.wait_for(client.request("GET", "/b/k?x=1"), DEADLINE)).body) == b"ok"
            await client.close()
            assert len(conns) == 1
        import base64

        want = "Proxy-Authorization: Basic " + base64.b64encode(b"us@er:p:ss").decode()
        for head in seen:
            assert head.startswith("GET http://origin.example:8080/b/k?x=1 HTTP/1.1\r\n")
            assert "\r\nHost: origin.example:8080\r\n" in head and want in head
    run(main())


def _self_signed(tmp_path) -> tuple[str, str]:
    import shutil
    import subprocess

    if not shutil.which("openssl"):
        pytest.skip("openssl is not installed: no certificate for the TLS origin")
    cert, key = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                   check=True, capture_output=True)
    return cert, key


def test_https_goes_through_a_connect_tunnel(tmp_path):
    cert, key = _self_signed(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    connects: list[str] = []

    async def origin(reader, writer):
        while True:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret")

    async def main():
        server = await asyncio.start_server(origin, "127.0.0.1", 0, ssl=server_tls)
        origin_port = server.sockets[0].getsockname()[1]

        async def proxy(reader, writer):
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            connects.append(head)
            up_r, up_w = await asyncio.open_connection("127.0.0.1", origin_port)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

            async def pipe(r, w):
                while data := await r.read(65536):
                    w.write(data)
                    await w.drain()
                w.close()
            await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer), return_exceptions=True)

        async with serving(proxy) as (port, _):
            client = HttpClient("localhost", origin_port, tls=ssl.create_default_context(cafile=cert),
                                proxy=f"127.0.0.1:{port}")
            for _ in range(2):
                assert bytes((await asyncio.wait_for(client.request("GET", "/k"), DEADLINE)).body) == b"secret"
            await client.close()
        server.close()
        assert len(connects) == 1  # one tunnel, kept alive
        assert connects[0].startswith(f"CONNECT localhost:{origin_port} HTTP/1.1\r\n")
        assert "Proxy-Authorization" not in connects[0]
    run(main())


def test_a_proxy_refusing_connect_is_a_proxy_error():
    from s3bulk.http.client import ProxyError
    import s3bulk.errors as errors

    async def proxy(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        await reader.read()

    async def main():
        async with serving(proxy) as (port, _):
            client = HttpClient("localhost", 443, tls=ssl.create_default_context(), proxy=f"http://127.0.0.1:{port}")
            with pytest.raises(ProxyError) as info:
                await asyncio.wait_for(client.request("GET", "/k"), DEADLINE)
            await client.close()
        assert info.value.status == 407
        mapped = errors.from_transport(info.value, op="get", url="s3://b/k")
        assert isinstance(mapped, errors.AccessDenied) and not mapped.retryable
    run(main())


@pytest.mark.parametrize("env", [
    {"HTTP_PROXY": "http://p:3128"},
    {"http_proxy": "p:3128", "HTTPS_PROXY": "https://u:pw@sp:443"},
    {"HTTP_PROXY": "//p:3128", "NO_PROXY": "127.0.0.1,.example.com"},
    {"https_proxy": "http://p:3128", "no_proxy": "*"},
    {"ALL_PROXY": "http://p:3128"},
    {},
])
def test_the_proxy_is_the_one_botocore_picks(env, monkeypatch):
    from botocore.httpsession import ProxyConfiguration
    from botocore.utils import get_environ_proxies

    from s3bulk.http.client import proxy_for

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for url in ("http://127.0.0.1:4566/b/k", "https://b.s3.us-east-1.amazonaws.com/k", "http://files.example.com/k",
                "https://localhost:9000/b/k"):
        botocore_picks = ProxyConfiguration(proxies=get_environ_proxies(url)).proxy_url_for(url)
        assert proxy_for(url) == botocore_picks, (env, url)


# ---------------------------------------------------------------- overall limits (--request-deadline, --retry-max-time)


def _listget(port: int, **opts):
    from s3bulk.stores.listget import ListGetStore
    from s3bulk.stores.resilient import ResilienceOptions, wrap
    from s3bulk.config.urls import parse_location

    return wrap(ListGetStore(parse_location(f"http://127.0.0.1:{port}/"), timeout=30.0),
                ResilienceOptions(backoff_base=0.001, adaptive=False, **opts))


def test_a_request_deadline_cuts_off_a_trickle_that_never_ends():
    """A byte every 0.05 s forever: never silent (the 30 s silence timeout cannot fire), so only the
    0.3 s deadline ends each attempt; with one retry the read fails naming the option."""
    attempts: list[int] = []

    async def handler(reader, writer):
        while True:
            await read_request(reader)
            attempts.append(1)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
            while True:
                writer.write(b"x")
                await writer.drain()
                await asyncio.sleep(0.05)

    async def main():
        import s3bulk.errors as errors

        async with serving(handler) as (port, _):
            store = _listget(port, retries=1, request_deadline=0.3, retry_max_time=0)
            try:
                with pytest.raises(errors.Transient, match="--request-deadline") as info:
                    await asyncio.wait_for(read_all(store, "k"), DEADLINE)
            finally:
                await store.close()
            assert info.value.op == "get" and info.value.key == "k"
            assert store.stats.retries == 1
        assert attempts  # (the retry's arrival at the server is not awaited: no count asserted)
    run(main())


def test_retry_max_time_ends_a_request_retried_without_end():
    """A server that answers 500 forever, with retries unbounded in count (10,000): only
    --retry-max-time ends it, with the last error's class and a reason saying why."""
    answers: list[int] = []

    async def handler(reader, writer):
        while True:
            await read_request(reader)
            answers.append(1)
            writer.write(b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()

    async def main():
        import s3bulk.errors as errors

        async with serving(handler) as (port, _):
            store = _listget(port, retries=10_000, retry_max_time=0.5)
            try:
                with pytest.raises(errors.Transient, match="gave up after .* --retry-max-time 0.5 s") as info:
                    await asyncio.wait_for(read_all(store, "k"), DEADLINE)
            finally:
                await store.close()
            assert "500" in str(info.value) and info.value.key == "k"
        assert 1 <= len(answers) < 10_000  # (how many fit in 0.5 s depends on the machine's load)
    run(main())


def test_a_file_body_is_streamed_intact_to_a_slow_reader(tmp_path):
    """A FileBody (a range of a local file) goes out chunk by chunk as the server takes it: the
    server, reading 128 KiB at a time with pauses, gets exactly the range's bytes."""
    from s3bulk.stores.files.bodies import FileBody

    data = bytes(range(256)) * (24 * 1024)  # 6 MiB
    path = tmp_path / "f"
    path.write_bytes(b"head" + data + b"tail")
    got = bytearray()

    async def handler(reader, writer):
        _, _ = await read_request(reader, body=False)
        while len(got) < len(data):
            got.extend(await reader.read(min(128 * 1024, len(data) - len(got))))
            await asyncio.sleep(0.005)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        await reader.read()

    async def main():
        async with serving(handler) as (port, _):
            body = FileBody(str(path), 4, 4 + len(data))
            resp = await request(port, "PUT", "/x", body=body, timeout=5.0)
            assert resp.status == 200
        assert bytes(got) == data
    run(main())
