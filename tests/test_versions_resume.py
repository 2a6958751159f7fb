"""A versions copy is resumable (issue 16): `copy --all-versions` stopped mid-run by Ctrl-C lets
the versions in flight land, keeps its journal and says how to resume; `--resume` then writes only
the versions not yet copied, each key's history still in the source's order, none twice. Through
the real CLI against LocalStack, behind a FaultProxy gate that holds every PUT after the third
until the stop was sent, so the stop falls mid-run (the test waits on versions having landed and on
a held request, never on a clock). And a versions copy killed outright (SIGKILL) does
not write again the versions that had landed without their record."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from urllib.parse import urlsplit

from conftest import ROOT
from faultproxy import Gate

KEYS = ("p/a.txt", "p/b.txt", "p/c.txt")
VERSIONS = 4


def _versioned(s3, make_bucket) -> str:
    name = make_bucket()
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return name


def _history(s3, bucket: str, key: str) -> tuple[list[bytes], int]:
    """(bodies of the key's versions oldest first, delete markers)."""
    resp = s3.list_object_versions(Bucket=bucket, Prefix=key)
    versions = [v for v in resp.get("Versions", []) if v["Key"] == key]
    markers = [m for m in resp.get("DeleteMarkers", []) if m["Key"] == key]
    return [s3.get_object(Bucket=bucket, Key=key, VersionId=v["VersionId"])["Body"].read()
            for v in reversed(versions)], len(markers)


def _landed(s3, bucket: str) -> int:
    resp = s3.list_object_versions(Bucket=bucket)
    return len(resp.get("Versions", [])) + len(resp.get("DeleteMarkers", []))


def test_all_versions_copy_interrupted_then_resumed(s3, make_bucket, endpoint, make_fault_proxy, state_home,
                                                    tmp_path):
    src, dst = _versioned(s3, make_bucket), _versioned(s3, make_bucket)
    for i in range(VERSIONS):
        for key in KEYS:
            s3.put_object(Bucket=src, Key=key, Body=f"{key} v{i}".encode())
    s3.delete_object(Bucket=src, Key="p/b.txt")  # b's latest is a delete marker, replayed too
    total = len(KEYS) * VERSIONS + 1
    journal = tmp_path / "versions.sqlite"
    puts = []

    def after_the_third_put(req) -> bool:
        if req.method == "PUT":
            puts.append(req.target)
        return len(puts) > 3

    gate = Gate(after_the_third_put, holds=total)  # each held until the stop was sent
    proxy = make_fault_proxy(endpoint)
    proxy.hostile = gate
    argv = [sys.executable, "-m", "s3bulk", "copy", f"s3://{src}/p/", f"s3://{dst}/q/", "--all-versions",
            "--include-delete-markers", "--journal", str(journal), "--endpoint-url", proxy.url, "--json"]
    env = dict(os.environ, XDG_STATE_HOME=state_home)
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        gate.wait_held(first)
        deadline = time.monotonic() + 300
        while _landed(s3, dst) < 3 and first.poll() is None:
            assert time.monotonic() < deadline, "no versions landed"
            time.sleep(0.05)
        first.send_signal(signal.SIGINT)
        gate.open()  # the versions in flight land
        out, err = first.communicate(timeout=300)
    finally:
        gate.open()
        if first.poll() is None:
            first.kill()
    assert first.returncode == 130, (out, err)
    assert "resume with:" in err and "--resume" in err and journal.exists(), err
    summary = [json.loads(line) for line in out.splitlines() if '"summary"' in line][-1]
    assert summary["interrupted"] and not summary["ok"], summary
    landed = _landed(s3, dst)
    assert 3 <= landed < total and summary["versions"] + summary["delete_markers"] == landed, (summary, landed)

    second = subprocess.run([*argv, "--resume"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert second.returncode == 0, second
    summary = [json.loads(line) for line in second.stdout.splitlines() if '"summary"' in line][-1]
    assert summary["resumed"] == landed, summary
    assert summary["versions"] + summary["delete_markers"] == total - landed, summary
    # each key's history at DST as at SRC: same bodies, same order, nothing written twice
    for key in KEYS:
        want = [f"{key} v{i}".encode() for i in range(VERSIONS)]
        assert _history(s3, dst, "q/" + key[2:]) == (want, 1 if key == "p/b.txt" else 0), key
    assert _landed(s3, dst) == total
    assert not journal.exists()  # a completed run leaves no journal


def test_resume_of_another_run_is_refused(cli, s3, make_bucket, endpoint, tmp_path):
    src, dst = _versioned(s3, make_bucket), _versioned(s3, make_bucket)
    s3.put_object(Bucket=src, Key="k", Body=b"1")
    journal = str(tmp_path / "j.sqlite")
    r = cli("copy", f"s3://{src}/", f"s3://{dst}/", "--all-versions", "--journal", journal, "--resume")
    assert r.code == 0 and "nothing to resume" in r.err, r
    # an interrupted run's journal kept, then resumed with another DST: one line, exit 2
    from s3bulk.engine.journal.versions import VersionsJournal, identity

    VersionsJournal.open(journal, identity(f"s3://{src}/", f"s3://{dst}/", endpoint, endpoint, include_delete_markers=False,
                                           as_of=None, filters=None), resume=False).close(complete=False)
    r = cli("copy", f"s3://{src}/", f"s3://{dst}/other/", "--all-versions", "--journal", journal, "--resume")
    assert r.code == 2 and "belongs to another run" in r.err and len(r.err.strip().splitlines()) == 1, r


def test_a_failed_version_holds_back_the_newer_ones_until_resume(cli, s3, make_bucket, fault_proxy, tmp_path):
    """A version that cannot be read ends its key's history for the run (the newer ones would
    land before it); the other keys are copied. --resume then writes it and the newer ones, in
    order, and nothing of the rest again."""
    from faultproxy import s3_error

    src, dst = _versioned(s3, make_bucket), _versioned(s3, make_bucket)
    ids = [s3.put_object(Bucket=src, Key="a", Body=f"a{i}".encode())["VersionId"] for i in range(3)]
    s3.put_object(Bucket=src, Key="b", Body=b"b0")

    def refuse_second(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if f"versionId={ids[1]}" in target:
            return s3_error(403, "Forbidden", "AccessDenied", "Access Denied", head_only=method == "HEAD")
        return None

    fault_proxy.rules.append(refuse_second)
    journal = str(tmp_path / "j.sqlite")
    args = ["copy", f"s3://{src}/", f"s3://{dst}/", "--all-versions", "--journal", journal,
            "--endpoint-url", fault_proxy.url]
    r = cli(*args, "--json")
    assert r.code == 1 and r.summary["failed"] == 1 and r.summary["held"] == 1, r
    assert _history(s3, dst, "a") == ([b"a0"], 0) and _history(s3, dst, "b") == ([b"b0"], 0)
    fault_proxy.rules.clear()
    r = cli(*args, "--resume", "--json")
    assert r.code == 0 and r.summary["versions"] == 2 and r.summary["resumed"] == 2, r
    assert _history(s3, dst, "a") == ([b"a0", b"a1", b"a2"], 0) and _history(s3, dst, "b") == ([b"b0"], 0)


def test_a_version_not_landed_is_written_on_resume_even_when_it_equals_the_one_before(cli, s3, make_bucket,
                                                                                     fault_proxy, tmp_path):
    """The check a resume makes at DST for a version that was being sent (see the SIGKILL test
    below) tells a version that did not land from an equal one before it that did: DST refuses
    the second of two equal versions, and --resume writes it (DST's answer for the first named the
    version it made, so a newer one is what would have been the second)."""
    from faultproxy import s3_error

    src, dst = _versioned(s3, make_bucket), _versioned(s3, make_bucket)
    for body in (b"same", b"same", b"last"):
        s3.put_object(Bucket=src, Key="k", Body=body)
    puts = []

    def refuse_second_put(method: str, target: str, headers: dict[str, str]) -> bytes | None:
        if method == "PUT" and target.split("?")[0] == f"/{dst}/k":
            puts.append(target)
            if len(puts) == 2:
                return s3_error(403, "Forbidden", "AccessDenied", "Access Denied")
        return None

    fault_proxy.rules.append(refuse_second_put)
    args = ["copy", f"s3://{src}/", f"s3://{dst}/", "--all-versions", "--journal", str(tmp_path / "j.sqlite"),
            "--endpoint-url", fault_proxy.url]
    r = cli(*args, "--json")
    assert r.code == 1 and r.summary["failed"] == 1 and r.summary["held"] == 1, r
    assert _history(s3, dst, "k") == ([b"same"], 0)
    fault_proxy.rules.clear()
    r = cli(*args, "--resume", "--json")
    assert r.code == 0 and r.summary["versions"] == 2 and r.summary["resumed"] == 1, r
    assert _history(s3, dst, "k") == ([b"same", b"same", b"last"], 0)


def test_a_version_landed_before_a_sigkill_is_not_written_again(s3, make_bucket, endpoint, make_fault_proxy,
                                                                 state_home, tmp_path):
    """SIGKILL while versions are in flight, each already written at DST but its answer held back
    (a FaultProxy gate holds the answer of every later version's PUT and of the big one's parts): those versions landed without their record. `--resume`
    asks DST about them and writes each source version exactly once: DST's history of every key is
    the source's, no version twice (two equal versions in a row included). A big version cut short
    in its multipart upload leaves no upload open either."""
    src, dst = _versioned(s3, make_bucket), _versioned(s3, make_bucket)
    bodies = {"a": [b"a0", b"a1", b"a2"], "b": [b"b0", b"b0", b"b1"], "c": [b"c-0", b"c-1", b"c-2"]}
    for i in range(3):
        for key, history in bodies.items():
            s3.put_object(Bucket=src, Key=key, Body=history[i])
    bodies["big"] = [os.urandom(6 * 1024 * 1024), os.urandom(6 * 1024 * 1024)]
    for body in bodies["big"]:
        s3.put_object(Bucket=src, Key="big", Body=body)
    written: set[str] = set()

    def a_later_version_or_a_part(req) -> bool:
        key = urlsplit(req.target).path.split("/", 2)[-1]
        if req.method != "PUT":
            return False
        if key == "big":
            return "partNumber=" in req.target
        first = key not in written
        written.add(key)
        return not first

    gate = Gate(a_later_version_or_a_part, holds=100, answered=True)  # answers held until the SIGKILL
    proxy = make_fault_proxy(endpoint)
    proxy.hostile = gate
    late = proxy.url
    journal = tmp_path / "versions.sqlite"
    argv = [sys.executable, "-m", "s3bulk", "copy", f"s3://{src}/", f"s3://{dst}/", "--all-versions",
            "--journal", str(journal), "--src-endpoint-url", endpoint, "--dst-endpoint-url", late, "--json",
            "--multipart-threshold", "5MiB", "--part-size", "5MiB"]
    env = dict(os.environ, XDG_STATE_HOME=state_home)

    def second_versions_landed() -> bool:  # a second version is at DST, its answer on the way, and big's upload open
        return (sum(len(h) for h in (_history(s3, dst, k)[0] for k in "abc")) >= 4
                and bool(s3.list_multipart_uploads(Bucket=dst).get("Uploads")))

    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not second_versions_landed():
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "no second versions landed"
            time.sleep(0.05)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(60)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
        gate.open()
    second = subprocess.run([*argv, "--resume"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert second.returncode == 0, second
    for key, history in bodies.items():
        assert _history(s3, dst, key) == (history, 0), key
    assert not s3.list_multipart_uploads(Bucket=dst).get("Uploads"), "an upload left open"
    assert not journal.exists()
