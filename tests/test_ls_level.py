"""`ls --no-recursive`: one level under URL, its objects and each prefix below it once, in key order,
from every kind of store (memory and local files here; S3 on both data paths and an `s3bulk serve`
server through the CLI). The store side of it is the contract case `lists_one_level`."""

from __future__ import annotations

import json
import uuid

import pytest

from conftest import write_tree
from s3bulk.cli import main
from s3bulk.engine.actions.ls import list_levels, stepped
from s3bulk.stores import memory

KEYS = {"a.txt": b"aaa", "a/1": b"1", "a/b/2": b"22", "a-b": b"x", "b/3": b"333", "z": b"zz", "日本/語": b"j"}
# what one level of KEYS' root shows, in key order (UTF-8 bytes): objects by key, prefixes with their "/"
ROOT_LEVEL = ["a-b", "a.txt", "a/", "b/", "z", "日本/"]


def run_ls(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(["ls", *args])
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


def rows(text: str) -> list[str]:
    """The key or prefix each line of ls's text names."""
    return [line.split()[-1] for line in text.splitlines()]


@pytest.fixture
def mem_bucket():
    name = f"lvl-{uuid.uuid4().hex[:10]}"
    for k, v in KEYS.items():
        memory.bucket(name).put(k, v)
    yield name
    memory.drop(name)


@pytest.mark.unit
def test_one_level_of_a_bucket_text_and_totals(capsys, mem_bucket):
    code, out, err = run_ls(capsys, f"memory://{mem_bucket}/", "--no-recursive")
    assert code == 0, err
    assert rows(out) == ROOT_LEVEL
    lines = out.splitlines()
    assert lines[2] == " " * 29 + "PRE a/"  # aws s3 ls's layout: PRE under the size column
    assert lines[2].index("PRE a/") + 3 == lines[1].index("3 a.txt") + 1  # the size's last digit
    assert err.strip() == "3 prefixes, 3 objects, 6 bytes"  # what this level holds, not what is below it


@pytest.mark.unit
def test_one_level_as_json_lines(capsys, mem_bucket):
    code, out, _ = run_ls(capsys, f"memory://{mem_bucket}/a/", "--no-recursive", "--json")
    assert code == 0
    got = [json.loads(line) for line in out.splitlines()]
    assert got[0]["key"] == "a/1" and got[0]["size"] == 1
    assert got[1:] == [{"prefix": "a/b/"}]


@pytest.mark.unit
def test_pages_of_a_level_in_order_each_prefix_once(mem_bucket):
    pages = list(stepped(list_levels(f"memory://{mem_bucket}/", page_size=2)))
    assert len(pages) == 3
    assert sorted([e.key for p in pages for e in p.entries] + [x for p in pages for x in p.prefixes],
                  key=str.encode) == ROOT_LEVEL


@pytest.mark.unit
def test_one_level_of_a_directory_and_of_one_file(capsys, tmp_path):
    write_tree(tmp_path, KEYS)
    (tmp_path / "empty").mkdir()
    code, out, err = run_ls(capsys, str(tmp_path), "--no-recursive")
    assert code == 0, err
    assert rows(out) == ["a-b", "a.txt", "a/", "b/", "empty/", "z", "日本/"]
    code, out, _ = run_ls(capsys, str(tmp_path / "a"), "--no-recursive")
    assert rows(out) == ["1", "b/"]  # keys relative to the directory URL names, as `ls` prints them
    code, out, _ = run_ls(capsys, str(tmp_path / "z"), "--no-recursive")
    assert rows(out) == ["z"]


@pytest.mark.unit
def test_no_recursive_with_all_versions_is_one_line(capsys, mem_bucket):
    code, out, err = run_ls(capsys, f"memory://{mem_bucket}/", "--no-recursive", "--all-versions")
    assert code == 2 and not out
    assert err.count("\n") == 1 and "--no-recursive" in err and "Traceback" not in err


@pytest.mark.parametrize("data_path", ["lean", "botocore"])
def test_one_level_of_s3(cli, s3, bucket, data_path):
    for k, v in KEYS.items():
        s3.put_object(Bucket=bucket, Key=k, Body=v)
    r = cli("ls", f"s3://{bucket}/", "--no-recursive", "--json", env={"S3BULK_DATA_PATH": data_path})
    assert r.code == 0, r.err
    got = [json.loads(line) for line in r.out.splitlines()]
    assert [g.get("key", g.get("prefix")) for g in got] == ROOT_LEVEL
    assert got[0]["size"] == 1 and got[0]["etag"]


def test_one_level_of_a_list_get_server(tmp_path, cli, listget_server):
    write_tree(tmp_path / "served", KEYS)
    url = listget_server(str(tmp_path / "served"), "--page-size", "2", "--processes", "1")
    r = cli("ls", url + "/", "--no-recursive")
    assert r.code == 0, r.err
    assert rows(r.out) == ROOT_LEVEL
    assert r.err.strip() == "3 prefixes, 3 objects, sizes unknown (the listing gives none)"
