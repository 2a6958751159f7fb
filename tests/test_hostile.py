"""Hostile inputs and hostile servers, each through the real command line: the expected exit code, a
clear message (one `s3bulk: error:` line for a run that cannot start, one `ERROR` line per failed
object otherwise), never a traceback, never the secret key, nothing written outside DST and no
temporary part file left anywhere. The docs' guarantees page (docs/reference/guarantees.md) lists these
cases by id (tests/test_cli_docs.py checks that it lists every one).

More cases live next door: tests/test_safety.py (escaping keys, symlinked directories in DST,
malformed URLs, missing bucket, wrong or missing credentials, refused connections, DST is a file)
and tests/test_listget.py (malformed later /list pages, traversal names from a server, 404s)."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from conftest import ROOT, Run
from faultproxy import s3_error

SECRET = "hostileSECRETneverPRINTED0123456789abcdef"
ENV = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": SECRET}


def canned(status: int, body: bytes, ctype: str = "application/xml", extra: str = "") -> bytes:
    return (f"HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n{extra}"
            f"Connection: close\r\n\r\n").encode() + body


def is_listing(target: str) -> bool:
    return "list-type=2" in target


@dataclass
class Ctx:
    """What a case's setup gets and may change: where DST is, extra environment, checks to run after."""

    tmp: Path
    s3: object
    endpoint: str
    make_bucket: Callable[[], str]
    make_fault_proxy: Callable
    listget_server: Callable
    dst: Path
    env: dict = field(default_factory=dict)
    preexec: Callable | None = None
    after: list[Callable[[Run], None]] = field(default_factory=list)
    cleanup: list[Callable[[], None]] = field(default_factory=list)

    def bucket(self, objects: dict[str, bytes]) -> str:
        name = self.make_bucket()
        for key, body in objects.items():
            self.s3.put_object(Bucket=name, Key=key, Body=body)
        return name

    def proxy(self, rule, upstream: str | None = None) -> str:
        return self.make_fault_proxy(upstream or self.endpoint, [rule]).url

    def listget(self, rule) -> str:
        """A proxy URL in front of `s3bulk serve --synthetic 3` whose answers `rule` may replace."""
        return self.proxy(rule, self.listget_server("--synthetic", "3", "--processes", "1"))

    def mount_tmpfs(self, where: Path, options: str) -> None:
        where.mkdir(parents=True, exist_ok=True)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                          capture_output=True).returncode != 0:
            pytest.skip("cannot mount a tmpfs here (needs root)")
        self.cleanup.append(lambda: subprocess.run(["umount", "-l", str(where)], capture_output=True))


@dataclass
class Case:
    id: str
    code: int
    needle: str
    setup: Callable[[Ctx], list[str]]
    xfail: str | None = None


CASES: list[Case] = []


def case(id: str, code: int, needle: str, xfail: str | None = None):
    def register(setup: Callable[[Ctx], list[str]]):
        CASES.append(Case(id, code, needle, setup, xfail))
        return setup
    return register


W1 = ["--workers", "1"]

# ------------------------------------------------------------------ usage: exit 2, nothing attempted


@case("part-size-garbage", 2, "invalid --part-size '1x'")
def _(c: Ctx):
    return ["copy", str(c.tmp), str(c.dst), "--part-size", "1x"]


@case("negative-concurrency", 2, "--concurrency")
def _(c: Ctx):
    return ["copy", str(c.tmp), str(c.dst), "--concurrency", "-3"]


@case("negative-workers", 2, "--workers")
def _(c: Ctx):
    return ["copy", str(c.tmp), str(c.dst), "--workers", "-1"]


@case("page-size-above-1000", 2, "--page-size")
def _(c: Ctx):
    return ["copy", str(c.tmp), str(c.dst), "--page-size", "5000"]


@case("negative-max-buffer", 2, "invalid --max-buffer")
def _(c: Ctx):
    return ["copy", str(c.tmp), str(c.dst), "--max-buffer", "-5"]


@case("max-memory-too-small", 2, "give at least")
def _(c: Ctx):
    return ["copy", "s3://some-bucket/", str(c.dst), "--max-memory", "10MiB"]


@case("unknown-option", 2, "no such option: --frobnicate")
def _(c: Ctx):
    return ["copy", str(c.tmp), str(c.dst), "--frobnicate"]


@case("missing-dst-argument", 2, "missing argument")
def _(c: Ctx):
    return ["copy", str(c.tmp)]


@case("sync-two-comparisons", 2, "choose one of")
def _(c: Ctx):
    return ["sync", str(c.tmp), str(c.dst), "--size-only", "--checksum"]


@case("sync-delete-from-listget", 2, "--delete needs a source listed in key order")
def _(c: Ctx):
    return ["sync", "http://127.0.0.1:1/", str(c.dst), "--delete"]


@case("sync-of-a-file", 2, "is a file; sync works on directories")
def _(c: Ctx):
    (c.tmp / "afile").write_bytes(b"x")
    return ["sync", str(c.tmp / "afile"), str(c.dst)]


@case("file-url-other-host", 2, "only file:///path on this machine")
def _(c: Ctx):
    return ["copy", "file://otherhost/etc", str(c.dst)]


@case("http-url-bad-port", 2, "bad port")
def _(c: Ctx):
    return ["copy", "http://host:notaport/", str(c.dst)]


@case("src-is-a-device", 2, "neither a regular file nor a directory")
def _(c: Ctx):
    return ["copy", "/dev/null", str(c.dst)]


@case("same-src-and-dst", 2, "destination is inside the source")
def _(c: Ctx):
    (c.tmp / "tree").mkdir()
    (c.tmp / "tree" / "f").write_bytes(b"f")
    c.dst = c.tmp / "tree"
    return ["copy", str(c.tmp / "tree"), str(c.tmp / "tree")]


@case("s3-dst-inside-src-prefix", 2, "inside the source prefix")
def _(c: Ctx):
    b = c.bucket({"p/x": b"x"})
    return ["copy", f"s3://{b}/p/", f"s3://{b}/p/sub/"]


@case("bad-region", 2, "region")
def _(c: Ctx):
    return ["copy", "s3://some-bucket/", str(c.dst), "--region", "bad region!"]


# ------------------------------------------------------------------ the run cannot start: exit 3


@case("expired-token", 3, "credentials expired (ExpiredToken)")
def _(c: Ctx):
    url = c.proxy(lambda m, t, h: s3_error(400, "Bad Request", "ExpiredToken", "The provided token has expired."))
    return ["copy", "s3://some-bucket/", str(c.dst), "--endpoint-url", url]


@case("wrong-secret", 3, "different signature than s3bulk sent")
def _(c: Ctx):
    url = c.proxy(lambda m, t, h: s3_error(403, "Forbidden", "SignatureDoesNotMatch",
                                           "The request signature we calculated does not match"))
    return ["copy", "s3://some-bucket/", str(c.dst), "--endpoint-url", url]


@case("listing-access-denied", 3, "access denied")
def _(c: Ctx):
    b = c.bucket({"a": b"1"})
    url = c.proxy(lambda m, t, h: s3_error(403, "Forbidden", "AccessDenied", "Access Denied") if is_listing(t) else None)
    return ["copy", f"s3://{b}/", str(c.dst), "--endpoint-url", url]


@case("garbage-aws-config-file", 3, "unable to parse config file")
def _(c: Ctx):
    (c.tmp / "config").write_text("[[[ not an ini file\n")
    c.env["AWS_CONFIG_FILE"] = str(c.tmp / "config")
    return ["copy", "s3://some-bucket/", str(c.dst)]


@case("endpoint-is-a-web-page", 3, "not S3 XML")
def _(c: Ctx):
    url = c.proxy(lambda m, t, h: canned(200, b"<html><body>Welcome to nginx!</body></html>", "text/html"))
    return ["copy", "s3://some-bucket/", str(c.dst), "--endpoint-url", url]


@case("garbage-xml-listing", 3, "not S3 XML")
def _(c: Ctx):
    b = c.bucket({"a": b"1"})
    url = c.proxy(lambda m, t, h: canned(200, b"\x00\xffgarbage<<<&&>>>") if is_listing(t) else None)
    return ["copy", f"s3://{b}/", str(c.dst), "--endpoint-url", url, *W1]


@case("truncated-xml-listing", 3, "list")
def _(c: Ctx):
    b = c.bucket({"a": b"1"})
    cut = (b'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult><Name>x</Name>'
           b"<IsTruncated>false</IsTruncated><Contents><Key>a</Ke")
    url = c.proxy(lambda m, t, h: canned(200, cut) if is_listing(t) else None)
    return ["copy", f"s3://{b}/", str(c.dst), "--endpoint-url", url, *W1]


def _redirect(c: Ctx, status: int) -> list[str]:
    b = c.bucket({"a": b"1"})
    seen: list[str] = []

    def other_host(m, t, h):
        seen.append(t)
        return canned(200, b'<?xml version="1.0"?><ListBucketResult><IsTruncated>false</IsTruncated><Contents>'
                           b"<Key>planted</Key><Size>5</Size><LastModified>2020-01-01T00:00:00Z</LastModified>"
                           b"</Contents></ListBucketResult>")

    elsewhere = c.make_fault_proxy(("127.0.0.1", 9), [other_host]).url
    url = c.proxy(lambda m, t, h: canned(status, b'<?xml version="1.0"?><Error><Code>PermanentRedirect</Code>'
                                         b"<Message>use the other endpoint</Message></Error>",
                                         extra=f"Location: {elsewhere}/evil\r\n"))

    def nothing_went_elsewhere(run: Run) -> None:
        assert seen == [], f"followed a redirect to another host: {seen}"
    c.after.append(nothing_went_elsewhere)
    return ["copy", f"s3://{b}/", str(c.dst), "--endpoint-url", url, *W1]



@case("redirect-301-other-host", 3, "redirect")
def _(c: Ctx):
    return _redirect(c, 301)


@case("redirect-307-other-host", 3, "redirect")
def _(c: Ctx):
    return _redirect(c, 307)


@case("unresolvable-endpoint", 3, "cannot connect")
def _(c: Ctx):
    return ["copy", "s3://some-bucket/", str(c.dst), "--endpoint-url", "http://no-such-host.invalid"]


@case("dst-parent-is-a-file", 3, "a file is in the way where a directory is needed")
def _(c: Ctx):
    (c.tmp / "afile").write_bytes(b"keep me")
    (c.tmp / "src").mkdir()
    (c.tmp / "src" / "f").write_bytes(b"f")
    c.dst = c.tmp / "afile" / "sub"
    return ["copy", str(c.tmp / "src"), str(c.dst)]


@case("dst-on-read-only-filesystem", 3, "read-only file system")
def _(c: Ctx):
    c.mount_tmpfs(c.tmp / "ro", "ro,size=1m")
    (c.tmp / "src").mkdir()
    (c.tmp / "src" / "f").write_bytes(b"f")
    c.dst = c.tmp / "ro" / "d"
    return ["copy", str(c.tmp / "src"), str(c.dst)]


@case("listget-garbage-json", 3, "malformed /list answer at the first page: not JSON")
def _(c: Ctx):
    return ["copy", c.listget(lambda m, t, h: canned(200, b"{not json", "application/json")
                              if t.startswith("/list") else None), str(c.dst)]


@case("listget-wrong-json-shape", 3, "FileNames is not a list of strings")
def _(c: Ctx):
    return ["copy", c.listget(lambda m, t, h: canned(200, b'{"FileNames": "all of them"}', "application/json")
                              if t.startswith("/list") else None), str(c.dst)]


@case("http-src-is-a-web-page", 3, "malformed /list answer")
def _(c: Ctx):
    return ["copy", c.listget(lambda m, t, h: canned(200, b"<html>hello</html>", "text/html")), str(c.dst)]


@case("listget-500-forever", 3, "server error 500")
def _(c: Ctx):
    return ["copy", c.listget(lambda m, t, h: canned(500, b"oops", "text/plain")), str(c.dst)]


@case("listget-drops-every-connection", 3, "connection closed before any answer")
def _(c: Ctx):
    return ["copy", c.listget(lambda m, t, h: b""), str(c.dst)]


@case("listget-redirect", 3, "/list answered 302")
def _(c: Ctx):
    return ["copy", c.listget(lambda m, t, h: canned(302, b"", "text/plain", "Location: http://127.0.0.1:9/list\r\n")),
            str(c.dst)]


@case("listget-truncated-body", 3, "answer did not arrive whole")
def _(c: Ctx):
    cut = b'HTTP/1.1 200 OK\r\nContent-Length: 50\r\nConnection: close\r\n\r\n{"FileNames": ['
    return ["copy", c.listget(lambda m, t, h: cut if t.startswith("/list") else None), str(c.dst)]


# ------------------------------------------------------------------ some objects fail: exit 1, one ERROR line each


@case("listget-key-with-nul", 1, "key contains a NUL character")
def _(c: Ctx):
    names = {"FileNames": ["ok", "nul\u0000byte"]}
    url = c.listget(lambda m, t, h: canned(200, json.dumps(names).encode(), "application/json")
                    if t.startswith("/list") else canned(200, b"data", "application/octet-stream"))
    c.after.append(lambda run: _dst_has(c, {"ok": b"data"}))
    return ["copy", url, str(c.dst)]


@case("key-segment-over-255-bytes", 1, "a path segment is longer than 255 bytes")
def _(c: Ctx):
    b = c.bucket({"x" * 300 + "/f": b"long", "fine": b"ok"})
    c.after.append(lambda run: _dst_has(c, {"fine": b"ok"}))
    return ["copy", f"s3://{b}/", str(c.dst), *W1]


@case("file-and-directory-same-name", 1, "the directory is kept")
def _(c: Ctx):
    # the directory always wins, whatever order the writes would come in; `a` is reported by name
    b = c.bucket({"a": b"file", "a/b": b"under"})
    c.after.append(lambda run: _dst_has(c, {"a/b": b"under"}))
    return ["copy", f"s3://{b}/", str(c.dst), *W1]


@case("dst-filesystem-full", 3, "no space left on device")
def _(c: Ctx):
    # a full disk fails every object alike: the run stops at the first, and says how to go on
    c.mount_tmpfs(c.tmp / "full", "size=1m")
    b = c.bucket({"big": os.urandom(3 * 1024 * 1024), "small": b"s"})
    c.dst = c.tmp / "full" / "d"
    c.after.append(lambda run: _dst_has(c, {}, {"small": b"s"}))
    c.after.append(lambda run: _says(run, "--resume"))
    return ["copy", f"s3://{b}/", str(c.dst), *W1]


@case("file-size-limit", 1, "file too large")
def _(c: Ctx):
    b = c.bucket({"big": os.urandom(3 * 1024 * 1024), "small": b"s"})
    c.preexec = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    c.after.append(lambda run: _dst_has(c, {"small": b"s"}))
    return ["copy", f"s3://{b}/", str(c.dst), *W1]


@case("dst-root-read-only", 3, "read-only file system")
def _(c: Ctx):
    c.mount_tmpfs(c.tmp / "ro", "ro,size=1m")
    b = c.bucket({"a": b"1"})
    c.dst = c.tmp / "ro"
    return ["copy", f"s3://{b}/", str(c.dst), *W1]


@case("s3-dst-write-denied", 1, "access denied")
def _(c: Ctx):
    b = c.bucket({})
    (c.tmp / "src").mkdir()
    for name in ("a", "b"):
        (c.tmp / "src" / name).write_bytes(b"x")
    url = c.proxy(lambda m, t, h: s3_error(403, "Forbidden", "AccessDenied", "Access Denied") if m in ("PUT", "POST") else None)

    def nothing_written(run: Run) -> None:
        assert "Contents" not in c.s3.list_objects_v2(Bucket=b)
    c.after.append(nothing_written)
    return ["copy", str(c.tmp / "src"), f"s3://{b}/", "--endpoint-url", url, *W1]


@case("fifo-in-source", 1, "not a regular file")
def _(c: Ctx):
    (c.tmp / "src").mkdir()
    (c.tmp / "src" / "ok").write_bytes(b"ok")
    os.mkfifo(c.tmp / "src" / "fifo")  # reading it would block forever
    c.after.append(lambda run: _dst_has(c, {"ok": b"ok"}))
    return ["copy", str(c.tmp / "src"), str(c.dst), *W1]


@case("non-utf8-file-name-to-s3", 1, "file name is not valid UTF-8")
def _(c: Ctx):
    b = c.bucket({})
    (c.tmp / "src").mkdir()
    (c.tmp / "src" / "good").write_bytes(b"g")
    with open(os.fsencode(c.tmp / "src") + b"/bad\xffname", "wb") as f:
        f.write(b"x")

    def only_good(run: Run) -> None:
        keys = [o["Key"] for o in c.s3.list_objects_v2(Bucket=b).get("Contents", [])]
        assert keys == ["u/good"], keys
    c.after.append(only_good)
    return ["copy", str(c.tmp / "src"), f"s3://{b}/u/", *W1]


@case("dangling-symlink-in-source", 1, "cannot stat")
def _(c: Ctx):
    (c.tmp / "src").mkdir()
    (c.tmp / "src" / "g").write_bytes(b"g")
    os.symlink("/nonexistent/s3bulk-dangling", c.tmp / "src" / "dangling")
    c.after.append(lambda run: _dst_has(c, {"g": b"g"}))
    return ["copy", str(c.tmp / "src"), str(c.dst), *W1]


@case("failure-line-cannot-be-forged", 1, "would land outside the destination")
def _(c: Ctx):
    # a failing key with a newline and an escape sequence must stay on its one ERROR line
    b = c.bucket({"../x\nERROR get s3://forged -> /etc/passwd: \x1b[2Jforged": b"evil", "ok": b"ok"})
    c.after.append(lambda run: _dst_has(c, {"ok": b"ok"}))
    c.after.append(lambda run: _no_control_chars(run.err))
    c.after.append(lambda run: _err_lines(run, 1))
    return ["copy", f"s3://{b}/", str(c.dst), *W1]


# ------------------------------------------------------------------ odd but fine: exit 0


@case("key-with-newline", 0, "")
def _(c: Ctx):
    b = c.bucket({"new\nline": b"n"})
    c.after.append(lambda run: _dst_has(c, {"new\nline": b"n"}))
    return ["copy", f"s3://{b}/", str(c.dst), *W1]


@case("symlink-in-dst-to-outside-file", 0, "")
def _(c: Ctx):
    victim = c.tmp / "outside" / "victim"
    victim.write_bytes(b"victim")
    c.dst.mkdir()
    os.symlink(victim, c.dst / "a")
    b = c.bucket({"a": b"EVIL"})

    def link_replaced(run: Run) -> None:
        assert victim.read_bytes() == b"victim"
        assert not (c.dst / "a").is_symlink() and (c.dst / "a").read_bytes() == b"EVIL"
    c.after.append(link_replaced)
    return ["copy", f"s3://{b}/", str(c.dst), *W1]


@case("exclude-everything", 0, "")
def _(c: Ctx):
    b = c.bucket({"a": b"1", "d/b": b"2"})
    c.after.append(lambda run: _dst_has(c, {}))
    c.after.append(lambda run: _summary_says(run, "copied    0 objects"))
    return ["copy", f"s3://{b}/", str(c.dst), "--exclude", "*", *W1]


@case("missing-key-or-prefix", 3, "no such key or prefix")
def _(c: Ctx):
    b = c.bucket({"a": b"1"})
    c.after.append(lambda run: _dst_has(c, {}))
    return ["copy", f"s3://{b}/no-such-key", str(c.dst), *W1]


# ------------------------------------------------------------------ checks


def _says(run: Run, text: str) -> None:
    assert text in run.err + run.out, run


def _dst_has(c: Ctx, expected: dict[str, bytes], alternative: dict[str, bytes] | None = None) -> None:
    got = {}
    if c.dst.exists():
        for p in c.dst.rglob("*"):
            if p.is_file() and not p.is_symlink():
                got[p.relative_to(c.dst).as_posix()] = p.read_bytes()
    assert got == expected or got == alternative, got


def _summary_says(run: Run, text: str) -> None:
    assert " ".join(text.split()) in " ".join(run.out.split()), run  # whatever the column widths


def _err_lines(run: Run, n: int) -> None:
    assert len([line for line in run.err.splitlines() if line.strip()]) == n, run


def _no_control_chars(text: str) -> None:
    bad = [ch for ch in text if ch < " " and ch not in "\n"]
    assert not bad, f"control characters reached the terminal: {bad!r}"


def _snapshot(root: Path, skip: Path) -> dict[str, object]:
    """Everything under root except the DST subtree: path -> bytes, link target or 'dir'."""
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == skip or skip in here.parents:
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            p = here / name
            if p == skip:
                continue
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            elif p.is_file():
                out[rel] = p.read_bytes()
            else:
                out[rel] = "special"
    return out


def run_cli(args: list[str], c: Ctx) -> Run:
    argv = [sys.executable, "-m", "s3bulk", *args]
    if args and args[0] in ("copy", "sync") and "--endpoint-url" not in args:
        argv += ["--endpoint-url", c.endpoint]
    env = dict(os.environ, **ENV, **c.env)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=ROOT,
                          preexec_fn=c.preexec, errors="replace")
    return Run(proc)


@pytest.mark.parametrize("hostile", [pytest.param(k, id=k.id, marks=[pytest.mark.xfail(reason=k.xfail, strict=True)]
                                                   if k.xfail else []) for k in CASES])
def test_hostile(hostile: Case, tmp_path, s3, endpoint, make_bucket, make_fault_proxy, listget_server):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "sentinel").write_bytes(b"untouched")
    c = Ctx(tmp_path, s3, endpoint, make_bucket, make_fault_proxy, listget_server, dst=tmp_path / "dst")
    try:
        args = hostile.setup(c)
        before = _snapshot(tmp_path, c.dst)
        run = run_cli(args, c)
        assert run.code == hostile.code, run
        assert "Traceback" not in run.err and "Traceback" not in run.out, run
        assert SECRET not in run.err and SECRET not in run.out, run
        lines = [line for line in run.err.splitlines() if line.strip()]
        if hostile.code in (2, 3):
            assert len(lines) == 1 and lines[0].startswith("s3bulk: error: "), run
            assert hostile.needle.lower() in lines[0].lower(), run
        elif hostile.code == 1:
            assert lines and all(line.startswith("ERROR ") for line in lines), run
            assert any(hostile.needle.lower() in line.lower() for line in lines), run
            assert "FAILED" in run.out, run
        else:
            assert lines == [], run
        # nothing outside DST changed, no temporary file anywhere, nothing escaped to /tmp
        assert _snapshot(tmp_path, c.dst) == before
        assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".s3bulk.part") or p.name.startswith(".s3bulk-")]
        assert not Path("/tmp/s3bulk-evil").exists()
        for check in c.after:
            check(run)
    finally:
        for undo in reversed(c.cleanup):
            undo()


@pytest.mark.unit
def test_there_are_at_least_30_cases():
    assert len({k.id for k in CASES}) == len(CASES) >= 30
