"""An aborted multipart upload stays aborted (issue 33, item 4).

A local file rewritten twice during its upload rightly fails (`source file changed during the
upload`, exit 1), but used to leave its 2 multipart uploads open: the abort went out while other
parts were still on their way, and a part reaching the server after the abort brought the upload
back (versitygw does this; AWS documents it: "it might be necessary to abort a given multipart
upload multiple times"). Now a failed part lets the parts in flight end before the abort
(stores/base.py PartTasks), and every abort is confirmed: ListParts must answer NoSuchUpload, else
the upload is aborted again with a growing wait (why_still_open). One still listed after every
try stays in the journal (the next run aborts it) and the summary names it. The same holds for
`rm --incomplete-uploads`.

Against real servers: versitygw (which brings uploads back) behind toxiproxy's 4 MB/s per
connection for the reproduction, and LocalStack behind tests/faultproxy.py, whose rule answers an
AbortMultipartUpload 204 without passing it on (a lost abort), for the confirmation. The file is
rewritten once a condition shows the upload under way (a part landed), never after a sleep."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator

import pytest

from conftest import ROOT, process_tree, stopped
from toxiproxy import started
from versitygw import started as versitygw_started

MiB = 1024 * 1024
LINE = "source file changed during the upload"
PATHS = ["lean", "botocore"]


@pytest.fixture(scope="module")
def versitygw(tmp_path_factory) -> Iterator[str]:
    """A versitygw S3 gateway on loopback (posix backend, the tests' credentials); its URL."""
    server = versitygw_started(tmp_path_factory, access="test", secret="test")
    yield server.url
    server.stop()


@pytest.fixture(scope="module")
def toxiproxy(tmp_path_factory):
    server = started(tmp_path_factory)
    yield server
    server.stop()


def _client(url: str):
    import botocore.session

    return botocore.session.get_session().create_client("s3", endpoint_url=url, region_name="us-east-1")


def _uploads(s3, bucket: str) -> list[dict]:
    return s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])


class Running:
    """One `s3bulk ... --json` run in the background, its output in files (never a full pipe)."""

    def __init__(self, args: list[str], tmp_path: Path, data_path: str) -> None:
        self.out_path, self.err_path = tmp_path / "out.jsonl", tmp_path / "err.txt"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "s3bulk", *args, "--json", "-w", "1"], stdout=out, stderr=err, cwd=ROOT,
                start_new_session=True,
                env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), S3BULK_DATA_PATH=data_path))

    def wait_for(self, condition: Callable[[], str | None], what: str, deadline: float = 120) -> str:
        """Until condition() gives a value; fails if the run ends first or the deadline passes."""
        end = time.monotonic() + deadline
        while True:
            found = condition()
            if found is not None:
                return found
            if self.proc.poll() is not None:
                pytest.fail(f"the run ended before {what}:\n{self.output()}")
            if time.monotonic() > end:
                self.proc.kill()
                pytest.fail(f"no {what} within {deadline} s:\n{self.output()}")
            time.sleep(0.02)

    def finish(self) -> int:
        try:
            return self.proc.wait(timeout=180)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            pytest.fail(f"the run did not end:\n{self.output()}")

    def output(self) -> str:
        return f"{self.out_path.read_text()[-3000:]}\n{self.err_path.read_text()[-3000:]}"


@pytest.mark.parametrize("data_path", PATHS)
def test_a_file_rewritten_twice_during_its_upload_leaves_no_upload_open(data_path, versitygw, toxiproxy,
                                                                        tmp_path):
    """The issue's reproduction, smaller: 64 MiB at 4 MB/s a connection with --max-buffer 16MiB
    (three 5 MiB parts in flight), rewritten once a part of the first upload landed and again once
    a part of the second (the restart's) landed. Before: exit 1 and 2 uploads still open."""
    s3 = _client(versitygw)
    bucket = f"t-{uuid.uuid4().hex[:20]}"
    s3.create_bucket(Bucket=bucket)
    name = f"vgw-{uuid.uuid4().hex[:8]}"
    url = toxiproxy.proxy(name, versitygw)
    toxiproxy.toxic(name, "bandwidth", "upstream", rate=4000)
    path = tmp_path / "f"
    path.write_bytes(os.urandom(64 * MiB))
    run = Running(["copy", str(path), f"s3://{bucket}/f", "--max-buffer", "16MiB", "--part-size", "5MiB",
                   "--endpoint-url", url], tmp_path, data_path)

    def part_landed(seen: set[str]) -> Callable[[], str | None]:
        def landed() -> str | None:
            for up in _uploads(s3, bucket):
                if up["UploadId"] not in seen and s3.list_parts(Bucket=bucket, Key="f",
                                                                UploadId=up["UploadId"]).get("Parts"):
                    return str(up["UploadId"])
            return None
        return landed

    seen: set[str] = set()
    for _ in range(2):
        seen.add(run.wait_for(part_landed(seen), "a part of a new upload landed"))
        with stopped(process_tree(run.proc.pid)):  # one change, seen whole by every read after it
            with open(path, "r+b") as f:
                f.write(os.urandom(MiB))
    assert run.finish() == 1, run.output()
    assert LINE in run.output()
    assert "Traceback" not in run.err_path.read_text()
    assert _uploads(s3, bucket) == [], "an aborted upload came back"


def _lost_aborts(times: int) -> Callable[[str, str, dict[str, str]], bytes | None]:
    """A faultproxy rule: the first `times` AbortMultipartUpload requests are answered 204 and never
    reach the server (`.count` counts them all, lost or passed on)."""
    def rule(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if method != "DELETE" or "uploadId=" not in target:
            return None
        rule.count += 1  # type: ignore[attr-defined]
        if rule.count > times:  # type: ignore[attr-defined]
            return None
        return b"HTTP/1.1 204 No Content\r\nx-amz-request-id: faultproxy\r\nConnection: close\r\n\r\n"
    rule.count = 0  # type: ignore[attr-defined]
    return rule


def _refused_part(number: int) -> Callable[[str, str, dict[str, str]], bytes | None]:
    """A faultproxy rule: UploadPart `number` is refused (400 InvalidPart: not retried), so the
    object fails and its upload is aborted."""
    from faultproxy import s3_error

    def rule(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if method == "PUT" and f"partNumber={number}&" in target + "&" and "uploadId=" in target:
            return s3_error(400, "Bad Request", "InvalidPart", "refused by the test")
        return None
    return rule


def _copy_args(path: Path, bucket: str, url: str) -> list[str]:
    return ["copy", str(path), f"s3://{bucket}/f", "--part-size", "5MiB", "--multipart-threshold", "5MiB",
            "--endpoint-url", url]


@pytest.mark.parametrize("data_path", PATHS)
def test_an_abort_the_server_did_not_do_is_sent_again_until_it_is_gone(data_path, make_fault_proxy, endpoint,
                                                                       s3, bucket, tmp_path):
    """The first abort is lost on its way (answered 204, never done): ListParts still lists the
    upload, so it is aborted again, and then it is gone. Before: one abort, the upload left open."""
    lost = _lost_aborts(1)
    proxy = make_fault_proxy(endpoint, [lost, _refused_part(2)])
    path = tmp_path / "f"
    path.write_bytes(os.urandom(15 * MiB))
    run = Running(_copy_args(path, bucket, proxy.url), tmp_path, data_path)
    assert run.finish() == 1, run.output()
    assert "InvalidPart" in run.output()
    assert _uploads(s3, bucket) == []
    assert lost.count == 2, lost.count


@pytest.mark.parametrize("data_path", PATHS)
def test_an_upload_that_stays_listed_is_named_kept_and_aborted_by_the_next_run(data_path, make_fault_proxy,
                                                                                endpoint, s3, bucket, tmp_path):
    """Every abort lost: after its tries the upload is named in one line (a failure event) and in
    the summary, and kept in the journal; the next run of the same command aborts it and copies."""
    lost = _lost_aborts(10**6)
    refused = _refused_part(2)
    proxy = make_fault_proxy(endpoint, [lost, refused])
    path = tmp_path / "f"
    data = os.urandom(15 * MiB)
    path.write_bytes(data)
    run = Running(_copy_args(path, bucket, proxy.url), tmp_path, data_path)
    assert run.finish() == 1, run.output()
    import json

    events = [json.loads(x) for x in run.out_path.read_text().splitlines() if x.startswith("{")]
    summary = events[-1]
    open_ups = [u["UploadId"] for u in _uploads(s3, bucket)]
    assert len(open_ups) == 1
    assert summary["open_uploads"] == [f"s3://{bucket}/f?uploadId={open_ups[0]}"], summary
    assert summary["journal"] is not None and os.path.exists(summary["journal"]), summary
    named = [e for e in events if e["event"] == "failure" and e["kind"] == "UploadLeftOpen"]
    assert [e["src"] for e in named] == summary["open_uploads"], events
    assert "kept in the journal" in named[0]["error"]
    assert "Traceback" not in run.err_path.read_text()

    proxy.rules.clear()  # the server takes aborts again
    again = Running(_copy_args(path, bucket, proxy.url), tmp_path, data_path)
    assert again.finish() == 0, again.output()
    assert _uploads(s3, bucket) == []
    assert s3.get_object(Bucket=bucket, Key="f")["Body"].read() == data


def test_rm_incomplete_uploads_aborts_again_an_upload_still_listed(cli, make_fault_proxy, endpoint, s3, bucket):
    """`rm --incomplete-uploads` confirms each abort too: the first is lost, the second done."""
    made = s3.create_multipart_upload(Bucket=bucket, Key="p/k")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="p/k", UploadId=made, PartNumber=1, Body=b"x" * 1000)
    lost = _lost_aborts(1)
    proxy = make_fault_proxy(endpoint, [lost])
    done = cli("rm", "--incomplete-uploads", f"s3://{bucket}/p/", "--endpoint-url", proxy.url)
    assert done.code == 0, done
    assert "aborted 1 incomplete upload" in done.err, done
    assert _uploads(s3, bucket) == []
    assert lost.count == 2, lost.count


def test_rm_incomplete_uploads_says_which_upload_stays_listed(cli, make_fault_proxy, endpoint, s3, bucket):
    """Every abort lost: not counted as aborted; one line names it, and the exit is 1."""
    made = s3.create_multipart_upload(Bucket=bucket, Key="p/k")["UploadId"]
    proxy = make_fault_proxy(endpoint, [_lost_aborts(10**6)])
    done = cli("rm", "--incomplete-uploads", f"s3://{bucket}/p/", "--endpoint-url", proxy.url)
    assert done.code == 1, done
    assert f"ERROR abort s3://{bucket}/p/k?uploadId={made}: still listed after 5 aborts" in done.err, done
    assert "Traceback" not in done.err
    assert [u["UploadId"] for u in _uploads(s3, bucket)] == [made]


@pytest.mark.parametrize("stop", ["ctrl-c", "ctrl-c twice"])
def test_a_stop_without_a_journal_confirms_its_aborts(stop, make_fault_proxy, endpoint, s3, bucket, tmp_path):
    """A stop with no journal to keep the upload aborts it (one Ctrl-C after the parts in flight
    ended, a second Ctrl-C at once): the first two aborts are lost on their way, and it is aborted
    again until it is gone. Before: one abort per path, the upload left open."""
    lost = _lost_aborts(2)
    proxy = make_fault_proxy(endpoint, [lost])
    path = tmp_path / "f"
    path.write_bytes(os.urandom(20 * MiB))
    run = Running(["copy", str(path), f"s3://{bucket}/f", "--part-size", "5MiB", "--max-bandwidth", "2MiB",
                   "--max-buffer", "10MiB", "--no-journal", "--endpoint-url", proxy.url], tmp_path, "lean")

    def part_landed() -> str | None:
        for up in _uploads(s3, bucket):
            if s3.list_parts(Bucket=bucket, Key="f", UploadId=up["UploadId"]).get("Parts"):
                return "yes"
        return None

    run.wait_for(part_landed, "a part landed")
    os.killpg(run.proc.pid, signal.SIGINT)
    if stop == "ctrl-c twice":
        run.wait_for(lambda: "yes" if "s3bulk: stopping" in run.err_path.read_text() else None, "the graceful stop")
        os.killpg(run.proc.pid, signal.SIGINT)
    assert run.finish() == 130, run.output()
    assert "Traceback" not in run.err_path.read_text()
    assert _uploads(s3, bucket) == []
    assert lost.count >= 3, lost.count


def test_part_tasks_let_requests_in_flight_end_and_cancel_the_rest():
    """What the tests above rely on, without a server: at a part's failure, a part inside its
    request (base.part_request) ends by itself, one waiting elsewhere is cancelled, the upload is
    halted, and the first error is raised; a part cancelled before it ever ran frees its room."""
    import asyncio

    from s3bulk.stores.base import PartTasks, part_request

    class Upload:
        halted = False

        def halt(self) -> None:
            self.halted = True

    async def main() -> None:
        upload = Upload()
        sending, finished, cancelled = asyncio.Event(), [], []
        release = asyncio.Event()

        async def in_request() -> None:
            with part_request():
                sending.set()
                await release.wait()  # the answer comes after the other part failed
            finished.append("sent")

        async def waiting() -> None:
            try:
                await asyncio.Event().wait()  # waiting for memory, say
            except asyncio.CancelledError:
                cancelled.append("waiting")
                raise

        async def failing() -> None:
            await sending.wait()
            raise ValueError("the source changed")

        async def never_started() -> None:  # pragma: no cover - cancelled before it runs
            finished.append("never")

        with pytest.raises(ValueError, match="the source changed"):
            async with PartTasks(upload) as tasks:
                tasks.start(in_request())
                tasks.start(waiting())
                tasks.start(failing())
                await tasks.room(lambda: 3)  # until one ends: the failure
                assert tasks.failed and upload.halted
                asyncio.get_running_loop().call_later(0.05, release.set)
        assert finished == ["sent"] and cancelled == ["waiting"]

        async with PartTasks(upload) as tasks:
            tasks.start(never_started())
            next(iter(tasks.tasks)).cancel()  # before it ran: its own `finally` would never run
            await asyncio.wait_for(tasks.room(lambda: 1), 30)
        assert "never" not in finished

    asyncio.run(main())
