"""`--report FILE`: the per-object record an operator keeps of a job, and `check --against-report`.

Through the real CLI (and the API) against LocalStack and local directories: a copy's report names
every object with its size and source ETag (CSV and JSON Lines), a sync's names the unchanged
objects `skipped`, mv's `moved`, rm's `deleted`, a key that cannot be copied `failed` with its error;
a copy SIGKILLed mid-way and resumed into the same report ends naming every object once with its
final outcome (also when the kill fell between an object's landing and its row); and a report read
back by `check --against-report` passes, then fails once an object at DST changed or went.
"""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from conftest import ROOT, put_tree, write_tree
from faultproxy import FaultProxy


def rows(path: Path) -> list[dict]:
    if path.suffix == ".csv":
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    return [json.loads(line) for line in path.read_text().splitlines()]


def last_by(rows_: list[dict], column: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for r in rows_:
        out[r[column]] = r
    return out


def test_copy_reports_csv_and_jsonl(cli, s3, bucket, make_bucket, tmp_path):
    tree = {f"d/f{i:02d}": b"x" * (100 + i) for i in range(30)}
    put_tree(s3, bucket, tree)
    etags = {c["Key"]: c["ETag"].strip('"') for c in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    dst = make_bucket()
    report = tmp_path / "r.csv"
    r = cli("copy", f"s3://{bucket}/d/", f"s3://{dst}/d/", "--report", str(report), "-w", "2")
    assert r.code == 0, r
    assert report.read_text().splitlines()[0] == "outcome,src,version_id,dst,size,etag,checksum,error"
    got = rows(report)
    assert len(got) == 30 and {x["outcome"] for x in got} == {"copied"}
    for x in got:
        key = x["src"].removeprefix(f"s3://{bucket}/")
        assert x["dst"] == f"s3://{dst}/{key}" and int(x["size"]) == len(tree[key]) and x["etag"] == etags[key]
        assert x["error"] == ""
    assert "copy: s3://" not in r.out, "a report does not make the display print a line per object"

    jsonl = tmp_path / "r.jsonl"
    r = cli("copy", f"s3://{bucket}/d/", str(tmp_path / "local"), "--report", str(jsonl), "--json")
    assert r.code == 0, r
    got = rows(jsonl)
    assert sorted(x["src"] for x in got) == sorted(f"s3://{bucket}/{k}" for k in tree)
    assert all(x["outcome"] == "copied" and x["size"] == len(tree[x["src"].split("/", 3)[3]])
               and x["dst"].startswith(str(tmp_path / "local")) for x in got)
    assert not [e for e in r.events if e["event"] == "copied"], "--json without -v prints no copied events"

    r = cli("copy", f"s3://{bucket}/d/", str(tmp_path / "x"), "--report", str(tmp_path / "r.txt"))
    assert r.code == 2 and "must end in .csv" in r.err and len(r.err.strip().splitlines()) == 1, r
    assert not (tmp_path / "x").exists() and not (tmp_path / "r.txt").exists()
    # inside a local DST a sync --delete would delete it, a copy from there would copy it as it grows
    r = cli("sync", f"s3://{bucket}/d/", str(tmp_path / "local"), "--report", str(tmp_path / "local" / "r.csv"))
    assert r.code == 2 and "outside SRC and DST" in r.err and not (tmp_path / "local" / "r.csv").exists(), r


def test_sync_report_names_unchanged_copied_and_deleted(cli, s3, bucket, tmp_path):
    src = tmp_path / "src"
    write_tree(src, {f"f{i}": f"body {i}".encode() for i in range(10)})
    assert cli("sync", str(src), f"s3://{bucket}/").code == 0
    (src / "f3").write_bytes(b"a longer body now")
    (src / "new").write_bytes(b"new")
    (src / "f7").unlink()
    report = tmp_path / "sync.jsonl"
    r = cli("sync", str(src), f"s3://{bucket}/", "--delete", "--report", str(report))
    assert r.code == 0, r
    got = rows(report)
    outcome = {(x["src"] or x["dst"]).rsplit("/", 1)[-1]: x["outcome"] for x in got}
    assert len(got) == len(outcome) == 11, got
    assert outcome == {**{f"f{i}": "skipped" for i in range(10) if i not in (3, 7)},
                       "f3": "copied", "new": "copied", "f7": "deleted"}, outcome
    skipped = next(x for x in got if x["outcome"] == "skipped")
    assert skipped["size"] == 6 and skipped["dst"].startswith(f"s3://{bucket}/")

    # the API writes the same report; compared by content, a row keeps the checksum that proved it
    import hashlib

    import s3bulk

    api_report = tmp_path / "api.csv"
    summary = s3bulk.sync(str(src), f"s3://{bucket}/", compare="checksum", report=str(api_report),
                          dst_s3=s3bulk.S3Options(endpoint_url=s3.meta.endpoint_url))
    assert summary.ok
    got = rows(api_report)
    assert Counter(x["outcome"] for x in got) == {"skipped": 10}
    for x in got:
        assert x["checksum"] == "etag:" + hashlib.md5(Path(x["src"]).read_bytes()).hexdigest(), x


def test_mv_rm_and_failed_reports(cli, s3, bucket, tmp_path):
    tree = {f"m/k{i}": f"v{i}".encode() for i in range(8)}
    put_tree(s3, bucket, tree)
    report = tmp_path / "mv.csv"
    r = cli("mv", f"s3://{bucket}/m/", str(tmp_path / "out"), "--report", str(report))
    assert r.code == 0, r
    got = rows(report)
    assert sorted(x["src"] for x in got) == sorted(f"s3://{bucket}/{k}" for k in tree)
    assert {x["outcome"] for x in got} == {"moved"} and all(x["size"] == "2" for x in got)
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket, Prefix="m/")

    put_tree(s3, bucket, {f"r/k{i}": b"x" for i in range(5)})
    report = tmp_path / "rm.jsonl"
    r = cli("rm", f"s3://{bucket}/r/", "--report", str(report))
    assert r.code == 0, r
    assert sorted((x["outcome"], x["dst"]) for x in rows(report)) == \
        [("deleted", f"s3://{bucket}/r/k{i}") for i in range(5)]

    # a key the source does not have: a failed row with its error, beside the copied ones
    put_tree(s3, bucket, {"f/a": b"a", "f/b": b"b"})
    keys = tmp_path / "keys.txt"
    keys.write_text("a\ngone\nb\n")
    report = tmp_path / "failed.csv"
    r = cli("copy", f"s3://{bucket}/f/", str(tmp_path / "f"), "--files-from", str(keys), "--report", str(report))
    assert r.code == 1, r
    got = last_by(rows(report), "src")
    assert {k.rsplit("/", 1)[-1]: v["outcome"] for k, v in got.items()} == \
        {"a": "copied", "b": "copied", "gone": "failed"}, got
    assert got[f"s3://{bucket}/f/gone"]["error"], got


class _CountPuts:
    """A proxy rule counting PUTs per key: which objects were really sent twice."""

    def __init__(self, bucket: str) -> None:
        self.pattern = re.compile(rf"/{bucket}/([^?]+)")
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, method: str, target: str, headers: dict[str, str]) -> None:
        m = self.pattern.match(target)
        if method == "PUT" and m:
            with self.lock:
                self.counts[unquote(m.group(1))] += 1
        return None


def _wait(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _done_in_object_logs(journal: Path) -> set[str]:
    """Keys the killed run logged as landed inside pages it had not journaled done (a page's log
    can outlive the commit that recorded it by a moment: those keys are not in the window)."""
    with sqlite3.connect(journal) as db:
        ranges = db.execute("SELECT after, until FROM ranges").fetchall()
    found: set[str] = set()
    d = Path(str(journal) + ".d")
    for f in d.glob("*.keys") if d.exists() else ():
        for line in f.read_bytes().splitlines():
            try:
                key = json.loads(line)[0]
            except (ValueError, IndexError):
                continue
            if not any((a is None or a < key) and (u is None or key <= u) for a, u in ranges):
                found.add(key)
    return found


def test_report_after_sigkill_and_resume_names_every_object(endpoint, s3, bucket, tmp_path):
    """Killed (SIGKILL, the whole process group) once some units are journaled done, then resumed
    with --resume and the same --report: every object is named once, `copied` with its size (an
    object sent twice was in flight, unlogged and unreported, when the kill came). The kill's window (an object landed and in
    its page's log, its row not yet written) is made certain by cutting those rows off the report."""
    src = tmp_path / "src"
    bodies = {f"d{i % 5}/f{i:04d}": os.urandom(100 + i % 37) for i in range(500)}
    write_tree(src, bodies)
    journal, report = tmp_path / "j.sqlite", tmp_path / "r.jsonl"
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
    host, port = urlsplit(endpoint).hostname, urlsplit(endpoint).port
    puts = _CountPuts(bucket)
    with FaultProxy(host, port, [puts]) as proxy:
        args = [sys.executable, "-m", "s3bulk", "copy", str(src), f"s3://{bucket}/", "-w", "2", "-c", "4",
                "--page-size", "20", "--endpoint-url", proxy.url, "--journal", str(journal),
                "--report", str(report), "--max-rps", "150", "-q"]
        proc = subprocess.Popen(args, cwd=ROOT, env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def units_done() -> int:
            try:
                with sqlite3.connect(journal) as db:
                    return db.execute("SELECT count(*) FROM ranges").fetchone()[0]
            except sqlite3.Error:
                return 0

        _wait(lambda: units_done() > 0 and sum(puts.counts.values()) >= 120 or proc.poll() is not None, 120,
              "units journaled done")
        assert proc.poll() is None, "the run ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert 0 < len(rows(report)) < len(bodies), "the killed run wrote whole rows, not all of them"
        # the window: objects logged as landed whose rows the kill cut off
        logged = {str(src / k) for k in _done_in_object_logs(journal)}
        kept = [line for line in report.read_text().splitlines(keepends=True)
                if json.loads(line)["src"] not in logged]
        report.write_text("".join(kept))
        final = subprocess.run([*args[:-1], "--resume", "--json"], cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=300)
        assert final.returncode == 0, final.stdout[-3000:] + final.stderr[-3000:]
    got = rows(report)
    by_src = Counter(x["src"] for x in got)
    assert set(by_src) == {str(src / k) for k in bodies}, "every object of the job is named"
    last = last_by(got, "src")
    for key, body in bodies.items():
        row = last[str(src / key)]
        assert row["outcome"] == "copied" and row["size"] == len(body) and row["dst"] == f"s3://{bucket}/{key}"
        # rows come after an object's landing is logged, and a logged object is not sent again: once
        assert by_src[str(src / key)] == 1, f"{key}: {by_src[str(src / key)]} rows, {puts.counts[key]} PUTs"
    print(f"report after kill + resume: {len(got)} rows for {len(bodies)} objects, {len(logged)} rows restored "
          f"from the journal, {sum(1 for n in puts.counts.values() if n > 1)} objects PUT twice")


def test_check_against_report(cli, s3, bucket, make_bucket, tmp_path):
    tree = {f"p/k{i:02d}": f"content {i:02d}".encode() for i in range(20)}
    put_tree(s3, bucket, tree)
    dst = make_bucket()
    report = tmp_path / "r.csv"
    assert cli("copy", f"s3://{bucket}/p/", f"s3://{dst}/p/", "--report", str(report)).code == 0
    r = cli("check", "--against-report", str(report), f"s3://{dst}/p/")
    assert r.code == 0 and "20 as recorded" in r.err, r

    # check's own report: one row per key, `same` for each
    check_report = tmp_path / "check.jsonl"
    r = cli("check", f"s3://{bucket}/p/", f"s3://{dst}/p/", "--report", str(check_report))
    assert r.code == 0 and Counter(x["outcome"] for x in rows(check_report)) == {"same": 20}, r

    s3.put_object(Bucket=dst, Key="p/k03", Body=b"CONTENT 03")  # same size, other bytes: its MD5 ETag
    s3.delete_object(Bucket=dst, Key="p/k05")
    s3.put_object(Bucket=dst, Key="p/k07", Body=b"longer content 07")
    r = cli("check", "--against-report", str(report), f"s3://{dst}/p/", "--json")
    assert r.code == 1, r
    diffs = sorted((e["kind"], e["dst"].rsplit("/", 1)[-1]) for e in r.events if e["event"] == "difference")
    assert diffs == [("differs", "k03"), ("differs", "k07"), ("only-in-src", "k05")], diffs
    assert r.summary["missing"] == 1 and r.summary["differs"] == 2 and r.summary["same"] == 17

    import s3bulk

    class Seen(s3bulk.Subscriber):
        def __init__(self) -> None:
            self.kinds: list[str] = []

        def on_difference(self, event: s3bulk.Difference) -> None:
            self.kinds.append(event.kind)

    seen = Seen()
    result = s3bulk.check_report(str(report), f"s3://{dst}/p/", s3=s3bulk.S3Options(endpoint_url=s3.meta.endpoint_url),
                                 subscriber=seen)
    assert not result.ok and (result.checked, result.same) == (20, 17)
    assert sorted(seen.kinds) == ["differs", "differs", "only-in-src"]

    r = cli("check", f"s3://{bucket}/p/", f"s3://{dst}/p/", "--report", str(check_report), "--checksum")
    assert r.code == 1
    assert {x["src"].rsplit("/", 1)[-1]: x["outcome"] for x in rows(check_report)
            if x["outcome"] != "same"} == {"k03": "differs", "k05": "missing", "k07": "differs"}
    r = cli("check", "--against-report", str(report), f"s3://{bucket}/other/")
    assert r.code == 2 and "not under DST" in r.err and len(r.err.strip().splitlines()) == 1, r


@pytest.mark.unit
def test_a_resumed_report_drops_a_torn_last_line_and_keeps_whole_rows(tmp_path):
    """A last line cut short (a power cut in the middle of a write) is dropped when --resume opens the
    report again, so the rows the resumed run adds each start on a line of their own."""
    from s3bulk.engine.report import ReportWriter

    for name in ("r.csv", "r.jsonl"):
        path = tmp_path / name
        with ReportWriter(str(path), "copy") as w:
            w.row("copied", "s3://b/a", "/d/a", 1, "e1")
        with open(path, "ab") as f:
            f.write(b'copied,s3://b/b,,/d/' if name.endswith(".csv") else b'{"outcome": "copied", "src": "s3://b/')
        with ReportWriter(str(path), "copy", resume=True) as w:
            w.row("failed", "s3://b/c", "/d/c", error="AccessDenied: no")
        got = rows(path)
        assert [(x["outcome"], x["src"]) for x in got] == [("copied", "s3://b/a"), ("failed", "s3://b/c")], got
        with ReportWriter(str(path), "copy") as w:  # a fresh run starts the report over
            pass
        assert rows(path) == []
