"""Summaries that tell the truth (issue 32 item 9): `check` speaks of differences, not of copies it
never makes, and its `ok` says whether the trees match; no summary or progress event carries a
figure that does not apply (server-side copies between two local paths, a listing "done" before
its counts, a total of 0 bytes for a listing that gives no sizes).

Real CLI runs on local directories, LocalStack and an `s3bulk serve` list/get server.
"""

from __future__ import annotations

import pytest

from conftest import put_tree, write_tree

CHECK_FIELDS = {"same", "differ", "only_in_src", "only_in_dst"}
COPY_ONLY = {"copied", "copied_bytes", "deleted", "dry_run", "server_side_copies", "estimate", "skipped"}


def _trees(tmp_path):
    """SRC and DST with 3 keys the same, 2 that differ, 1 only in SRC and 1 only in DST."""
    same = {"s1": b"1", "s2": b"22", "d/s3": b"333"}
    write_tree(tmp_path / "a", {**same, "x1": b"left", "x2": b"ab", "only-src": b"o"})
    write_tree(tmp_path / "b", {**same, "x1": b"right!", "x2": b"abc", "only-dst": b"p"})
    return str(tmp_path / "a"), str(tmp_path / "b")


def test_check_json_with_differences_is_not_ok(cli, tmp_path):
    a, b = _trees(tmp_path)
    r = cli("check", a, b, "--json")
    assert r.code == 1, r
    s = r.summary
    assert s["ok"] is False, s
    assert {k: s[k] for k in CHECK_FIELDS} == {"same": 3, "differ": 2, "only_in_src": 1, "only_in_dst": 1}, s
    assert not COPY_ONLY & set(s), s  # nothing of a copy that never happens
    kinds = sorted(e["kind"] for e in r.events if e["event"] == "difference")
    assert kinds == ["differs", "differs", "only-in-dst", "only-in-src"]


def test_check_json_that_cannot_run_keeps_checks_words(cli, tmp_path):
    """A check stopped before it compared anything (its SRC is missing) is not ok and still says so in
    check's fields, not a copy's."""
    (tmp_path / "b").mkdir()
    r = cli("check", str(tmp_path / "missing"), str(tmp_path / "b"), "--json")
    assert r.code not in (0, 1), r
    s = r.summary
    assert s["ok"] is False and s["fatal"], s
    assert CHECK_FIELDS <= set(s) and not COPY_ONLY & set(s), s


def test_check_text_speaks_of_differences(cli, tmp_path):
    a, b = _trees(tmp_path)
    r = cli("check", a, b)
    assert r.code == 1, r
    assert "would copy" not in r.out + r.err and "would delete" not in r.out + r.err, r
    assert "s3bulk check: 2 differ, 1 only in SRC, 1 only in DST, 3 the same" in r.err, r
    for row in ("same", "differ", "only in SRC", "only in DST"):
        assert row in r.out, r


def test_check_identical_is_ok_on_s3(cli, s3, bucket, tmp_path):
    tree = {"k1": b"one", "d/k2": b"two"}
    write_tree(tmp_path / "src", tree)
    put_tree(s3, bucket, tree)
    r = cli("check", str(tmp_path / "src"), f"s3://{bucket}/", "--json")
    assert r.code == 0, r
    s = r.summary
    assert s["ok"] is True and {k: s[k] for k in CHECK_FIELDS} == {"same": 2, "differ": 0, "only_in_src": 0,
                                                                    "only_in_dst": 0}, s
    s3.put_object(Bucket=bucket, Key="k1", Body=b"ONE!")
    r = cli("check", str(tmp_path / "src"), f"s3://{bucket}/", "--json")
    assert r.code == 1 and r.summary["ok"] is False and r.summary["differ"] == 1, r


@pytest.mark.unit
def test_check_api_result_and_summary_agree(tmp_path):
    import s3bulk

    a, b = _trees(tmp_path)
    result = s3bulk.check(a, b)
    assert (result.same, result.differ, result.only_in_src, result.only_in_dst) == (3, 2, 1, 1)
    assert not result.identical and result.summary.ok is False
    d = result.summary.to_dict()
    assert d["ok"] is False and {k: d[k] for k in CHECK_FIELDS} == {"same": 3, "differ": 2, "only_in_src": 1,
                                                                    "only_in_dst": 1}
    assert not COPY_ONLY & set(d)


def test_local_to_local_copy_counts_no_server_side_copies(cli, tmp_path):
    write_tree(tmp_path / "a", {f"f{i}": b"x" * i for i in range(20)})
    r = cli("copy", str(tmp_path / "a"), str(tmp_path / "b"), "--json")
    assert r.code == 0 and r.summary["copied"] == 20, r
    assert r.summary["server_side_copies"] == 0, r.summary
    r = cli("copy", str(tmp_path / "a"), str(tmp_path / "c"))
    assert r.code == 0 and "server-side" not in r.out, r


def test_server_side_copies_still_counted_on_s3(cli, s3, bucket, make_bucket):
    put_tree(s3, bucket, {"a": b"1", "b": b"2"})
    r = cli("copy", f"s3://{bucket}/", f"s3://{make_bucket()}/", "--json")
    assert r.code == 0 and r.summary["server_side_copies"] == 2, r.summary


@pytest.mark.parametrize("workers", ["1", "2"])
def test_progress_never_says_listing_done_before_its_counts(cli, tmp_path, workers):
    """Every progress event that says the listing is done carries every listed object."""
    write_tree(tmp_path / "a", {f"f{i:03d}": b"x" for i in range(300)})
    r = cli("copy", str(tmp_path / "a"), str(tmp_path / "b"), "--json", "--workers", workers)
    assert r.code == 0, r
    progress = [e for e in r.events if e["event"] == "progress"]
    assert progress, r
    for e in progress:
        if e["listing_done"]:
            assert (e["listed"], e["listed_bytes"]) == (300, 300), e


def test_ls_of_a_list_get_source_does_not_say_0_bytes(cli, listget_server):
    url = listget_server("--synthetic", "5", "--size", "64", "--processes", "1")
    r = cli("ls", url + "/")
    assert r.code == 0, r
    assert len(r.out.splitlines()) == 5, r
    assert "0 bytes" not in r.err and "5 objects, sizes unknown" in r.err, r


def test_du_of_a_list_get_source_says_sizes_are_unknown(cli, listget_server):
    url = listget_server("--synthetic", "5", "--size", "64", "--processes", "1")
    r = cli("du", url + "/")
    assert r.code == 0, r
    assert "5 of the objects were listed without a size" in r.err, r


def test_check_progress_speaks_of_differences(cli, tmp_path):
    """check's progress events carry its own counts, not a copy's (one is written at least at
    the start: the first progress event comes at once)."""
    a, b = _trees(tmp_path)
    r = cli("check", a, b, "--json")
    progress = [e for e in r.events if e["event"] == "progress"]
    assert progress, r
    for e in progress:
        assert CHECK_FIELDS <= set(e) and not {"copied", "deleted", "moved_bytes"} & set(e), e


def test_mv_summary_says_the_sources_were_deleted(cli, tmp_path):
    write_tree(tmp_path / "a", {"x": b"1", "y": b"2"})
    r = cli("mv", str(tmp_path / "a"), str(tmp_path / "b"))
    assert r.code == 0, r
    assert "2 source objects (moved)" in r.out, r
