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
    (tmp_path / "k.csv").write_text(f"other-bucket,key\n")
    r = cli("copy", f"s3://{bucket}/", str(tmp_path / "o"), "--files-from", str(tmp_path / "k.csv"), "--json")
    assert r.code == 1, r
    assert "not SRC's bucket" in r.out, r
