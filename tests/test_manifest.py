"""`--files-from`: the keys to copy come from a manifest instead of a listing, through the real
CLI against LocalStack. Keys the source lacks are reported one by one and the run exits 1; the
rest is copied; nothing else under the prefix is touched."""

from __future__ import annotations

import subprocess
import sys
from urllib.parse import quote_plus

from conftest import ROOT, put_tree, read_tree


def fill(s3, bucket: str) -> dict[str, bytes]:
    objects = {f"data/d{i % 4}/f{i:03d} ü😀.bin": f"body {i}".encode() for i in range(60)}
    put_tree(s3, bucket, objects)
    return objects


def test_files_from_lines_copies_exactly_the_named_keys(cli, s3, bucket, tmp_path):
    objects = fill(s3, bucket)
    wanted = sorted(objects)[::3]
    manifest = tmp_path / "keys.txt"
    names = [k[len("data/"):] for k in wanted] + ["d0/missing-one", "d9/missing-two"]
    manifest.write_text("\n".join(names[:5]) + "\n\n" + "\r\n".join(names[5:]) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    r = cli("copy", f"s3://{bucket}/data/", str(out), "--files-from", str(manifest), "--page-size", "7",
            "--json", "--no-journal")
    assert r.code == 1, r
    assert read_tree(out) == {k[len("data/"):]: objects[k] for k in wanted}
    failures = [e for e in r.events if e.get("event") == "failure"]
    assert sorted(f["src"] for f in failures) == [f"s3://{bucket}/data/d0/missing-one",
                                                  f"s3://{bucket}/data/d9/missing-two"], failures
    assert all("no such key" in f["error"] for f in failures), failures
    assert r.summary["copied"] == len(wanted) and r.summary["failed"] == 2, r.summary


def test_files_from_batch_operations_csv_and_stdin(cli, s3, bucket, make_bucket, tmp_path, endpoint, state_home):
    objects = fill(s3, bucket)
    wanted = sorted(objects)[1::4]
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("".join(f"{bucket},{quote_plus(k)}\n" for k in wanted), encoding="utf-8")
    dst = make_bucket()
    r = cli("copy", f"s3://{bucket}/data/", f"s3://{dst}/copy/", "--files-from", str(manifest), "--json")
    assert r.code == 0, r
    got = {o["Key"] for o in s3.list_objects_v2(Bucket=dst).get("Contents", [])}
    assert got == {"copy/" + k[len("data/"):] for k in wanted}
    assert r.summary["server_side_copies"] == len(wanted), r.summary  # sizes known: CopyObject

    # '-' reads the manifest from stdin
    out = tmp_path / "stdin-out"
    proc = subprocess.run([sys.executable, "-m", "s3bulk", "copy", f"s3://{bucket}/data/", str(out),
                           "--files-from", "-", "--endpoint-url", endpoint, "--quiet"],
                          input="\n".join(k[len("data/"):] for k in wanted[:3]), capture_output=True, text=True,
                          cwd=ROOT, env={**__import__("os").environ, "XDG_STATE_HOME": state_home}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert read_tree(out) == {k[len("data/"):]: objects[k] for k in wanted[:3]}


def test_files_from_bad_input_is_one_line(cli, bucket, tmp_path):
    r = cli("copy", f"s3://{bucket}/", str(tmp_path / "o"), "--files-from", str(tmp_path / "nope.txt"))
    assert r.code == 2 and r.err.count("\n") == 1 and "cannot read --files-from" in r.err, r
    (tmp_path / "k.txt").write_text("key\n")
    for fmt in ("changes", "json"):  # "changes" is sync --watch's own, not the command line's
        r = cli("copy", f"s3://{bucket}/", str(tmp_path / "o"), "--files-from", str(tmp_path / "k.txt"),
                "--files-from-format", fmt)
        assert r.code == 2 and r.err.count("\n") == 1 and "--files-from-format must be one of" in r.err, r
    assert not (tmp_path / "o").exists()
    (tmp_path / "k.csv").write_text(f"other-bucket,key\n")
    r = cli("copy", f"s3://{bucket}/", str(tmp_path / "o"), "--files-from", str(tmp_path / "k.csv"), "--json")
    assert r.code == 1, r
    assert "not SRC's bucket" in r.out, r


def inventory_report(source_bucket: str, rows: list[list[str]], files: int = 2,
                     md5_ok: bool = True) -> dict[str, bytes]:
    """An S3 Inventory report as S3 writes it: gzip'd CSV data files under data/ and a manifest.json
    naming them with their MD5, keyed as in the inventory's destination bucket."""
    import csv
    import gzip
    import hashlib
    import io
    import json

    base = f"inv/{source_bucket}/daily"
    out: dict[str, bytes] = {}
    entries = []
    for i in range(files):
        text = io.StringIO()
        csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows[i::files])
        body = gzip.compress(text.getvalue().encode())
        key = f"{base}/data/{i:02d}-{hashlib.md5(body).hexdigest()[:8]}.csv.gz"
        out[key] = body
        entries.append({"key": key, "size": len(body),
                        "MD5checksum": hashlib.md5(body).hexdigest() if md5_ok else "0" * 32})
    out[f"{base}/2026-11-22T01-00Z/manifest.json"] = json.dumps({
        "sourceBucket": source_bucket, "destinationBucket": "arn:aws:s3:::inv", "version": "2016-11-30",
        "fileFormat": "CSV", "fileSchema": "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size",
        "files": entries}).encode()
    return out


def inventory_rows(bucket: str, objects: dict[str, bytes], wanted: list[str]) -> list[list[str]]:
    rows = [[bucket, quote_plus(k), "v1", "true", "false", str(len(objects[k]))] for k in wanted]
    rows.append([bucket, quote_plus("data/old-version-only"), "v0", "false", "false", "5"])
    rows.append([bucket, quote_plus("data/deleted"), "v2", "true", "true", ""])
    rows.append([bucket, quote_plus("data/d1/gone since the report"), "v3", "true", "false", "7"])
    return rows


def test_files_from_s3_inventory_report(cli, s3, bucket, make_bucket, tmp_path):
    """An S3 Inventory report, in S3 and as a local copy, names the keys: its current versions are
    copied, old versions and delete markers are left out, a key deleted since is reported (exit 1)."""
    objects = fill(s3, bucket)
    wanted = sorted(objects)[::2]
    report = inventory_report(bucket, inventory_rows(bucket, objects, wanted))
    inv = make_bucket()
    put_tree(s3, inv, report)
    manifest_key = next(k for k in report if k.endswith("manifest.json"))
    expect = {k[len("data/"):]: objects[k] for k in wanted}

    out = tmp_path / "from-s3"
    r = cli("copy", f"s3://{bucket}/data/", str(out), "--files-from", f"s3://{inv}/{manifest_key}",
            "--page-size", "9", "--json", "--no-journal")
    assert r.code == 1, r
    assert read_tree(out) == expect
    failures = [e["src"] for e in r.events if e.get("event") == "failure"]
    assert failures == [f"s3://{bucket}/data/d1/gone since the report"], failures

    local = tmp_path / "inventory-copy"  # the inventory's destination mirrored to disk
    for key, body in report.items():
        (local / key).parent.mkdir(parents=True, exist_ok=True)
        (local / key).write_bytes(body)
    out = tmp_path / "from-local"
    r = cli("copy", f"s3://{bucket}/data/", str(out), "--files-from", str(local / manifest_key), "--json",
            "--no-journal")
    assert r.code == 1 and read_tree(out) == expect, r


def test_files_from_inventory_refuses_what_it_cannot_read(cli, bucket, tmp_path):
    """An ORC inventory, a data file that does not match the manifest's MD5, a missing data file:
    one line each, exit 2, nothing written."""
    import json

    def write(report: dict[str, bytes], root: str) -> str:
        for key, body in report.items():
            (tmp_path / root / key).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / root / key).write_bytes(body)
        return str(tmp_path / root / next(k for k in report if k.endswith("manifest.json")))

    rows = [[bucket, "data%2Fx", "v", "true", "false", "1"]]
    bad_md5 = write(inventory_report(bucket, rows, files=1, md5_ok=False), "md5")
    report = inventory_report(bucket, rows, files=1)
    manifest_key = next(k for k in report if k.endswith("manifest.json"))
    orc = dict(report)
    doc = json.loads(orc[manifest_key])
    doc["fileFormat"] = "ORC"
    orc[manifest_key] = json.dumps(doc).encode()
    orc_path = write(orc, "orc")
    missing = write({manifest_key: report[manifest_key]}, "missing")
    for path, why in ((bad_md5, "MD5"), (orc_path, "only CSV"), (missing, "not found")):
        out = tmp_path / "out"
        r = cli("copy", f"s3://{bucket}/data/", str(out), "--files-from", path)
        assert r.code == 2, r
        assert why in r.err and len(r.err.strip().splitlines()) == 1, r.err
        assert "Traceback" not in r.err and not out.exists()
