"""The human summary printed without rich when stdout is not a terminal (cli/render.py _grid_text)
is byte for byte what rich prints: a script that reads `s3bulk copy`'s summary from a pipe sees
no change, and the run never imports rich for it (~25 ms of a one-object copy's start)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from s3bulk.cli import render
from s3bulk.model import Counters, Summary

pytestmark = pytest.mark.unit


def _summaries() -> list[tuple[str, Summary, bool]]:
    c = Counters(listed=12, listed_bytes=88, done=10, done_bytes=80, skipped=2, skipped_bytes=8, deleted=1,
                 server_side=3, retries=2, throttled=1, concurrency=64)
    return [
        ("copy", Summary(counters=Counters(listed=1, done=1, done_bytes=1 << 30), elapsed=2.7, workers=2), False),
        ("sync", Summary(counters=c, elapsed=0.05, cpu_seconds=0.2, peak_rss_bytes=90 << 20), True),
        ("sync", Summary(counters=c, elapsed=0.05, dry_run=True), False),
        ("copy", Summary(counters=Counters(listed=3, done=1, failed=2), failures=[],
                         elapsed=1.0, interrupted=True), False),
        ("check", Summary(counters=Counters(listed=13, done=1, skipped=12, skipped_bytes=87), check=True), False),
        ("copy", Summary(counters=c, capped="max-transfer", open_uploads=["s3://b/k?uploadId=1"]), True),
    ]


@pytest.mark.parametrize("case", range(len(_summaries())))
@pytest.mark.parametrize("dst", ["s3://bucket/prefix/", "s3://bucket/" + "a-long-prefix/" * 6, "s3://b/\u00e9t\u00e9/"])
def test_plain_summary_is_what_rich_prints(case, dst, capsys, monkeypatch):
    command, summary, verbose = _summaries()[case]
    for name in render._RICH_ENVIRON + ("COLUMNS",):
        monkeypatch.delenv(name, raising=False)

    took: list[bool] = []
    grid_text = render._grid_text

    def spy(rows):
        text = grid_text(rows)
        took.append(text is not None)
        return text

    def printed(plain: bool) -> str:
        monkeypatch.setattr(render, "_grid_text", spy if plain else lambda rows: None)
        r = render.HumanRenderer(command, "dir/", dst, live=False, verbose=verbose)
        r.finish(summary)
        return capsys.readouterr().out

    plain, rich = printed(True), printed(False)
    assert plain == rich
    # a summary whose rows fit in 80 columns of ASCII is printed without rich (the last case's
    # "left open" row is longer: rich wraps it)
    assert took == [dst == "s3://bucket/prefix/" and case != len(_summaries()) - 1]
    assert plain.count("\n") >= 3


def test_a_summary_without_a_terminal_imports_no_rich(tmp_path):
    """The plain path is taken (not rich's) for a summary that fits: rich is never imported."""
    code = ("import sys\nfrom s3bulk.cli.render import HumanRenderer\nfrom s3bulk.model import Summary\n"
            "HumanRenderer('copy', 'a/', 'b/', live=False).finish(Summary())\n"
            "print('rich' in sys.modules, file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PATH": "/usr/bin:/bin"})
    assert done.stderr.strip() == "False", done
    assert done.stdout.startswith("copy    a/ -> b/   [done]"), done
