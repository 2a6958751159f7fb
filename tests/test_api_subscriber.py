"""A run's events reach a Subscriber as typed, frozen dataclasses, one method per kind, through
real runs on the in-memory store (the engine's workers, coordinator and journal as ever)."""

from __future__ import annotations

import dataclasses

import pytest

import s3bulk
from s3bulk.engine import events as ev
from s3bulk.engine.plan import TransferOptions
from s3bulk.errors import AccessDenied, SourceChanged, UsageError

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)

ONE = TransferOptions(workers=1, concurrency=4, retries=1)


class Recorder(s3bulk.Subscriber):
    """Every event with the name of the method that received it."""

    def __init__(self) -> None:
        self.got: list[tuple[str, object]] = []

    def on_progress(self, event: s3bulk.Progress) -> None:
        self.got.append(("on_progress", event))

    def on_failure(self, event: s3bulk.Failure) -> None:
        self.got.append(("on_failure", event))

    def on_stopping(self, event: s3bulk.Stopping) -> None:
        self.got.append(("on_stopping", event))

    def on_notice(self, event: s3bulk.Notice) -> None:
        self.got.append(("on_notice", event))

    def on_copied(self, event: s3bulk.Copied) -> None:
        self.got.append(("on_copied", event))

    def on_deleted(self, event: s3bulk.Deleted) -> None:
        self.got.append(("on_deleted", event))

    def on_skipped(self, event: s3bulk.Skipped) -> None:
        self.got.append(("on_skipped", event))

    def on_restarted(self, event: s3bulk.Restarted) -> None:
        self.got.append(("on_restarted", event))

    def on_dry_run(self, event: s3bulk.DryRunAction) -> None:
        self.got.append(("on_dry_run", event))

    def on_difference(self, event: s3bulk.Difference) -> None:
        self.got.append(("on_difference", event))

    def on_watch_status(self, event: s3bulk.WatchStatus) -> None:
        self.got.append(("on_watch_status", event))

    def of(self, method: str) -> list:
        return [e for m, e in self.got if m == method]


@pytest.fixture
def two(two_memory_buckets):
    return two_memory_buckets  # conftest.py's


def test_a_copy_tells_a_subscriber_each_kind_by_its_method(two, tmp_path):
    s, sb, _, _ = two
    for i in range(5):
        sb.put(f"k{i}", bytes([65 + i]) * (10 + i))
    sb.put("refused", b"r")
    sb.inject("get", key="refused", error=AccessDenied, times=-1)
    sb.inject("get", key="k2", error=SourceChanged, times=1)  # changed while read: starts over once
    rec = Recorder()
    summary = s3bulk.copy(f"memory://{s}/", str(tmp_path / "out"), options=ONE, subscriber=rec,
                          report_objects=True)
    assert summary.counters.done == 5 and summary.counters.failed == 1
    assert {m for m, _ in rec.got} == {"on_progress", "on_failure", "on_copied", "on_restarted"}
    for method, event in rec.got:  # each method got its own type, frozen
        assert type(event).__name__.lower() == method[3:].replace("_", ""), (method, event)
        if dataclasses.fields(event):
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(event, dataclasses.fields(event)[0].name, None)
    copied = sorted((e.src, e.dst, e.size) for e in rec.of("on_copied"))
    assert copied == [(f"memory://{s}/k{i}", str(tmp_path / "out" / f"k{i}"), 10 + i) for i in range(5)]
    [failure] = rec.of("on_failure")
    assert (failure.op, failure.src, failure.kind) == ("get", f"memory://{s}/refused", "AccessDenied")
    [restarted] = rec.of("on_restarted")
    assert restarted.src == f"memory://{s}/k2" and restarted.reason == "source changed during the copy"
    assert (tmp_path / "out" / "k2").read_bytes() == b"C" * 12
    progress = rec.of("on_progress")
    assert progress[-1].listing_done and progress[-1].counters.done == 5
    assert progress[0].counters is not progress[-1].counters, "each Progress holds its own counts"


def test_dry_run_check_move_and_rm_events(two, capfd):
    s, sb, d, db = two
    for k in ("a", "b", "same"):
        sb.put(f"src/{k}", k.encode())
    db.put("dst/same", b"same")
    db.put("dst/extra", b"x")
    rec = Recorder()
    dry = s3bulk.sync(f"memory://{s}/src/", f"memory://{d}/dst/", delete=True, dry_run=True, options=ONE,
                      subscriber=rec)
    assert dry.ok and dry.dry_run
    assert sorted((e.action, e.dst) for e in rec.of("on_dry_run")) == [
        ("copy", f"memory://{d}/dst/a"), ("copy", f"memory://{d}/dst/b"), ("delete", f"memory://{d}/dst/extra")]
    assert capfd.readouterr().out == "", "a library call prints nothing"

    rec = Recorder()
    found = s3bulk.check(f"memory://{s}/src/", f"memory://{d}/dst/", options=ONE, subscriber=rec)
    assert not found.identical
    assert sorted((e.kind, e.dst) for e in rec.of("on_difference")) == [
        ("only-in-dst", f"memory://{d}/dst/extra"), ("only-in-src", f"memory://{d}/dst/a"),
        ("only-in-src", f"memory://{d}/dst/b")]

    rec = Recorder()
    moved = s3bulk.move(f"memory://{s}/src/", f"memory://{d}/moved/", options=ONE, subscriber=rec,
                        report_objects=True)
    assert moved.ok and sb.contents("src/") == {}
    assert sorted((e.side, e.url) for e in rec.of("on_deleted")) == [
        ("src", f"memory://{s}/src/{k}") for k in ("a", "b", "same")]

    rec = Recorder()
    assert s3bulk.rm(f"memory://{d}/moved/", dry_run=True, subscriber=rec).deleted == 3
    assert [e.action for e in rec.of("on_dry_run")] == ["delete"] * 3 and db.contents("moved/")
    rec = Recorder()
    assert s3bulk.rm(f"memory://{d}/moved/", subscriber=rec).deleted == 3
    assert sorted(e.url for e in rec.of("on_deleted")) == [f"memory://{d}/moved/{k}" for k in ("a", "b", "same")]
    assert {e.side for e in rec.of("on_deleted")} == {"dst"} and db.contents("moved/") == {}


def test_a_plain_function_is_refused_as_subscriber(two, tmp_path):
    """The older on_event(kind, payload) callback is gone (issue 34): a function given as the
    subscriber is refused in one line, before anything runs."""
    s, sb, _, _ = two
    sb.put("k", b"abc")
    with pytest.raises(UsageError, match="s3bulk.Subscriber"):
        s3bulk.copy(f"memory://{s}/", str(tmp_path), subscriber=print)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        s3bulk.copy(f"memory://{s}/", str(tmp_path), on_event=print)  # type: ignore[call-arg]
    assert not list(tmp_path.iterdir())


def test_every_event_type_has_its_method_and_the_base_ignores_them():
    samples = [s3bulk.Progress(s3bulk.api.Summary().counters, True, 0.0, 1), s3bulk.Failure("copy", "a", "b", "why"),
               s3bulk.Stopping(), s3bulk.Notice("n"), s3bulk.Copied("a", "b", 1), s3bulk.Deleted("a", "src"),
               s3bulk.Restarted("a", "b", "r"), s3bulk.DryRunAction("delete", None, "b"),
               s3bulk.Difference("differs", "a", "b"), s3bulk.WatchStatus(1.5, 3, None), s3bulk.Skipped("a", "b", 1)]
    assert {type(e) for e in samples} == set(typing_args(s3bulk.Event))
    rec = Recorder()
    for event in samples:
        s3bulk.Subscriber().notify(event)  # no-ops
        rec.notify(event)
    assert [m for m, _ in rec.got] == [ev._METHODS[type(e)] for e in samples]
    assert len(set(ev._METHODS.values())) == len(samples)


def typing_args(union: object) -> tuple:
    import typing

    return typing.get_args(union)
