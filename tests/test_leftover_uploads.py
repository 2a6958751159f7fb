"""No multipart upload is left open at the destination with nothing recording it (issue 24).

Two Ctrl-C (the second one a forced stop), one Ctrl-C, or a SIGKILL, at three moments of a multipart
upload to LocalStack: while CreateMultipartUpload is in flight (a FaultProxy gate holds its answer
back until the stop was sent, so the upload exists at the server before s3bulk hears of it), while parts are being sent
(--max-bandwidth), and during a server-side copy in parts (UploadPartCopy through the store's own
upload, whose id the engine never sees). With a journal, every upload left open is recorded and
`--resume` completes or aborts it: none is open afterwards. Without one, the stop aborts them
itself (one Ctrl-C too, which keeps an upload open only for a journal): none is open when the run
has exited. And `s3bulk rm --incomplete-uploads` finds and aborts the uploads open under a prefix."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from conftest import ROOT
from faultproxy import Gate

SIZE = 20 * 1024 * 1024


def _open_uploads(s3, bucket: str) -> list[dict]:
    return s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])


def _parts(s3, bucket: str, upload: dict) -> int:
    return len(s3.list_parts(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"]).get("Parts", []))


def _wait(condition, what: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"the run ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.05)


@pytest.mark.parametrize("moment, journaled, workers, stop", [
    ("creating", True, "1", "ctrl-c twice"), ("creating", True, "2", "ctrl-c twice"),
    ("creating", False, "2", "ctrl-c twice"), ("creating", True, "2", "sigkill"),
    ("sending", True, "2", "ctrl-c twice"), ("sending", False, "2", "ctrl-c twice"), ("sending", False, "2", "ctrl-c"),
    ("copying", True, "2", "ctrl-c twice"), ("copying", False, "2", "ctrl-c twice")])
def test_a_stop_leaves_no_upload_unrecorded(moment, journaled, workers, stop, endpoint, s3, bucket, make_bucket,
                                            make_fault_proxy, tmp_path, state_home):
    src = tmp_path / "src"
    src.mkdir()
    body = os.urandom(SIZE)
    (src / "big.bin").write_bytes(body)
    url, slow, source = endpoint, [], str(src)
    # CreateMultipartUpload's answer held until the stop was sent: the upload exists before s3bulk hears of it
    gate = Gate(lambda req: req.method == "POST" and "?uploads" in req.target and "uploadId=" not in req.target,
                answered=True)
    if moment in ("creating", "copying"):
        proxy = make_fault_proxy(endpoint)
        proxy.hostile = gate
        url = proxy.url
    else:  # one 5 MiB part every 2.5 s, two in flight at most (the others wait for memory)
        slow = ["--max-bandwidth", "2MiB", "--max-buffer", "10MiB"]
    if moment == "copying":  # a server-side copy in parts (UploadPartCopy), the store's own upload
        source = f"s3://{make_bucket()}/"
        s3.put_object(Bucket=source[5:-1], Key="big.bin", Body=body)
        slow = ["--copy-threshold", "5MiB", "--copy-part-size", "5MiB"]
    journal = tmp_path / "j.sqlite"
    args = ["copy", source, f"s3://{bucket}/", "--part-size", "5MiB", "-w", workers, "--endpoint-url", url,
            *slow, *(["--journal", str(journal)] if journaled else ["--no-journal"])]
    env = dict(os.environ, XDG_STATE_HOME=state_home)
    proc = subprocess.Popen([sys.executable, "-m", "s3bulk", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, start_new_session=True, env=env)
    try:
        held = None
        if moment in ("creating", "copying"):  # made at the server, its answer still on the way
            held = gate.wait_held(proc)
            assert _open_uploads(s3, bucket), "the held answer's upload is open at the server"
        else:
            _wait(lambda: any(_parts(s3, bucket, u) >= 1 for u in _open_uploads(s3, bucket)), "part landed", proc)
        os.killpg(proc.pid, signal.SIGKILL if stop == "sigkill" else signal.SIGINT)
        if stop == "ctrl-c twice":
            for line in proc.stderr:  # the graceful stop has begun...
                if line.startswith("s3bulk: stopping"):
                    break
            os.killpg(proc.pid, signal.SIGINT)  # ...and the second Ctrl-C makes it immediate
        if held is not None:
            held.set()  # the answer reaches s3bulk only now, stopping
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        gate.open()
    assert proc.returncode == (-signal.SIGKILL if stop == "sigkill" else 130), (proc.returncode, err)
    assert "Traceback" not in err, err
    if not journaled:  # nothing could resume them: the stop aborted them
        assert not _open_uploads(s3, bucket), "an upload left open that nothing records"
        return
    resumed = subprocess.run([sys.executable, "-m", "s3bulk", *args, "--resume"], capture_output=True, text=True,
                             cwd=ROOT, env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert s3.get_object(Bucket=bucket, Key="big.bin")["Body"].read() == body
    assert not _open_uploads(s3, bucket), "an upload left open that nothing recorded"


def test_rm_incomplete_uploads_lists_and_aborts_those_under_the_prefix(cli, s3, bucket):
    """Uploads a killed run left (made here with boto, as nothing recorded them): --dry-run lists
    those under the prefix and aborts none; the real run aborts exactly those; objects stay."""
    s3.put_object(Bucket=bucket, Key="in/keep.txt", Body=b"an object, not an upload")
    made = [(key, s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"])
            for key in ("in/a.bin", "in/a.bin", "in/sub/b.bin", "out/c.bin")]
    under, outside = set(made[:3]), made[3]

    def still_open() -> set[tuple[str, str]]:
        return {(u["Key"], u["UploadId"]) for u in _open_uploads(s3, bucket)}

    dry = cli("rm", "--incomplete-uploads", f"s3://{bucket}/in/", "--dry-run")
    assert dry.code == 0, dry
    assert sorted(dry.out.splitlines()) == sorted(f"(dryrun) abort: s3://{bucket}/{k}?uploadId={u}" for k, u in under)
    assert "would abort 3 incomplete uploads" in dry.err, dry
    assert still_open() == under | {outside}

    r = cli("rm", "--incomplete-uploads", f"s3://{bucket}/in/", "--json")
    assert r.code == 0, r
    aborted = {e["dst"] for e in r.events if e["event"] == "aborted"}
    assert aborted == {f"s3://{bucket}/{k}?uploadId={u}" for k, u in under}
    assert r.summary["aborted"] == 3 and r.summary["ok"] is True
    assert still_open() == {outside}
    assert s3.get_object(Bucket=bucket, Key="in/keep.txt")["Body"].read() == b"an object, not an upload"

    whole = cli("rm", "--incomplete-uploads", f"s3://{bucket}")
    assert whole.code == 2 and "--all" in whole.err and "Traceback" not in whole.err, whole
    assert cli("rm", "--incomplete-uploads", f"s3://{bucket}", "--all").code == 0
    assert not still_open()


class _CopyingStore:
    """A destination whose server-side copy in parts names its upload as S3's does
    (stores.base.COPY_UPLOAD_OPENED) once its CreateMultipartUpload answers (`answer` set), then
    copies parts forever; its listing of open uploads never answers (under load the listing came
    after a forced stop's deadline); aborts are recorded, ListParts says an aborted upload is gone."""

    def __init__(self) -> None:
        self.features = SimpleNamespace(server_side_copy=True, resumable_uploads=True)
        self.asked, self.answer = asyncio.Event(), asyncio.Event()
        self.aborted: list[tuple[str, str]] = []
        self.listings = 0

    def can_copy_from(self, src: object) -> bool:
        return True

    async def copy_from(self, src: object, src_key: str, dst_key: str, size: int, mtime: float | None = None,
                        **kwargs: object) -> None:
        from s3bulk.stores.base import COPY_UPLOAD_OPENED

        self.asked.set()
        await self.answer.wait()
        named = COPY_UPLOAD_OPENED.get()
        assert named is not None, "the transfer asked for no name of the copy's upload"
        named("u-1")
        await asyncio.Event().wait()  # UploadPartCopy requests in flight

    async def list_uploads(self, prefix: str, key_marker: object = None, upload_marker: object = None) -> object:
        self.listings += 1
        await asyncio.Event().wait()

    async def abort_multipart(self, key: str, upload_id: str) -> None:
        self.aborted.append((key, upload_id))

    async def list_parts(self, key: str, upload_id: str) -> list:
        from s3bulk.errors import NotFound

        raise NotFound("no such upload")


@pytest.mark.unit
def test_a_forced_stop_aborts_a_server_side_copys_upload_by_the_id_its_creation_answered():
    """A server-side copy in parts opens its own upload. A forced stop with no journal that comes
    while its CreateMultipartUpload is in flight waits for that answer and aborts the upload by its
    id, without listing the key's uploads: that listing, a request more, answered after the stop's
    deadline under load and the upload stayed open (here it never answers)."""
    from s3bulk.engine.run.open_uploads import OpenUploads
    from s3bulk.engine.transfer.notes import TransferListener
    from s3bulk.engine.transfer.ways import ServerSide
    from s3bulk.model import ObjectInfo

    async def run() -> None:
        sent: list[object] = []
        uploads = OpenUploads(0, sent.append, None, False)  # no journal: the stop must abort it

        class Listener(TransferListener):
            def on_upload(self, note) -> None:
                uploads.note(note)

        async def no_upload_left(*args: object) -> tuple[None, set[int]]:
            return None, set()

        dst = _CopyingStore()
        mover = SimpleNamespace(options=SimpleNamespace(copy_threshold=5), dst=dst, src=object(), no_clobber=False,
                                in_parts=SimpleNamespace(continue_upload=no_upload_left), listener=Listener(),
                                version_of=lambda info: None, dst_kind="memory")
        copy = asyncio.ensure_future(ServerSide(mover, dst, mover.src).move(ObjectInfo("big.bin", 20), "big.bin"))
        await dst.asked.wait()
        assert uploads.unrecorded() and uploads.ids == {"big.bin": None}
        loop = asyncio.get_running_loop()
        stop = asyncio.ensure_future(uploads.abort_all(dst, loop.time() + 2.0))
        dst.answer.set()  # the answer that was on its way when the stop came
        await stop
        copy.cancel()
        assert dst.aborted == [("big.bin", "u-1")] and dst.listings == 0

    asyncio.run(run())
