"""The uploads a run's workers noted on disk (engine/journal/units.py UploadLog) folded into its journal's
uploads table on the next open: the table may hold any prefix of those notes already (the
coordinator committed them), so whatever moment a run died at, the table ends with what is open,
and an upload replaced without an end is handed back to be aborted."""

from __future__ import annotations

import pytest

from s3bulk.engine.journal.units import fold_upload_notes

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


def _start(key: str, upload_id: str | None, at: float) -> list:
    return ["upload", key, upload_id, 20, 5, 20, 1.0, "etag", at]


def _end(key: str, upload_id: str | None, at: float) -> list:
    return ["upload_end", key, upload_id, at]


def _row(key: str, upload_id: str | None, at: float = 0.0) -> dict:
    return dict(zip(("dst_key", "upload_id", "size", "part_size", "src_size", "src_mtime", "src_etag", "started"),
                    (key, upload_id, 20, 5, 20, 1.0, "etag", at)))


def _fold(table: dict, notes: list) -> tuple[dict, list]:
    _, doomed = fold_upload_notes(table, notes)
    return {k: r["upload_id"] for k, r in table.items()}, [r["upload_id"] for r in doomed]


def test_each_prefix_of_the_notes_in_the_table_ends_the_same():
    notes = [_start("k", None, 1), _start("k", "A", 2)]  # an intent, then the id: A is open
    assert _fold({}, notes) == ({"k": "A"}, [])
    assert _fold({"k": _row("k", None)}, notes) == ({"k": "A"}, [])
    assert _fold({"k": _row("k", "A")}, notes) == ({"k": "A"}, [])
    assert _fold({}, notes[:1]) == ({"k": None}, [])  # killed while CreateMultipartUpload was in flight
    done = notes + [_end("k", "A", 3)]
    for table in ({}, {"k": _row("k", None)}, {"k": _row("k", "A")}):
        assert _fold(table, done) == ({}, [])
    refused = [_start("k", None, 1), _end("k", None, 2)]  # the server refused it: nothing was made
    assert _fold({"k": _row("k", None)}, refused) == ({}, [])


def test_an_upload_replaced_without_its_end_is_handed_back_to_abort():
    resumed = [_start("k", "B", 5)]  # a resumed run continued B
    assert _fold({"k": _row("k", "B")}, resumed) == ({"k": "B"}, [])
    redone = [_end("k", "B", 5), _start("k", None, 6), _start("k", "A", 7)]  # B aborted, A begun
    assert _fold({"k": _row("k", "B")}, redone) == ({"k": "A"}, [])
    assert _fold({"k": _row("k", "B")}, redone[1:]) == ({"k": "A"}, ["B"])  # B's end never noted
    assert _fold({"k": _row("k", "B"), "other": _row("other", "C")}, redone) == ({"k": "A", "other": "C"}, [])
