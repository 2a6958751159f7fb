"""The Python API has rm, move (mv), du and check, thin over the same paths as the command line.
On the in-memory store (in-process, milliseconds)."""

from __future__ import annotations


import pytest

import s3bulk
from s3bulk.engine.plan import TransferOptions
from s3bulk.errors import UsageError

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

ONE = TransferOptions(workers=1, concurrency=4)


@pytest.fixture
def two(two_memory_buckets):
    return two_memory_buckets  # conftest.py's


def test_rm_with_filters_dry_run_and_journal(two, tmp_path):
    s, sb, _, _ = two
    for i in range(30):
        sb.put(f"p/{i:02d}.{'tmp' if i % 3 else 'keep'}", b"x")
    sb.put("q/other", b"y")
    dry = s3bulk.rm(f"memory://{s}/p/", dry_run=True)
    assert dry.ok and dry.deleted == 30 and len(list(sb.keys_after("", None))) == 31, "a dry run deletes nothing"
    seen: list[str] = []
    result = s3bulk.rm(f"memory://{s}/p/", exclude=["*.keep"], journal=str(tmp_path / "j"),
                       on_key=lambda url, why: seen.append(url))
    assert result.ok and result.deleted == 20 and len(seen) == 20, result
    assert set(sb.keys_after("", None)) == {f"p/{i:02d}.keep" for i in range(0, 30, 3)} | {"q/other"}
    assert not (tmp_path / "j").exists(), "a complete run removes its journal"
    with pytest.raises(UsageError, match="whole bucket"):
        s3bulk.rm(f"memory://{s}/")


def test_move_and_mv(two):
    s, sb, d, db = two
    for i in range(12):
        sb.put(f"src/k{i:02d}", bytes([i]) * (i + 1))
    summary = s3bulk.move(f"memory://{s}/src/", f"memory://{d}/dst/", options=ONE)
    assert summary.ok, summary
    assert set(db.keys_after("dst/", None)) == {f"dst/k{i:02d}" for i in range(12)}
    assert list(sb.keys_after("src/", None)) == [], "every source deleted once its copy landed"
    # s3bulk.mv, the command's name, is a deprecated alias of move: tests/test_api_names.py


def test_du(two):
    s, sb, _, _ = two
    for i in range(10):
        sb.put(f"logs/{'a' if i < 4 else 'b'}/{i}", b"x" * i)
    total = s3bulk.du(f"memory://{s}/logs/")
    assert (total.objects, total.bytes, total.groups) == (10, sum(range(10)), [])
    by = s3bulk.du(f"memory://{s}/logs/", depth=1)
    assert by.groups == [("a/", 4, sum(range(4))), ("b/", 6, sum(range(4, 10)))]


def test_check(two, capfd):
    s, sb, d, db = two
    for i in range(8):
        sb.put(f"t/{i}", b"same")
        db.put(f"t/{i}", b"same")
    assert s3bulk.check(f"memory://{s}/t/", f"memory://{d}/t/", options=ONE).identical
    db.put("t/3", b"SAME")   # same size, other bytes: seen only with checksum=True
    db.put("t/extra", b"e")  # only in DST
    db.remove("t/5")         # only in SRC
    before = db.contents()
    capfd.readouterr()
    sizes = s3bulk.check(f"memory://{s}/t/", f"memory://{d}/t/", options=ONE)
    assert not sizes.identical and (sizes.only_in_src_or_differs, sizes.only_in_dst) == (1, 1), sizes
    content = s3bulk.check(f"memory://{s}/t/", f"memory://{d}/t/", checksum=True, options=ONE)
    assert (content.only_in_src_or_differs, content.only_in_dst, content.identical_objects) == (2, 1, 6), content
    assert capfd.readouterr().out == "", "a library call prints nothing: the differences go to a subscriber"
    assert db.contents() == before, "check changes nothing"
