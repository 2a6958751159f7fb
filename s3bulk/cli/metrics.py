"""`--metrics HOST:PORT`: the run's counts as Prometheus metrics at http://HOST:PORT/metrics.

The exposition is the official `prometheus_client`'s, on a registry of the run's own (no process
or platform collectors), imported only when --metrics is given: every other start-up stays
without it. Metric names are documented in docs/guides/metrics.md.

Nothing here counts anything. The coordinator already adds up what every worker process or
cluster task reports (their aggregated Counters, a few a second, never a message per object or
request) and hands the sums to its subscriber as Progress events; `MetricsRelay` is one more
subscriber that moves each Prometheus counter up by the change since the last event (a
Prometheus counter only goes up) and sets the gauges. The last Progress of a run carries the
summary's counts, so the final values served are the summary's. `rm` hands its counts the same way
(`MetricsServer.progress`), and `sync --watch` its WatchStatus events.

The server runs on threads of its own (wsgiref, as prometheus_client's start_http_server does)
while the run lasts; `close(linger)` keeps it up after the run until one scrape has read the final
counts, at most `linger` seconds (--metrics-linger), so a short run's end is not lost between two
scrapes.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from typing import Any, Callable, Iterable, Iterator

from ..engine.events import Progress, Relay, Subscriber, WatchStatus
from ..errors import UsageError
from ..model import Counters

# outcome label -> (objects, bytes) read from a run's Counters (None: no byte count for it)
OUTCOMES: dict[str, Callable[[Counters], tuple[int, int | None]]] = {
    "copied": lambda c: (c.done, c.done_bytes),
    "skipped": lambda c: (c.skipped, c.skipped_bytes),
    "deleted": lambda c: (c.deleted, None),
    "failed": lambda c: (c.failed, None),
}


def parse_address(spec: str) -> tuple[str, int]:
    """HOST:PORT, [IPV6]:PORT or :PORT (host 127.0.0.1) -> (host, port); a UsageError otherwise."""
    host, sep, port = spec.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--metrics {spec!r}: expected HOST:PORT or :PORT (e.g. 127.0.0.1:9100)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "127.0.0.1", int(port)


class MetricsServer:
    """The registry, its metrics, and the HTTP server that serves them (started by __init__: a
    port in use is a UsageError, before the run begins)."""

    def __init__(self, spec: str, command: str) -> None:
        host, port = parse_address(spec)
        from prometheus_client import CollectorRegistry, Counter, Gauge, disable_created_metrics

        disable_created_metrics()  # no *_created series: a run's start is s3bulk_start_time_seconds
        r = self.registry = CollectorRegistry()
        self.objects = Counter("s3bulk_objects", "Objects by outcome: copied, skipped (sync: unchanged), deleted, "
                               "failed (a dry run or check: what a real run would copy and delete)",
                               ["outcome"], registry=r)
        self.bytes = Counter("s3bulk_object_bytes", "Bytes of the objects copied or skipped", ["outcome"],
                             registry=r)
        self.requests = Counter("s3bulk_requests", "Requests sent by operation and status class "
                                "(2xx, 3xx, 4xx, 5xx, error: no answer)", ["operation", "status"], registry=r)
        self.retries = Counter("s3bulk_retries", "Requests tried again (throttling, 5xx, dropped connections)",
                               registry=r)
        self.throttled = Counter("s3bulk_throttled_requests", "Answers asking to slow down (503 SlowDown, 429)",
                                 registry=r)
        self.listed = Counter("s3bulk_listed_keys", "Keys listed at SRC", registry=r)
        self.units = Counter("s3bulk_units_done", "Work units (key ranges) finished", registry=r)
        self.in_flight = Gauge("s3bulk_transfers_in_flight", "Objects being transferred now", registry=r)
        self.buffer_used = Gauge("s3bulk_memory_budget_used_bytes", "Bytes of object bodies held in memory now",
                                 registry=r)
        self.buffer_limit = Gauge("s3bulk_memory_budget_limit_bytes", "What the workers may hold (--max-buffer)",
                                  registry=r)
        self.concurrency = Gauge("s3bulk_request_concurrency", "Requests allowed in flight (AIMD)", registry=r)
        self.workers = Gauge("s3bulk_workers", "Workers of the run", registry=r)
        self.listing_done = Gauge("s3bulk_listing_done", "1 once SRC is listed to the end", registry=r)
        self.started = Gauge("s3bulk_start_time_seconds", "When the run began (Unix time)", ["command"],
                             registry=r)
        self.watch_lag = Gauge("s3bulk_watch_lag_seconds", "sync --watch: seconds since the oldest change not "
                               "yet landed at DST", registry=r)
        self.watch_handled = Counter("s3bulk_watch_changes_handled", "sync --watch: changes landed", registry=r)
        self.watch_queue = Gauge("s3bulk_watch_queue_depth", "sync --watch: changes waiting at the feed",
                                 registry=r)
        self.started.labels(command).set(time.time())
        self._last: dict[Any, float] = {}  # this run's totals as last served (new_run() forgets them)
        self._handled = 0  # sync --watch: changes handled as last served
        self._ended = False
        self._scraped = threading.Event()
        self._server = _bind(host, port, self._app())
        self.port = self._server.server_address[1]
        self.url = f"http://{_url_host(host)}:{self.port}/metrics"
        self._thread = threading.Thread(target=self._server.serve_forever, name="s3bulk-metrics", daemon=True)
        self._thread.start()

    # --- what a run tells ---------------------------------------------------------------------
    def progress(self, c: Counters, listing_done: bool = False, workers: int | None = None) -> None:
        """The run's sums so far: counters go up by what changed, gauges are set."""
        for outcome, read in OUTCOMES.items():
            n, nbytes = read(c)
            self._up(self.objects, (outcome,), n)
            if nbytes is not None:
                self._up(self.bytes, (outcome,), nbytes)
        for (op, status), n in list(c.requests.items()):
            self._up(self.requests, (op, status), n)
        self._up(self.retries, (), c.retries)
        self._up(self.throttled, (), c.throttled)
        self._up(self.listed, (), c.listed)
        self._up(self.units, (), c.units)
        self.in_flight.set(c.in_flight)
        self.buffer_used.set(c.buffer_bytes)
        self.buffer_limit.set(c.buffer_limit)
        self.concurrency.set(c.concurrency)
        self.listing_done.set(1 if listing_done else 0)
        if workers is not None:
            self.workers.set(workers)

    def watch(self, event: WatchStatus) -> None:
        """`sync --watch`'s status: `handled` counts from the watch's start, across its syncs."""
        self.watch_lag.set(event.lag)
        if event.handled > self._handled:
            self.watch_handled.inc(event.handled - self._handled)
            self._handled = event.handled
        if event.queue_depth is not None:
            self.watch_queue.set(event.queue_depth)

    def new_run(self) -> None:
        """The next counts are a new run's, from zero (`sync --watch` runs one sync after another):
        the counters go on from where they are."""
        self._last = {}

    def _up(self, metric: Any, labels: tuple[str, ...], total: float) -> None:
        """Move a counter up to this run's `total`."""
        key = (metric, labels)
        delta = total - self._last.get(key, 0)
        if delta > 0:
            (metric.labels(*labels) if labels else metric).inc(delta)
            self._last[key] = total
        elif labels and key not in self._last:
            metric.labels(*labels)  # the series exists from the start, at 0
            self._last[key] = 0

    def relay(self, then: Subscriber) -> Subscriber:
        """A subscriber that feeds these metrics, then passes every event on to `then`."""
        return MetricsRelay(self, then)

    # --- serving ------------------------------------------------------------------------------
    def _app(self) -> Callable[..., Iterable[bytes]]:
        from prometheus_client import make_wsgi_app

        inner = make_wsgi_app(self.registry)

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            if environ.get("PATH_INFO") != "/metrics":
                start_response("404 Not Found", [("Content-Type", "text/plain")])
                return [b"metrics are at /metrics\n"]
            ended = self._ended  # read before the registry: this scrape sees the final counts
            body = inner(environ, start_response)
            return _Sent(body, self._scraped) if ended else body

        return app

    def close(self, linger: float = 0.0) -> None:
        """Stop serving; with `linger`, first wait until a scrape has read the final counts (at
        most that many seconds)."""
        self._ended = True
        if linger > 0:
            self._scraped.wait(linger)
        self._server.shutdown()
        self._server.server_close()


class _Sent:
    """A final scrape's body that tells `sent` once the server has written all of it (WSGI calls
    close() after the last byte): closing the server earlier cut the answer short."""

    def __init__(self, body: Iterable[bytes], sent: threading.Event) -> None:
        self.body = body
        self.sent = sent

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.body)

    def close(self) -> None:
        self.sent.set()


class MetricsRelay(Relay):
    """The run's subscriber for --metrics: Progress and WatchStatus feed the metrics; every event
    goes on to the renderer."""

    def __init__(self, server: MetricsServer, then: Subscriber) -> None:
        super().__init__(then)
        self.server = server
        self._elapsed = -1.0

    def on_progress(self, event: Progress) -> None:
        if event.elapsed < self._elapsed:  # the clock of a new run (sync --watch's next sync)
            self.server.new_run()
        self._elapsed = event.elapsed
        self.server.progress(event.counters, event.listing_done, event.workers)

    def on_watch_status(self, event: WatchStatus) -> None:
        self.server.watch(event)


def serve_metrics(spec: str | None, command: str, *, quiet: bool = False) -> MetricsServer | None:
    """The server for --metrics SPEC (None without it); says where it serves on stderr unless quiet."""
    if spec is None:
        return None
    server = MetricsServer(spec, command)
    if not quiet:
        print(f"s3bulk: metrics at {server.url}", file=sys.stderr, flush=True)
    return server


def _bind(host: str, port: int, app: Callable[..., Iterable[bytes]]) -> Any:
    """A threading WSGI server bound to host:port (IPv4 or IPv6 as the host resolves); a port in
    use or a host that is not this machine's is a UsageError."""
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as exc:
        raise UsageError(f"--metrics {host}:{port}: unknown host ({exc.strerror})") from None

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True
        address_family = family

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass  # no line per scrape on stderr

    try:
        return make_server(host, port, app, Server, handler_class=Quiet)
    except OSError as exc:
        raise UsageError(f"--metrics {_url_host(host)}:{port}: cannot listen there "
                         f"({exc.strerror or exc})") from None


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
