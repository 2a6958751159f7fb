"""The output of rm, rm --all-versions, rm --incomplete-uploads, copy --all-versions / --version-id,
ls --all-versions and check --against-report, byte for byte: stdout (the JSON lines with --json, the
per-key lines without) and stderr, as they were before these commands reported through the typed
Subscriber and the renderer (issue 34). Only what differs from run to run (bucket names, temporary
paths, version and upload ids, times, request counts) is replaced by a placeholder first.

The memory:// cases run the CLI in this process (the in-memory store lives here); the versions cases
need a versioned bucket, so they run `python -m s3bulk` against LocalStack."""

from __future__ import annotations

import json
import os
import re
import uuid

import pytest

from s3bulk.errors import AccessDenied
from s3bulk.stores import memory


def _main(capfd, *argv: str) -> tuple[int, str, str]:
    from s3bulk.cli import main

    capfd.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    out, err = capfd.readouterr()
    return int(exited.value.code or 0), out, err


def _normal(text: str, names: dict[str, str], numbered: bool = True) -> str:
    """Run-to-run values replaced: given names, ids (numbered by first appearance, or all alike),
    times, counts."""
    for value, name in names.items():
        text = text.replace(value, name)
    ids: dict[str, str] = {}

    def number(kind: str) -> object:
        def sub(m: re.Match[str]) -> str:
            return m.group(1) + (ids.setdefault(m.group(2), f"{kind}{len(ids)}") if numbered else kind)
        return sub

    text = re.sub(r"(versionId=|\"version_id\": \")([^\"&\s]+)", number("V"), text)
    text = re.sub(r"(uploadId=|\"upload_id\": \")([^\"&\s]+)", number("U"), text)
    text = re.sub(r"(\"initiated\": |\"mtime\": )[0-9.]+", r"\1T", text)
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d( +\S+ )(\S+)", lambda m: "TIME" + m.group(1) + "V", text)
    text = re.sub(r"(\"requests\": )\{[^}]*\}", r"\1{...}", text)
    return text


def _same(case: str, got: list) -> None:
    record = os.environ.get("S3BULK_GOLDEN_RECORD")
    if record:  # how GOLDEN was made: on the code before the change
        with open(record, "a") as f:
            f.write(json.dumps([case, got]) + "\n")
        return
    assert got == GOLDEN[case], (case, got)


@pytest.fixture
def mem(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    name = f"golden-{uuid.uuid4().hex[:10]}"
    bucket = memory.bucket(name)
    for key in ("p/a", "p/b", "p/c\nd", "p/é"):
        bucket.put(key, key.encode())
    yield name, bucket
    memory.drop(name)


RM_CASES = {
    "rm-json-v": (["--json", "-v"], 0),
    "rm-json": (["--json"], 0),
    "rm-human-v": (["-v"], 0),
    "rm-human": ([], 0),
    "rm-dry-json": (["--dry-run", "--json"], 0),
    "rm-dry-human": (["--dry-run"], 0),
    "rm-refused-json": (["--json", "-v"], 1),
    "rm-refused-human": (["-v"], 1),
    "rm-usage-json": (["--json", "--suffix", ".x"], 2),
    "rm-usage-human": (["--suffix", ".x"], 2),
}


@pytest.mark.unit
@pytest.mark.parametrize("case", sorted(RM_CASES))
def test_rm_output_is_unchanged(case, mem, capfd, tmp_path):
    name, bucket = mem
    args, code = RM_CASES[case]
    if "refused" in case:
        bucket.inject("delete", key="p/b", error=AccessDenied, times=-1)
    got = _main(capfd, "rm", f"memory://{name}/p/", *args)
    assert got[0] == code, got
    _same(case, [_normal(got[1], {name: "B", str(tmp_path): "TMP"}), _normal(got[2], {name: "B", str(tmp_path): "TMP"})])


UPLOAD_CASES = {
    "uploads-json": (["--json"], 0),
    "uploads-dry-json": (["--json", "--dry-run"], 0),
    "uploads-human-v": (["-v"], 0),
    "uploads-dry-human": (["--dry-run"], 0),
    "uploads-usage-json": (["--json", "--resume"], 2),
}


@pytest.mark.unit
@pytest.mark.parametrize("case", sorted(UPLOAD_CASES))
def test_rm_incomplete_uploads_output_is_unchanged(case, mem, capfd, tmp_path):
    import asyncio

    from s3bulk.config.urls import parse_location

    name, bucket = mem
    args, code = UPLOAD_CASES[case]

    async def open_two() -> None:
        store = memory.MemoryStore(parse_location(f"memory://{name}/"))
        for key in ("p/big", "p/big2"):
            await store.start_multipart(key, 10 << 20, 5 << 20)

    asyncio.run(open_two())
    got = _main(capfd, "rm", f"memory://{name}/p/", "--incomplete-uploads", *args)
    assert got[0] == code, got
    _same(case, [_normal(got[1], {name: "B"}), _normal(got[2], {name: "B"})])


@pytest.mark.unit
@pytest.mark.parametrize("json_out", [True, False])
def test_check_against_report_output_is_unchanged(json_out, mem, capfd, tmp_path):
    name, bucket = mem
    report = tmp_path / "r.jsonl"
    rows = [{"outcome": "copied", "src": f"/src/{k}", "dst": f"memory://{name}/p/{k}", "size": n, "etag": None}
            for k, n in (("a", 3), ("b", 99), ("gone", 1), ("é", 4))]
    report.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = _main(capfd, "check", "--against-report", str(report), f"memory://{name}/p/",
                *(["--json"] if json_out else []))
    assert got[0] == 1, got
    names = {name: "B", str(tmp_path): "TMP"}
    _same(f"receipt-{'json' if json_out else 'human'}", [_normal(got[1], names), _normal(got[2], names)])


@pytest.fixture
def versioned(s3, make_bucket):
    name = make_bucket()
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    ids = [s3.put_object(Bucket=name, Key="h/doc.txt", Body=f"v{i}".encode())["VersionId"] for i in (1, 2, 3)]
    s3.put_object(Bucket=name, Key="h/keep.txt", Body=b"keep")
    s3.delete_object(Bucket=name, Key="h/doc.txt")
    return name, ids


def test_versions_output_is_unchanged(cli, s3, make_bucket, versioned, tmp_path):
    name, ids = versioned
    dst = make_bucket()
    s3.put_bucket_versioning(Bucket=dst, VersioningConfiguration={"Status": "Enabled"})
    names = {name: "SRC", dst: "DST", str(tmp_path): "TMP"}
    runs = {
        "ls-versions-json": ("ls", f"s3://{name}/h/", "--all-versions", "--json"),
        "ls-versions-human": ("ls", f"s3://{name}/h/", "--all-versions"),
        "copy-versions-json": ("copy", f"s3://{name}/h/", f"s3://{dst}/h/", "--all-versions",
                               "--include-delete-markers", "--json", "--no-journal"),
        "copy-versions-human-v": ("copy", f"s3://{name}/h/", f"s3://{dst}/h2/", "--all-versions", "-v",
                                  "--no-journal"),
        "copy-version-id-json": ("copy", f"s3://{name}/h/doc.txt", str(tmp_path / "old.txt"), "--version-id",
                                 ids[0], "--json"),
        "copy-version-id-missing-json": ("copy", f"s3://{name}/h/doc.txt", str(tmp_path / "no.txt"),
                                         "--version-id", "nosuchversion", "--json"),
        "copy-version-id-human": ("copy", f"s3://{name}/h/doc.txt", str(tmp_path / "old2.txt"), "--version-id",
                                  ids[1]),
        "rm-versions-dry-json": ("rm", f"s3://{name}/h/", "--all-versions", "--dry-run", "--json"),
        "rm-versions-human-v": ("rm", f"s3://{dst}/h2/", "--all-versions", "-v"),
        "rm-versions-json": ("rm", f"s3://{name}/h/", "--all-versions", "--json"),
    }
    for case, argv in runs.items():
        r = cli(*argv)
        out = _normal(r.out, names, numbered=False)
        if case.startswith("copy-versions"):  # keys go in parallel: only each key's own order is fixed
            out = "".join(sorted(out.splitlines(keepends=True)))
        got = [r.code, out, _normal(r.err, names)]
        _same(case, got)


# recorded on the code before the change (S3BULK_GOLDEN_RECORD=FILE runs the tests to write them)
GOLDEN: dict[str, list] = {
    'copy-version-id-human': [
        0,
        '',
        'copied 1 version (2 bytes), 0 delete markers\n',
    ],
    'copy-version-id-json': [
        0,
        '{"event": "copied", "src": "s3://SRC/h/doc.txt?versionId=V", "dst": "TMP/old.txt", "v": 1}\n'
        '{"event": "summary", "command": "copy", "ok": true, "versions": 1, "bytes": 2, "delete_markers": 0, "failed": 0, "held": 0, "resumed": 0, "interrupted": false, "v": 1}\n',
        '',
    ],
    'copy-version-id-missing-json': [
        3,
        '{"event": "error", "error": "head s3://SRC/h/doc.txt: no such key", "v": 1}\n',
        's3bulk: error: head s3://SRC/h/doc.txt: no such key\n',
    ],
    'copy-versions-human-v': [
        0,
        'copy: s3://SRC/h/doc.txt?versionId=V -> s3://DST/h2/doc.txt\n'
        'copy: s3://SRC/h/doc.txt?versionId=V -> s3://DST/h2/doc.txt\n'
        'copy: s3://SRC/h/doc.txt?versionId=V -> s3://DST/h2/doc.txt\n'
        'copy: s3://SRC/h/keep.txt?versionId=V -> s3://DST/h2/keep.txt\n',
        'copied 4 versions (10 bytes), 0 delete markers\n',
    ],
    'copy-versions-json': [
        0,
        '{"event": "copied", "src": "s3://SRC/h/doc.txt?versionId=V", "dst": "s3://DST/h/doc.txt", "v": 1}\n'
        '{"event": "copied", "src": "s3://SRC/h/doc.txt?versionId=V", "dst": "s3://DST/h/doc.txt", "v": 1}\n'
        '{"event": "copied", "src": "s3://SRC/h/doc.txt?versionId=V", "dst": "s3://DST/h/doc.txt", "v": 1}\n'
        '{"event": "copied", "src": "s3://SRC/h/doc.txt?versionId=V", "dst": "s3://DST/h/doc.txt", "v": 1}\n'
        '{"event": "copied", "src": "s3://SRC/h/keep.txt?versionId=V", "dst": "s3://DST/h/keep.txt", "v": 1}\n'
        '{"event": "summary", "command": "copy", "ok": true, "versions": 4, "bytes": 10, "delete_markers": 1, "failed": 0, "held": 0, "resumed": 0, "interrupted": false, "v": 1}\n',
        '',
    ],
    'ls-versions-human': [
        0,
        'TIME       DELETE V latest h/doc.txt\n'
        'TIME            2 V        h/doc.txt\n'
        'TIME            2 V        h/doc.txt\n'
        'TIME            2 V        h/doc.txt\n'
        'TIME            4 V latest h/keep.txt\n',
        '4 versions, 1 delete marker\n',
    ],
    'ls-versions-json': [
        0,
        '{"key": "h/doc.txt", "version_id": "V", "size": null, "mtime": T, "etag": null, "latest": true, "delete_marker": true}\n'
        '{"key": "h/doc.txt", "version_id": "V", "size": 2, "mtime": T, "etag": "43a03299a3c3fed3d8ce7b820f3aca81", "latest": false, "delete_marker": false}\n'
        '{"key": "h/doc.txt", "version_id": "V", "size": 2, "mtime": T, "etag": "1b267619c4812cc46ee281747884ca50", "latest": false, "delete_marker": false}\n'
        '{"key": "h/doc.txt", "version_id": "V", "size": 2, "mtime": T, "etag": "6654c734ccab8f440ff0825eb443dc7f", "latest": false, "delete_marker": false}\n'
        '{"key": "h/keep.txt", "version_id": "V", "size": 4, "mtime": T, "etag": "18ccf61d533b600bbf5a963359223fe4", "latest": true, "delete_marker": false}\n',
        '',
    ],
    'receipt-human': [
        'differs: /src/b <> memory://B/p/b\n'
        'only-in-src: /src/gone\n',
        's3bulk check: 4 objects in the report, 2 as recorded, 1 different, 1 missing\n',
    ],
    'receipt-json': [
        '{"event": "start", "command": "check", "src": "TMP/r.jsonl", "dst": "memory://B/p/", "v": 1}\n'
        '{"event": "difference", "kind": "differs", "src": "/src/b", "dst": "memory://B/p/b", "v": 1}\n'
        '{"event": "difference", "kind": "only-in-src", "src": "/src/gone", "dst": "memory://B/p/gone", "v": 1}\n'
        '{"event": "summary", "command": "check", "src": "TMP/r.jsonl", "dst": "memory://B/p/", "ok": false, "checked": 4, "same": 2, "differs": 1, "missing": 1, "v": 1}\n',
        '',
    ],
    'rm-dry-human': [
        '(dryrun) delete: memory://B/p/a\n'
        '(dryrun) delete: memory://B/p/b\n'
        '(dryrun) delete: memory://B/p/c\\nd\n'
        '(dryrun) delete: memory://B/p/é\n',
        'would delete 4 objects; would send 0 requests\n',
    ],
    'rm-dry-json': [
        '{"event": "start", "command": "rm", "src": "memory://B/p/", "dst": null, "v": 1}\n'
        '{"event": "dryrun", "action": "delete", "dst": "memory://B/p/a", "v": 1}\n'
        '{"event": "dryrun", "action": "delete", "dst": "memory://B/p/b", "v": 1}\n'
        '{"event": "dryrun", "action": "delete", "dst": "memory://B/p/c\\nd", "v": 1}\n'
        '{"event": "dryrun", "action": "delete", "dst": "memory://B/p/é", "v": 1}\n'
        '{"event": "summary", "command": "rm", "src": "memory://B/p/", "ok": true, "deleted": 4, "failed": 0, "dry_run": true, "resumed_deleted": 0, "fatal": null, "requests": {...}, "estimate": {"requests": {...}, "bytes": 0}, "v": 1}\n',
        '',
    ],
    'rm-human': [
        '',
        'deleted 4 objects\n',
    ],
    'rm-human-v': [
        'delete: memory://B/p/a\n'
        'delete: memory://B/p/b\n'
        'delete: memory://B/p/c\\nd\n'
        'delete: memory://B/p/é\n',
        'deleted 4 objects\n',
    ],
    'rm-json': [
        '{"event": "start", "command": "rm", "src": "memory://B/p/", "dst": null, "v": 1}\n'
        '{"event": "summary", "command": "rm", "src": "memory://B/p/", "ok": true, "deleted": 4, "failed": 0, "dry_run": false, "resumed_deleted": 0, "fatal": null, "requests": {...}, "estimate": null, "v": 1}\n',
        '',
    ],
    'rm-json-v': [
        '{"event": "start", "command": "rm", "src": "memory://B/p/", "dst": null, "v": 1}\n'
        '{"event": "deleted", "action": "delete", "dst": "memory://B/p/a", "v": 1}\n'
        '{"event": "deleted", "action": "delete", "dst": "memory://B/p/b", "v": 1}\n'
        '{"event": "deleted", "action": "delete", "dst": "memory://B/p/c\\nd", "v": 1}\n'
        '{"event": "deleted", "action": "delete", "dst": "memory://B/p/é", "v": 1}\n'
        '{"event": "summary", "command": "rm", "src": "memory://B/p/", "ok": true, "deleted": 4, "failed": 0, "dry_run": false, "resumed_deleted": 0, "fatal": null, "requests": {...}, "estimate": null, "v": 1}\n',
        '',
    ],
    'rm-refused-human': [
        'delete: memory://B/p/a\n'
        'delete: memory://B/p/c\\nd\n'
        'delete: memory://B/p/é\n',
        'ERROR delete memory://B/p/b: delete memory://B/p/b: injected fault\n'
        'deleted 3 objects, 1 failure; after fixing the cause, the same command with --resume retries the rest\n',
    ],
    'rm-refused-json': [
        '{"event": "start", "command": "rm", "src": "memory://B/p/", "dst": null, "v": 1}\n'
        '{"event": "deleted", "action": "delete", "dst": "memory://B/p/a", "v": 1}\n'
        '{"event": "failure", "op": "delete", "src": "memory://B/p/b", "error": "delete memory://B/p/b: injected fault", "v": 1}\n'
        '{"event": "deleted", "action": "delete", "dst": "memory://B/p/c\\nd", "v": 1}\n'
        '{"event": "deleted", "action": "delete", "dst": "memory://B/p/é", "v": 1}\n'
        '{"event": "summary", "command": "rm", "src": "memory://B/p/", "ok": false, "deleted": 3, "failed": 1, "dry_run": false, "resumed_deleted": 0, "fatal": null, "requests": {...}, "estimate": null, "v": 1}\n',
        '',
    ],
    'rm-usage-human': [
        '',
        's3bulk: error: --suffix goes with --backup-dir\n',
    ],
    'rm-usage-json': [
        '{"event": "start", "command": "rm", "src": "memory://B/p/", "dst": null, "v": 1}\n'
        '{"event": "error", "error": "--suffix goes with --backup-dir", "v": 1}\n'
        '{"event": "summary", "command": "rm", "src": "memory://B/p/", "ok": false, "deleted": 0, "failed": 0, "dry_run": false, "resumed_deleted": 0, "fatal": "--suffix goes with --backup-dir", "v": 1}\n',
        's3bulk: error: --suffix goes with --backup-dir\n',
    ],
    'rm-versions-dry-json': [
        0,
        '{"event": "start", "command": "rm", "src": "s3://SRC/h/", "dst": null, "v": 1}\n'
        '{"event": "dryrun", "action": "delete", "dst": "s3://SRC/h/doc.txt?versionId=V", "v": 1}\n'
        '{"event": "dryrun", "action": "delete", "dst": "s3://SRC/h/doc.txt?versionId=V", "v": 1}\n'
        '{"event": "dryrun", "action": "delete", "dst": "s3://SRC/h/doc.txt?versionId=V", "v": 1}\n'
        '{"event": "dryrun", "action": "delete", "dst": "s3://SRC/h/doc.txt?versionId=V", "v": 1}\n'
        '{"event": "dryrun", "action": "delete", "dst": "s3://SRC/h/keep.txt?versionId=V", "v": 1}\n'
        '{"event": "summary", "command": "rm", "src": "s3://SRC/h/", "ok": true, "deleted": 5, "failed": 0, "dry_run": true, "resumed_deleted": 0, "fatal": null, "requests": {...}, "estimate": {"requests": {...}, "bytes": 0}, "v": 1}\n',
        '',
    ],
    'rm-versions-human-v': [
        0,
        'delete: s3://DST/h2/doc.txt?versionId=V\n'
        'delete: s3://DST/h2/doc.txt?versionId=V\n'
        'delete: s3://DST/h2/doc.txt?versionId=V\n'
        'delete: s3://DST/h2/keep.txt?versionId=V\n',
        'deleted 4 objects\n',
    ],
    'rm-versions-json': [
        0,
        '{"event": "start", "command": "rm", "src": "s3://SRC/h/", "dst": null, "v": 1}\n'
        '{"event": "summary", "command": "rm", "src": "s3://SRC/h/", "ok": true, "deleted": 5, "failed": 0, "dry_run": false, "resumed_deleted": 0, "fatal": null, "requests": {...}, "estimate": null, "v": 1}\n',
        '',
    ],
    'uploads-dry-human': [
        '(dryrun) abort: memory://B/p/big?uploadId=U0\n'
        '(dryrun) abort: memory://B/p/big2?uploadId=U1\n',
        'would abort 2 incomplete uploads\n',
    ],
    'uploads-dry-json': [
        '{"event": "start", "command": "rm", "src": "memory://B/p/", "dst": null, "v": 1}\n'
        '{"event": "dryrun", "action": "abort", "dst": "memory://B/p/big?uploadId=U0", "key": "p/big", "upload_id": "U0", "initiated": T, "v": 1}\n'
        '{"event": "dryrun", "action": "abort", "dst": "memory://B/p/big2?uploadId=U1", "key": "p/big2", "upload_id": "U1", "initiated": T, "v": 1}\n'
        '{"event": "summary", "command": "rm", "src": "memory://B/p/", "ok": true, "aborted": 2, "failed": 0, "dry_run": true, "fatal": null, "v": 1}\n',
        '',
    ],
    'uploads-human-v': [
        'abort: memory://B/p/big?uploadId=U0\n'
        'abort: memory://B/p/big2?uploadId=U1\n',
        'aborted 2 incomplete uploads\n',
    ],
    'uploads-json': [
        '{"event": "start", "command": "rm", "src": "memory://B/p/", "dst": null, "v": 1}\n'
        '{"event": "aborted", "action": "abort", "dst": "memory://B/p/big?uploadId=U0", "key": "p/big", "upload_id": "U0", "initiated": T, "v": 1}\n'
        '{"event": "aborted", "action": "abort", "dst": "memory://B/p/big2?uploadId=U1", "key": "p/big2", "upload_id": "U1", "initiated": T, "v": 1}\n'
        '{"event": "summary", "command": "rm", "src": "memory://B/p/", "ok": true, "aborted": 2, "failed": 0, "dry_run": false, "fatal": null, "v": 1}\n',
        '',
    ],
    'uploads-usage-json': [
        '{"event": "start", "command": "rm", "src": "memory://B/p/", "dst": null, "v": 1}\n'
        '{"event": "error", "error": "--resume does not go with --incomplete-uploads", "v": 1}\n'
        '{"event": "summary", "command": "rm", "src": "memory://B/p/", "ok": false, "aborted": 0, "failed": 0, "dry_run": false, "fatal": "--resume does not go with --incomplete-uploads", "v": 1}\n',
        's3bulk: error: --resume does not go with --incomplete-uploads\n',
    ],
}
