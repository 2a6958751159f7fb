"""`ls`'s lines (cli/commands/ls.py LsLines), byte for byte as json.dumps and the text format make
them, whichever way a page is rendered: a column at a time (every size known) or entry by entry
(a list/get server's pages without sizes), for keys and ETags that need escaping or not."""

from __future__ import annotations

import gc
import json
import random
from datetime import datetime, timezone

import pytest

from s3bulk.cli.commands.ls import LsLines
from s3bulk.model import ObjectInfo

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

ODD = ['a"b', "back\\slash", "tab\there", "new\nline", "bell\x07", "caf\u00e9/\u00fc", "\u2028sep", "sur\udcffrogate",
       "emoji\U0001f600", "", " lead", '"', "\x00", "/"]


def _json_line(e: ObjectInfo) -> str:
    return json.dumps({"key": e.key, "size": e.size, "mtime": e.mtime, "etag": e.etag}, ensure_ascii=False)


def _text_line(e: ObjectInfo) -> str:
    when = "-" if e.mtime is None else datetime.fromtimestamp(e.mtime, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return f"{when} {e.size if e.size is not None else '-':>12} {e.key}"


def _pages(seed: int) -> list[list[ObjectInfo]]:
    rnd = random.Random(seed)
    pages = []
    for n in (1, 2, 7, 300, 1000):
        for odd_keys, odd_etags, sizes_known, etags_known in ((False, False, True, True), (True, False, True, True),
                                                              (False, True, True, True), (True, True, True, True),
                                                              (False, False, False, True), (False, False, True, False)):
            page = []
            for i in range(n):
                key = f"dir/{rnd.getrandbits(32):08x}/part-{i:04d}"
                if odd_keys and rnd.random() < 0.1:
                    key += rnd.choice(ODD)
                etag = f'"{rnd.getrandbits(128):032x}"'
                if odd_etags and rnd.random() < 0.1:
                    etag = rnd.choice(['"a\\b"', "plain", 'x"y', '"\n"'])
                size = rnd.choice([0, 1, 999, 10**12, 10**15]) if sizes_known or rnd.random() < 0.5 else None
                mtime = rnd.choice([1704067200.0, 1704067200.5, 1e9, 1704067201.0, None, 0.0])
                page.append(ObjectInfo(key, size, mtime, etag if etags_known or rnd.random() < 0.5 else None, "STANDARD"))
            pages.append(page)
    return pages


@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_lines_are_byte_for_byte_the_reference(json_out: bool) -> None:
    lines = LsLines(json_out)
    pages = _pages(7)
    line = _json_line if json_out else _text_line
    for page in pages:
        assert lines.render(page) == "".join(line(e) + "\n" for e in page)
    every = [e for page in pages for e in page]
    assert lines.render([]) == ""
    assert (lines.count, lines.total, lines.unsized) == (
        len(every), sum(e.size for e in every if e.size is not None), sum(e.size is None for e in every))


@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_many_distinct_seconds_keep_the_stamp_cache_bounded(json_out: bool) -> None:
    lines = LsLines(json_out)
    line = _json_line if json_out else _text_line
    for start in range(0, 12_000, 1000):
        page = [ObjectInfo(f"k{start + i:06d}", i, 1.6e9 + start + i, '"e"') for i in range(1000)]
        assert lines.render(page) == "".join(line(e) + "\n" for e in page)
        assert len(lines.stamps) <= 4097


@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_ls_of_a_directory_prints_the_reference_lines_and_puts_the_collector_back(tmp_path, json_out: bool) -> None:
    """The whole command on local files (names a JSON escape needs among plain ones, so a page goes
    either way): every line as the reference makes it, and the collector's thresholds, raised while
    ls lists, as they were."""
    from typer.testing import CliRunner

    from s3bulk.cli.app import app

    names = [f"f{i:03d}" for i in range(40)] + ['q"uote', "back\\slash", "caf\u00e9"]
    for i, name in enumerate(names):
        (tmp_path / name).write_bytes(b"x" * i)
    before = gc.get_threshold()
    run = CliRunner().invoke(app, ["ls", str(tmp_path), *(["--json"] if json_out else [])])
    assert run.exit_code == 0, run.output
    assert gc.get_threshold() == before
    printed = [line for line in run.stdout.splitlines() if line and not line.endswith("bytes")]
    assert len(printed) == len(names)
    if json_out:
        rows = [json.loads(line) for line in printed]
        assert printed == [json.dumps(r, ensure_ascii=False) for r in rows]
        assert sorted(r["key"] for r in rows) == sorted(names)
    else:
        assert [line[33:] for line in printed]  # after "date time", the size in 12 == sorted(names)
