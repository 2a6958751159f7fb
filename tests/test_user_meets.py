"""What a new user meets in the first hour (issue 15), through the real command line against
LocalStack: folder markers, a source that matches nothing, wildcards, the bundled LocalStack's
listening address, the README's getting-started commands, and the everyday polish of the CLI."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, bucket_tree, put_tree, read_tree, write_tree

W1 = ["--workers", "1"]


def _one_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one line, got:\n{text}"
    assert "Traceback" not in text
    return lines[0]


# ------------------------------------------------------------------ folder markers


def _console_folders(s3, bucket: str) -> None:
    """What the AWS console leaves: zero-byte "folder/" keys, some with files below them."""
    put_tree(s3, bucket, {"photos/": b"", "photos/a.jpg": b"jpeg", "empty/": b"", "deep/er/": b"",
                          "top.txt": b"top"})


@pytest.mark.parametrize("workers", ["1", "2"])
def test_folder_markers_become_directories_and_count_as_copied(cli, s3, bucket, tmp_path, workers):
    _console_folders(s3, bucket)
    dst = tmp_path / "out"
    run = cli("copy", f"s3://{bucket}/", str(dst), "--json", "--workers", workers)
    assert run.code == 0, run
    assert run.summary["copied"] == 5 and run.summary["failed"] == 0
    assert read_tree(dst) == {"photos/a.jpg": b"jpeg", "top.txt": b"top"}
    assert (dst / "empty").is_dir() and (dst / "deep" / "er").is_dir()


def test_marker_of_the_prefix_itself_is_its_directory(cli, s3, bucket, tmp_path):
    _console_folders(s3, bucket)
    run = cli("copy", f"s3://{bucket}/photos/", str(tmp_path / "p"), "--json", *W1)
    assert run.code == 0, run
    assert run.summary["copied"] == 2
    assert read_tree(tmp_path / "p") == {"a.jpg": b"jpeg"}


def test_sync_sees_folder_markers_as_equal_to_directories(cli, s3, bucket, tmp_path):
    _console_folders(s3, bucket)
    dst = tmp_path / "out"
    first = cli("sync", f"s3://{bucket}/", str(dst), "--json")
    assert first.code == 0 and first.summary["copied"] == 5, first
    for compare in ([], ["--checksum"], ["--exact-timestamps"], ["--size-only"]):
        again = cli("sync", f"s3://{bucket}/", str(dst), "--dry-run", "--delete", *compare)
        assert again.code == 0, again
        assert "(dryrun)" not in again.out, (compare, again)
    run = cli("sync", f"s3://{bucket}/photos/", str(tmp_path / "p"), "--json")
    # the marker photos/ is DST itself, made before the run: equal already
    assert run.code == 0 and run.summary["copied"] == 1 and run.summary["skipped"] == 1, run
    run = cli("sync", f"s3://{bucket}/photos/", str(tmp_path / "p"), "--json")
    assert run.code == 0 and run.summary["copied"] == 0 and run.summary["skipped"] == 2, run


def test_sync_makes_a_missing_folder_again(cli, s3, bucket, tmp_path):
    _console_folders(s3, bucket)
    dst = tmp_path / "out"
    assert cli("sync", f"s3://{bucket}/", str(dst), "--json").code == 0
    (dst / "empty").rmdir()
    again = cli("sync", f"s3://{bucket}/", str(dst), "--dry-run")
    assert again.out.count("(dryrun) copy:") == 1 and f"s3://{bucket}/empty/ " in again.out, again


def test_non_empty_key_ending_in_slash_is_skipped_with_its_reason(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {"odd/": b"data in a folder name", "fine.txt": b"ok"})
    run = cli("copy", f"s3://{bucket}/", str(tmp_path / "out"), *W1)
    assert run.code == 1, run
    assert "empty path segment" not in run.err
    line = _one_line(run.err)
    assert f"s3://{bucket}/odd/" in line and "ends in '/'" in line and "not empty" in line, line
    assert read_tree(tmp_path / "out") == {"fine.txt": b"ok"}


def test_local_directories_are_not_uploaded_as_markers(cli, s3, bucket, tmp_path):
    src = tmp_path / "src"
    write_tree(src, {"a/file.txt": b"f"})
    (src / "empty-dir").mkdir()
    (src / "a" / "also-empty").mkdir()
    for command in ("copy", "sync"):
        run = cli(command, str(src), f"s3://{bucket}/{command}/", "--json")
        assert run.code == 0 and run.summary["copied"] == 1, run
    assert sorted(bucket_tree(s3, bucket)) == ["copy/a/file.txt", "sync/a/file.txt"]


def test_sync_from_local_keeps_the_markers_of_its_folders(cli, s3, bucket, tmp_path):
    src = tmp_path / "src"
    write_tree(src, {"photos/a.jpg": b"jpeg"})
    put_tree(s3, bucket, {"photos/": b"", "photos/a.jpg": b"jpeg", "gone/": b"", "stale.txt": b"old"})
    dry = cli("sync", str(src), f"s3://{bucket}/", "--delete", "--dry-run", "--size-only")
    assert dry.code == 0, dry
    assert sorted(dry.out.split("\n")[:2]) == sorted([f"(dryrun) delete: s3://{bucket}/gone/",
                                                       f"(dryrun) delete: s3://{bucket}/stale.txt"]), dry
    run = cli("sync", str(src), f"s3://{bucket}/", "--delete", "--size-only", "--json")
    assert run.code == 0 and run.summary["deleted"] == 2, run
    assert sorted(bucket_tree(s3, bucket)) == ["photos/", "photos/a.jpg"]


def test_folder_markers_round_trip_bucket_to_bucket(cli, s3, make_bucket):
    a, b = make_bucket(), make_bucket()
    _console_folders(s3, a)
    run = cli("copy", f"s3://{a}/", f"s3://{b}/", "--json", *W1)
    assert run.code == 0 and run.summary["copied"] == 5, run
    assert bucket_tree(s3, b) == bucket_tree(s3, a)


# ------------------------------------------------------------------ a source that matches nothing


def test_mistyped_key_is_an_error_and_creates_nothing(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {"d00/obj-00000.bin": b"x" * 10})
    out = str(tmp_path / "out.bin")
    for args in (["copy", f"s3://{bucket}/d00/obj-00000.bi", out],
                 ["copy", f"s3://{bucket}/d00/obj-00000.bi", out, "--json"],
                 ["sync", f"s3://{bucket}/d00/obj-00000.bi/", out],
                 ["ls", f"s3://{bucket}/d00/obj-00000.bi"]):
        run = cli(*args)
        assert run.code not in (0, 2), run
        assert _one_line(run.err) == f"s3bulk: error: no such key or prefix: {args[1]}", run
        assert not (tmp_path / "out.bin").exists()


def test_empty_bucket_is_no_error(cli, bucket, tmp_path):
    for args in (["copy", f"s3://{bucket}/", str(tmp_path / "d"), "--json"],
                 ["copy", f"s3://{bucket}", str(tmp_path / "d"), "--json"],
                 ["sync", f"s3://{bucket}", str(tmp_path / "d"), "--json"]):
        run = cli(*args)
        assert run.code == 0 and run.summary["copied"] == 0, run
    run = cli("ls", f"s3://{bucket}")
    assert run.code == 0 and run.out == "", run


def test_wildcards_are_refused_with_what_to_use(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {"d00/obj-00000.bin": b"1", "d00/obj-00001.txt": b"2"})
    for pattern in ("d00/*.bin", "d00/obj-0000?.bin"):
        run = cli("copy", f"s3://{bucket}/{pattern}", str(tmp_path / "out"))
        assert run.code == 2, run
        line = _one_line(run.err)
        assert "wildcards are not supported" in line and "--include" in line, line
        assert not (tmp_path / "out").exists()
    # what the message suggests does what was meant
    run = cli("copy", f"s3://{bucket}/d00/", str(tmp_path / "out"), "--exclude", "*", "--include", "*.bin", *W1)
    assert run.code == 0, run
    assert read_tree(tmp_path / "out") == {"obj-00000.bin": b"1"}


def test_a_key_with_a_star_in_its_name_is_still_copied(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {"odd/star*.txt": b"*"})
    run = cli("copy", f"s3://{bucket}/odd/star*.txt", str(tmp_path / "star.txt"), *W1)
    assert run.code == 0, run
    assert (tmp_path / "star.txt").read_bytes() == b"*"


def test_ls_and_copy_read_key_or_prefix_the_same_way(cli, s3, bucket, tmp_path):
    put_tree(s3, bucket, {"d0": b"object d0", "d00/x": b"x", "d0/y": b"y"})
    # "d0": the object d0 (not what is under d0/, and not d00/)
    ls = cli("ls", f"s3://{bucket}/d0", "--json")
    assert [e["key"] for e in ls.events] == ["d0"], ls
    run = cli("copy", f"s3://{bucket}/d0", str(tmp_path / "one"), *W1)
    assert run.code == 0 and (tmp_path / "one").read_bytes() == b"object d0", run
    # "d0/": everything under d0/
    ls = cli("ls", f"s3://{bucket}/d0/", "--json")
    assert [e["key"] for e in ls.events] == ["d0/y"], ls
    # "d00" names no object: the prefix d00/, for both
    ls = cli("ls", f"s3://{bucket}/d00", "--json")
    assert [e["key"] for e in ls.events] == ["d00/x"], ls
    run = cli("copy", f"s3://{bucket}/d00", str(tmp_path / "dir"), *W1)
    assert run.code == 0 and read_tree(tmp_path / "dir") == {"x": b"x"}, run
    # "d" is neither: both say so
    for command in (["ls", f"s3://{bucket}/d"], ["copy", f"s3://{bucket}/d", str(tmp_path / "no")]):
        run = cli(*command)
        assert "no such key or prefix" in _one_line(run.err) and run.code != 0, run


# ------------------------------------------------------------------ the bundled LocalStack

_LOOPBACK = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}


def _listening(port: int) -> set[str]:
    """Local addresses (hex, as the kernel shows them) with a socket listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()
                addr, _, hex_port = fields[1].partition(":")
                if fields[3] == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    found.add(addr)
    return found


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads the kernel's socket table (Linux)")
def test_bundled_localstack_listens_on_loopback_only(endpoint, tmp_path):
    """localstack/start.sh serves on 127.0.0.1 only, as documented. The session's LocalStack was
    started by start.sh unless S3BULK_TEST_ENDPOINT points elsewhere: then this starts one itself
    (~30 s), except when scripts/test.sh started it with start.sh and says so
    (S3BULK_TEST_ENDPOINT_STARTED=start.sh)."""
    from urllib.parse import urlsplit

    from conftest import _free_port, _healthy

    proc = None
    if os.environ.get("S3BULK_TEST_ENDPOINT") and os.environ.get("S3BULK_TEST_ENDPOINT_STARTED") != "start.sh":
        port = _free_port()
        log = tmp_path / "localstack.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(["bash", str(ROOT / "localstack" / "start.sh"), str(port)], stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    env=dict(os.environ, FILESYSTEM_ROOT=str(tmp_path / "state")))
        deadline = time.monotonic() + 300
        while not _healthy(f"http://127.0.0.1:{port}"):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
    else:
        port = urlsplit(endpoint).port
    try:
        addresses = _listening(port)
        assert addresses, f"nothing listens on port {port}"
        assert addresses <= _LOOPBACK, f"LocalStack listens beyond loopback: {sorted(addresses)}"
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


# ------------------------------------------------------------------ the README's getting started


def _getting_started() -> list[str]:
    """The command lines of the README's "Getting started" block, comments stripped."""
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- getting-started:begin -->", 1)[1].split("<!-- getting-started:end -->", 1)[0]
    body = block.split("```bash\n", 1)[1].split("```", 1)[0]
    lines = []
    for line in body.splitlines():
        command = re.sub(r"\s+#.*$", "", line).strip()  # no command here has a '#' of its own
        if command:
            lines.append(command)
    return lines


def test_readme_getting_started_runs(endpoint, make_bucket, tmp_path):
    """Every line of the README's "Getting started", in order, in a fresh directory, against the test
    LocalStack: the install and LocalStack lines are checked, not run (the project's environment is
    the installed one, and the session's LocalStack comes from the same start.sh); the bucket gets a
    fresh name; "press Ctrl-C while it runs" is done: SIGINT once objects have arrived."""
    lines = _getting_started()
    install, start, *rest = lines
    assert install == "pip install ." and start == "localstack/start.sh &", lines
    readme = (ROOT / "README.md").read_text()
    for tool in ("uv tool install .", "pipx install ."):
        assert tool in readme
    assert 's3bulk = "s3bulk.cli:main"' in (ROOT / "pyproject.toml").read_text()

    bucket = f"gs-{os.urandom(6).hex()}"
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "s3bulk").exists(), "the project's environment has the s3bulk command"
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
               XDG_STATE_HOME=str(tmp_path / "state"))
    work = tmp_path / "work"
    work.mkdir()
    # the lines share a shell's state (the export): each runs after the exports seen so far
    exports: list[str] = []

    def shell(line: str) -> str:
        line = line.replace("http://127.0.0.1:4566", endpoint).replace("my-bucket", bucket)
        return "set -e; " + "; ".join(exports + [line])

    ran_interrupted = ran_resume = False
    for line in rest:
        if line.startswith("export "):
            exports.append(shell(line).split("; ", 1)[1])
            continue
        if "--resume" in line:
            run = subprocess.run(["bash", "-c", shell(line)], cwd=work, env=env, capture_output=True,
                                 text=True, timeout=600)
            assert run.returncode == 0, (line, run.stdout, run.stderr)
            ran_resume = True
            continue
        if "--max-rps" in line:  # the one to stop with Ctrl-C
            proc = subprocess.Popen(["bash", "-c", shell(line).replace("; s3bulk", "; exec s3bulk")],
                                    cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, start_new_session=True)
            target = work / line.split()[3]
            deadline = time.monotonic() + 300
            while not (target.is_dir() and len(os.listdir(target)) >= 5):
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.05)
            os.killpg(proc.pid, signal.SIGINT)  # a Ctrl-C reaches the whole foreground process group
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 130, (proc.returncode, err)
            assert "resume with: s3bulk copy" in err and "--resume" in err, err
            assert len(os.listdir(target)) < 300, "stopped half-way"
            ran_interrupted = True
            continue
        run = subprocess.run(["bash", "-c", shell(line)], cwd=work, env=env, capture_output=True, text=True,
                             timeout=600)
        assert run.returncode == 0, (line, run.stdout, run.stderr)
        if line.startswith("s3bulk ls"):
            assert run.stdout.split()[-1] == "photos/p1.jpg", run.stdout
    assert ran_interrupted and ran_resume
    photos = read_tree(work / "photos")
    assert len(photos) == 300
    assert read_tree(work / "photos-back") == photos
    assert read_tree(work / "again") == photos
    assert not list((work / "again").glob(".s3bulk-*")), "no temporary files left"


# ------------------------------------------------------------------ everyday polish


def test_version_and_short_help(cli):
    from s3bulk import __version__

    run = cli("--version")
    # from a checkout: the commit too, unless HEAD is the release's tag (tests/test_wheel.py: an installed wheel)
    assert run.code == 0 and re.fullmatch(rf"s3bulk {re.escape(__version__)}(\+g[0-9a-f]+)?", run.out.strip()), run
    for command in ([], ["copy"], ["sync"], ["ls"], ["serve"]):
        short, long = cli(*command, "-h"), cli(*command, "--help")
        assert short.code == 0 and short.out == long.out and "Usage: s3bulk" in short.out, short


def test_help_shows_plain_metavars_and_flag_names(cli):
    for command in ("copy", "sync", "ls", "serve"):
        text = cli(command, "--help").out
        assert not re.search(r"<(str|int|float|bool|list\[)[^>]*>|\{[A-Za-z]+\}", text), text
        assert "--no-no-" not in text and "no-path-style" not in text, text
    text = cli("copy", "--help").out
    assert "Usage: s3bulk copy [OPTIONS] SRC DST" in text, text
    for shown in ("--part-size SIZE", "--include GLOB", "--endpoint-url URL", "-w, --workers N"):
        assert shown in text, (shown, text)


def test_summary_is_plural_aware_and_developer_figures_need_verbose(cli, tmp_path):
    src = tmp_path / "src"
    write_tree(src, {"one.txt": b"1"})
    run = cli("copy", str(src), str(tmp_path / "dst"), *W1)
    assert run.code == 0, run
    assert re.search(r"copied\s+1 object, ", run.out), run
    assert not re.search(r"\b1 objects\b", run.out), run
    assert "server-side" not in run.out, "a local copy is no server-side copy"
    assert "peak RSS" not in run.out and "cpu" not in run.out and "us/object" not in run.out, run
    run = cli("copy", str(src), str(tmp_path / "dst2"), *W1, "-v")
    assert "peak RSS" in run.out and "cpu" in run.out and "(all 1 worker and the coordinator" in run.out, run
    run = cli("copy", str(src), str(tmp_path / "dst3"), *W1, "--json")
    assert run.summary["cpu_seconds"] > 0 and run.summary["peak_rss_bytes"] > 0, run
    ls = cli("ls", str(src))
    assert ls.err.strip() == "1 object, 1 byte", ls


def test_sigterm_exits_143(endpoint, bucket, tmp_path):
    src = tmp_path / "src"
    write_tree(src, {f"f{i:05d}": b"x" for i in range(2000)})
    # --max-rps keeps the run going long after the first progress event: the signal cannot miss it
    proc = subprocess.Popen(
        [sys.executable, "-m", "s3bulk", "copy", str(src), f"s3://{bucket}/", "--json", "--max-rps", "50",
         "--endpoint-url", endpoint],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True,
        env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state")))
    try:
        for line in proc.stdout:
            if '"progress"' in line and '"copied": 0,' not in line:
                break
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143, (proc.returncode, err)
    assert "s3bulk: interrupted: " in err and "--resume" in err and "Traceback" not in err, err
