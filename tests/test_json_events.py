"""`--json` as a script reads it: every event kind the CLI emits checked against the schema table
of the docs (docs/reference/json-lines.md), per-object `copied`/`deleted` events behind `-v`, and
`start` + `summary` as the first and last lines even when the run cannot start. Real CLI, real
LocalStack."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT, put_tree, write_tree

W1 = ["--workers", "1"]


def _documented() -> dict[str, set[str]]:
    """{event: its fields} from the docs' `--json` table (names in backticks, outside parentheses)."""
    text = (ROOT / "docs" / "reference" / "json-lines.md").read_text()
    section = text.split("\n## Events\n", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for line in section.splitlines():
        m = re.match(r"\| `(\w+)` \| [^|]* \| (.*) \|$", line)
        if m:
            fields_text = re.sub(r"\([^()]*\)", "", m.group(2))
            table[m.group(1)] = set(re.findall(r"`(\w+)`", fields_text))
    assert {"start", "summary", "error", "copied", "deleted"} <= set(table), table
    return table


# fields that one of several documented alternatives may leave out
_ALTERNATIVES = {"deleted": [{"src"}, {"dst"}], "dryrun": [{"src"}]}


def _check_stream(events: list[dict], schema: dict[str, set[str]]) -> None:
    assert events, "no JSON lines"
    assert events[0]["event"] == "start" and events[-1]["event"] == "summary", [e["event"] for e in events]
    assert sum(e["event"] == "start" for e in events) == 1
    assert sum(e["event"] == "summary" for e in events) == 1
    for e in events:
        kind = e["event"]
        assert kind in schema, f"undocumented event {kind!r}: {e}"
        assert list(e)[0] == "event" and list(e)[-1] == "v" and e["v"] == 1, e
        fields = set(e) - {"event", "v"}
        assert fields <= schema[kind], f"{kind}: undocumented fields {fields - schema[kind]}"
        missing = schema[kind] - fields
        assert not missing or any(missing <= alt for alt in _ALTERNATIVES.get(kind, [])), \
            f"{kind}: documented fields missing {missing}: {e}"


def test_every_event_kind_matches_the_readme_schema(cli, s3, make_bucket, tmp_path):
    schema = _documented()
    seen: set[str] = set()

    def stream(run) -> list[dict]:
        events = run.events
        _check_stream(events, schema)
        seen.update(e["event"] for e in events)
        return events

    # sync up with -v: start, progress, copied (one per object), deleted (the extra DST key), summary
    src = tmp_path / "src"
    write_tree(src, {"a.txt": b"a", "d/b.txt": b"bb", "d/c.txt": b"ccc"})
    bucket = make_bucket()
    put_tree(s3, bucket, {"extra": b"x"})
    run = cli("sync", str(src), f"s3://{bucket}/", "--delete", "--json", "-v", *W1)
    assert run.code == 0, run
    events = stream(run)
    copied = {e["src"]: (e["dst"], e["size"]) for e in events if e["event"] == "copied"}
    assert copied == {str(src / k): (f"s3://{bucket}/{k}", n) for k, n in
                      (("a.txt", 1), ("d/b.txt", 2), ("d/c.txt", 3))}
    assert [e["dst"] for e in events if e["event"] == "deleted"] == [f"s3://{bucket}/extra"]
    assert run.summary["copied"] == 3 and run.summary["deleted"] == 1

    # without -v: the same run has no per-object events
    run = cli("copy", str(src), f"s3://{make_bucket()}/", "--json", *W1)
    assert run.code == 0 and not {"copied", "deleted"} & {e["event"] for e in stream(run)}, run

    # mv with -v: each source deleted once its copy landed
    run = cli("mv", f"s3://{bucket}/d/", str(tmp_path / "moved"), "--json", "-v", *W1)
    assert run.code == 0, run
    gone = sorted(e["src"] for e in stream(run) if e["event"] == "deleted")
    assert gone == [f"s3://{bucket}/d/b.txt", f"s3://{bucket}/d/c.txt"]

    # a failure (a key that is also a directory locally), and dry-run lines
    put_tree(s3, bucket, {"k": b"file", "k/child": b"c"})
    run = cli("copy", f"s3://{bucket}/", str(tmp_path / "conflict"), "--json", *W1)
    assert run.code == 1, run
    assert [e["kind"] for e in stream(run) if e["event"] == "failure"] == ["PathConflict"]
    run = cli("sync", f"s3://{bucket}/k/", str(tmp_path / "dry"), "--dry-run", "--json", *W1)
    assert run.code == 0 and "dryrun" in {e["event"] for e in stream(run)}, run

    assert {"start", "progress", "copied", "deleted", "failure", "dryrun", "summary"} <= seen


@pytest.mark.parametrize("args, code", [
    (["copy", "s3://no-such-bucket-ux15-json/", "OUT", "--json"], 3),     # the run cannot start
    (["sync", "SRC", "s3://no-such-bucket-ux15-json/", "--json"], 3),
    (["copy", "SRC", "OUT", "--json", "--endpoint-url", "ftp://nowhere"], 2),  # bad option value
    (["copy", "SRC", "OUT", "--json", "--workers", "-3"], 2),              # rejected by the parser
    (["copy", "SRC", "OUT", "--json", "--no-such-option"], 2),
])
def test_start_and_summary_even_when_the_run_cannot_start(cli, tmp_path, args, code):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "f").write_bytes(b"f")
    argv = [str(tmp_path / "src") if a == "SRC" else str(tmp_path / "out") if a == "OUT" else a for a in args]
    run = cli(*argv)
    assert run.code == code, run
    events = run.events
    _check_stream(events, _documented())
    assert [e["event"] for e in events] == ["start", "error", "summary"]
    summary = events[-1]
    assert summary["ok"] is False and summary["fatal"] == events[1]["error"] and summary["copied"] == 0
    assert "Traceback" not in run.err and len(run.err.strip().splitlines()) == 1, run.err


def test_a_run_that_has_to_stop_still_ends_with_error_and_summary(cli, s3, bucket, tmp_path):
    """Disk full mid-run (a 1 MiB tmpfs): the stream is start ... error, summary, exit 3."""
    import subprocess

    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        put_tree(s3, bucket, {f"f{i:03d}": bytes(20_000) for i in range(100)})  # 2 MB: about half fits
        run = cli("copy", f"s3://{bucket}/", str(mnt / "d"), "--json", "-w", "1", "-c", "2", "--no-journal")
        assert run.code == 3, run
        events = run.events
        _check_stream(events, _documented())
        assert [e["event"] for e in events][-2:] == ["error", "summary"]
        assert "no space left on device" in events[-2]["error"] and events[-1]["fatal"] == events[-2]["error"]
        assert events[-1]["ok"] is False and events[-1]["copied"] > 0
        assert len([ln for ln in run.err.splitlines() if ln.strip()]) == 1, run.err
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
