"""An event that is a kind of another (engine/events.py: UploadAborted is a Deleted, UploadFound a
DryRunAction) reaches the method of the event it is a kind of, on any subscriber."""

from __future__ import annotations

import pytest

from s3bulk.engine import events as ev

pytestmark = pytest.mark.unit  # no server: runs in `pytest -m unit` (tests/conftest.py)


def test_an_event_kind_reaches_its_bases_method():
    kinds = {cls: base for cls in ev._METHODS for base in cls.__mro__[1:] if base in ev._METHODS}
    assert kinds == {ev.UploadAborted: ev.Deleted, ev.UploadFound: ev.DryRunAction}
    got: list[tuple[str, object]] = []

    class Seen(ev.Subscriber):
        def on_deleted(self, event: ev.Deleted) -> None:
            got.append(("on_deleted", event))

        def on_dry_run(self, event: ev.DryRunAction) -> None:
            got.append(("on_dry_run", event))

    aborted = ev.UploadAborted("memory://b/k?uploadId=u", "dst", key="k", upload_id="u", initiated=1.5)
    found = ev.UploadFound("delete", None, "memory://b/k?uploadId=u", "k", "u", None)
    Seen().notify(aborted)
    Seen().notify(found)
    assert got == [("on_deleted", aborted), ("on_dry_run", found)]
    assert aborted.json_fields() == {"event": "aborted", "action": "abort", "dst": "memory://b/k?uploadId=u",
                                     "key": "k", "upload_id": "u", "initiated": 1.5}
    assert found.json_fields()["event"] == "dryrun"
