"""`--metrics HOST:PORT`: Prometheus metrics served while a run lasts, read with prometheus_client's
own text parser, against LocalStack (a toxiproxy bandwidth limit makes a run last long enough to be
scraped half-way, whatever the machine's speed): counters that rise during the run and end equal to
its summary, summed over worker processes and Dask tasks; a port in use is one line and exit 2."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, Run, write_tree
from daskprocs import wait_for
from toxiproxy import started

Samples = dict[tuple[str, frozenset], float]


@pytest.fixture(scope="module")
def toxiproxy(tmp_path_factory):
    server = started(tmp_path_factory)
    yield server
    server.stop()


def scrape(url: str) -> Samples:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=30) as resp:
        text = resp.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


class Running:
    """`python -m s3bulk ARGS --json --metrics :0 --metrics-linger 120` started in the background:
    the metrics URL it names on stderr, its stdout's JSON lines as they come."""

    def __init__(self, args: list[str], state_home: str) -> None:
        env = dict(os.environ, XDG_STATE_HOME=state_home)
        self.proc = subprocess.Popen([sys.executable, "-m", "s3bulk", *args, "--json", "--metrics", ":0",
                                      "--metrics-linger", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, cwd=ROOT, env=env)
        self.out: list[str] = []
        self.err: list[str] = []
        self.url = ""
        for line in self.proc.stderr:  # type: ignore[union-attr]
            self.err.append(line)
            if "metrics at " in line:
                self.url = line.split("metrics at ", 1)[1].strip()
                break
        assert self.url, "".join(self.err)
        self._readers = [threading.Thread(target=self._read, args=(f, into), daemon=True)
                         for f, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for t in self._readers:
            t.start()

    @staticmethod
    def _read(f, into: list[str]) -> None:
        for line in f:
            into.append(line)

    def summary(self) -> dict:
        """The summary line, once written (the server lingers until it is scraped after that)."""
        wait_for("the summary line", lambda: any('"summary"' in line for line in self.out)
                 or self.proc.poll() is not None)
        return Run(subprocess.CompletedProcess([], 0, "".join(self.out), "")).summary

    def end(self) -> int:
        code = self.proc.wait(timeout=120)
        for t in self._readers:
            t.join(timeout=10)
        return code


def assert_equal_to_summary(samples: Samples, summary: dict) -> None:
    assert value(samples, "s3bulk_objects_total", outcome="copied") == summary["copied"]
    assert value(samples, "s3bulk_object_bytes_total", outcome="copied") == summary["copied_bytes"]
    assert value(samples, "s3bulk_objects_total", outcome="skipped") == summary["skipped"]
    assert value(samples, "s3bulk_objects_total", outcome="failed") == summary["failed"]
    assert value(samples, "s3bulk_listed_keys_total") == summary["listed"]
    assert value(samples, "s3bulk_retries_total") == summary["retries"]
    served = {(dict(labels)["operation"], dict(labels)["status"]): n
              for (name, labels), n in samples.items() if name == "s3bulk_requests_total" and n}
    assert served == {(op, status): n for op, by in summary["requests"].items() for status, n in by.items()}


def test_counters_rise_during_a_run_and_end_equal_to_its_summary(toxiproxy, endpoint, bucket, state_home,
                                                                 tmp_path):
    """Four 128 KiB uploads one at a time through a 128 KB/s link: about a second each, so a scrape
    finds some copied and some not, then more, then the summary's counts."""
    url = toxiproxy.proxy("metrics", endpoint)
    toxiproxy.toxic("metrics", "bandwidth", "upstream", rate=128)
    tree = {f"f{i}": os.urandom(128 * 1024) for i in range(4)}
    write_tree(tmp_path / "src", tree)
    run = Running(["copy", str(tmp_path / "src"), f"s3://{bucket}/m/", "-w", "1", "-c", "1",
                   "--endpoint-url", url], state_home)
    seen: list[float] = []

    def half_way() -> bool:
        seen.append(value(scrape(run.url), "s3bulk_objects_total", outcome="copied"))
        return 0 < seen[-1] < len(tree)

    wait_for("some objects copied, not all", half_way)
    first = seen[-1]
    mid = scrape(run.url)
    assert value(mid, "s3bulk_requests_total", operation="PUT", status="2xx") >= first
    assert value(mid, "s3bulk_listed_keys_total") == len(tree)
    polled: list[Samples] = []

    def more() -> bool:
        polled.append(scrape(run.url))
        return value(polled[-1], "s3bulk_objects_total", outcome="copied") > first

    wait_for("more copied", more)
    summary = run.summary()
    try:
        final = scrape(run.url)
    except OSError:  # the server is gone: the last poll came after the run's end and read the final counts
        final = polled[-1]
    assert run.end() == 0, "".join(run.err)
    assert summary["copied"] == len(tree)
    assert_equal_to_summary(final, summary)
    assert summary["requests"]["PUT"] == {"2xx": len(tree)}
    assert value(final, "s3bulk_transfers_in_flight") == 0
    assert value(final, "s3bulk_memory_budget_limit_bytes") > 0


@pytest.mark.parametrize("how", [["-w", "2"], ["--cluster", "local:2"]], ids=["workers", "cluster"])
def test_the_counts_of_two_workers_or_cluster_tasks_are_summed(how, endpoint, bucket, state_home, tmp_path):
    """40 objects in pages of 10 over two worker processes (or Dask tasks): every PUT is counted once."""
    tree = {f"d/{i:02d}": os.urandom(100 + i) for i in range(40)}
    write_tree(tmp_path / "src", tree)
    run = Running(["copy", str(tmp_path / "src"), f"s3://{bucket}/w/", "--page-size", "10", *how,
                   "--endpoint-url", endpoint], state_home)
    summary = run.summary()
    final = scrape(run.url)
    assert run.end() == 0, "".join(run.err)
    assert summary["copied"] == len(tree) and summary["workers"] == 2, summary
    assert summary["requests"]["PUT"] == {"2xx": len(tree)}
    assert_equal_to_summary(final, summary)
    assert value(final, "s3bulk_units_done_total") >= 4  # pages of 10: at least 4 units


def test_a_port_in_use_is_one_line_and_exit_2(cli, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        (tmp_path / "src").mkdir()
        for argv in (["copy", str(tmp_path / "src"), str(tmp_path / "dst")], ["rm", str(tmp_path / "src")]):
            run = cli(*argv, "--metrics", f"127.0.0.1:{port}")
            assert run.code == 2, run
            assert run.err.strip().splitlines() == [
                f"s3bulk: error: --metrics 127.0.0.1:{port}: cannot listen there (Address already in use)"], run
    bad = cli("copy", str(tmp_path / "src"), str(tmp_path / "dst"), "--metrics", "nowhere")
    assert bad.code == 2 and len(bad.err.strip().splitlines()) == 1, bad


@pytest.mark.unit
def test_the_grafana_dashboard_asks_only_for_metrics_s3bulk_serves():
    """docs/guides/s3bulk-grafana.json names no metric a run does not serve (a rename breaks it)."""
    import re

    from s3bulk.cli.metrics import MetricsServer

    from s3bulk.model import Counters

    served = MetricsServer("127.0.0.1:0", "copy")
    served.progress(Counters(done=1, requests={("PUT", "2xx"): 1}))  # labelled series exist once counted
    try:
        names = {name for name, _ in scrape(served.url)}
    finally:
        served.close()
    dashboard = (ROOT / "docs" / "guides" / "s3bulk-grafana.json").read_text()
    asked = set(re.findall(r"\b(s3bulk_\w+)", dashboard))
    assert asked and asked <= names, asked - names


@pytest.mark.unit
def test_sync_watch_status_and_successive_runs_feed_the_metrics():
    """What `sync --watch` hands its subscriber: WatchStatus (lag, changes handled since the watch
    began, the feed's depth) and, sync after sync, Progress whose counts start again from zero;
    the counters go on across the syncs."""
    from s3bulk.cli.metrics import MetricsServer
    from s3bulk.engine.events import Progress, Subscriber, WatchStatus
    from s3bulk.model import Counters

    served = MetricsServer("127.0.0.1:0", "sync")
    relay = served.relay(Subscriber())
    try:
        relay.notify(Progress(Counters(done=3, done_bytes=30), True, 1.0, 1))
        relay.notify(WatchStatus(2.5, 3, 7))
        relay.notify(Progress(Counters(done=1, done_bytes=10), True, 0.2, 1))  # the next sync
        relay.notify(WatchStatus(0.0, 4, None))
        samples = scrape(served.url)
    finally:
        served.close()
    assert value(samples, "s3bulk_objects_total", outcome="copied") == 4
    assert value(samples, "s3bulk_object_bytes_total", outcome="copied") == 40
    assert value(samples, "s3bulk_watch_lag_seconds") == 0.0
    assert value(samples, "s3bulk_watch_changes_handled_total") == 4
    assert value(samples, "s3bulk_watch_queue_depth") == 7  # not told since: as last told


def test_rm_serves_its_deletes_and_requests(s3, endpoint, bucket, state_home):
    for i in range(5):
        s3.put_object(Bucket=bucket, Key=f"tmp/{i}", Body=b"x")
    run = Running(["rm", f"s3://{bucket}/tmp/", "--endpoint-url", endpoint], state_home)
    summary = run.summary()
    final = scrape(run.url)
    assert run.end() == 0, "".join(run.err)
    assert summary["deleted"] == 5
    assert value(final, "s3bulk_objects_total", outcome="deleted") == 5
    assert value(final, "s3bulk_listed_keys_total") == 5
    assert value(final, "s3bulk_requests_total", operation="DELETE", status="2xx") == 1
    assert summary["requests"]["DELETE"] == {"2xx": 1}
