"""The Python API as a caller meets it: a local directory deleted as an S3 prefix is, library
calls that print nothing, one name for one idea (the older keywords warn), sizes as strings.
No server: local files and the in-memory store."""

from __future__ import annotations

import subprocess
import sys

import pytest

import s3bulk
from s3bulk.errors import UsageError

pytestmark = pytest.mark.unit


def test_rm_of_a_local_directory_needs_no_all(tmp_path):
    root = tmp_path / "d"
    (root / "sub").mkdir(parents=True)
    (root / "a").write_bytes(b"a")
    (root / "sub" / "b").write_bytes(b"b")
    (tmp_path / "beside").write_bytes(b"kept")
    result = s3bulk.rm(str(root / "sub"))
    assert result.ok and result.deleted == 1 and not (root / "sub" / "b").exists()
    run = subprocess.run([sys.executable, "-m", "s3bulk", "rm", f"{root}/", "--no-journal"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert not [p for p in root.rglob("*") if p.is_file()] and (tmp_path / "beside").read_bytes() == b"kept"


def test_rm_of_the_filesystem_root_still_needs_all():
    with pytest.raises(UsageError, match="whole filesystem: add --all"):
        s3bulk.rm("/", dry_run=True)


def test_transfer_options_take_sizes_as_strings():
    options = s3bulk.TransferOptions(part_size="16MiB", max_transfer="1GiB", multipart_threshold=32 * 1024 * 1024)
    assert (options.part_size, options.max_transfer, options.multipart_threshold) == (16 << 20, 1 << 30, 32 << 20)
    with pytest.raises(UsageError, match="invalid part_size"):
        s3bulk.TransferOptions(part_size="lots")


def test_library_calls_print_nothing_and_older_keywords_warn(two_memory_buckets, capfd):
    s, sb, d, db = two_memory_buckets
    sb.put("t/a", b"a")
    one = s3bulk.TransferOptions(workers=1)
    differences: list[str] = []

    class Lines(s3bulk.Subscriber):
        def on_difference(self, event: s3bulk.Difference) -> None:
            differences.append(event.line())

        def on_dry_run(self, event: s3bulk.DryRunAction) -> None:
            differences.append(event.line())

    assert not s3bulk.check(f"memory://{s}/t/", f"memory://{d}/t/", options=one, subscriber=Lines()).identical
    assert s3bulk.sync(f"memory://{s}/t/", f"memory://{d}/t/", dry_run=True, options=one, subscriber=Lines()).ok
    assert s3bulk.copy(f"memory://{s}/t/", f"memory://{d}/t/", dry_run=True, options=one).ok
    assert capfd.readouterr().out == "" and len(differences) == 2, differences
    with pytest.warns(DeprecationWarning, match=r"check\(json_lines=\)"):
        s3bulk.check(f"memory://{s}/t/", f"memory://{d}/t/", options=one, json_lines=True)
    with pytest.warns(DeprecationWarning, match=r"copy\(move=True\) is deprecated .*: use move\(\)"):
        assert s3bulk.copy(f"memory://{s}/t/", f"memory://{d}/t/", options=one, move=True).ok
    assert sb.contents() == {} and db.contents() == {"t/a": b"a"}, "the older keyword still moves"
    assert capfd.readouterr().out == ""


def test_watch_takes_the_names_sync_takes_and_the_older_ones_warn(two_memory_buckets):
    import inspect

    s, sb, d, db = two_memory_buckets
    watch, sync = inspect.signature(s3bulk.watch).parameters, inspect.signature(s3bulk.sync).parameters
    for name in ("watch_queue", "watch_interval", "reconcile_every"):
        assert watch[name].default == sync[name].default, name
    sb.put("a", b"a")
    one = s3bulk.TransferOptions(workers=1)
    with pytest.warns(DeprecationWarning, match=r"watch\(interval=\) is deprecated .*: use watch_interval="):
        summary = s3bulk.watch(f"memory://{s}/", f"memory://{d}/", stop=lambda: True, interval=5.0, options=one)
    assert summary.interrupted, "stopped at once, as asked"
    with pytest.warns(DeprecationWarning, match=r"watch\(queue=\)"), pytest.raises(s3bulk.errors.S3BulkError):
        s3bulk.watch(f"memory://{s}/", f"memory://{d}/", stop=lambda: True, queue="memory://no-such-queue",
                     options=one)


def test_ls_lists_as_many_ranges_at_once_as_the_command_line():
    import inspect

    from s3bulk.cli.commands.ls import ls_command

    cli_default = inspect.signature(ls_command).parameters["concurrency"].default.default
    for fn in (s3bulk.ls, s3bulk.ls_async):
        assert inspect.signature(fn).parameters["concurrency"].default == cli_default == 64


def test_version_names_the_commit_off_a_release(tmp_path):
    from s3bulk import __version__
    from s3bulk.cli.version import version_text

    assert version_text(tmp_path) == __version__, "no checkout (an installed wheel): the version alone"
    (tmp_path / "pyproject.toml").write_text("")

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                              capture_output=True, text=True, check=True).stdout.strip()

    git("init", "-q")
    git("add", "pyproject.toml")
    git("commit", "-q", "-m", "one")
    assert version_text(tmp_path) == f"{__version__}+g{git('rev-parse', '--short', 'HEAD')}"
    git("tag", f"v{__version__}")
    assert version_text(tmp_path) == __version__, "the release's own tag: the version alone"
