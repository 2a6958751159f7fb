"""What a dry run would do, and what `check` found, as typed events for subscribers.

Workers send them to the coordinator in batches (messages.Planned); the coordinator hands each to
`on_event(event.event, event)` like failures and progress, and the subscriber decides what the user
sees: the CLI's renderers print `line()` or `json_fields()` on stdout, api.sync prints the lines
as it always did, an API caller may collect them. A worker never writes to stdout itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal, TextIO


@dataclass(frozen=True, slots=True)
class DryRunAction:
    """--dry-run: a copy or a delete that a real run would do."""

    event: ClassVar[str] = "dryrun"
    action: Literal["copy", "delete"]
    src: str | None  # None for a delete
    dst: str

    def line(self) -> str:
        if self.action == "copy":
            return f"(dryrun) copy: {self.src} -> {self.dst}"
        return f"(dryrun) delete: {self.dst}"

    def json_fields(self) -> dict[str, Any]:
        """The --json line without its schema version (the renderer adds "v")."""
        if self.src is None:
            return {"event": self.event, "action": self.action, "dst": self.dst}
        return {"event": self.event, "action": self.action, "src": self.src, "dst": self.dst}


@dataclass(frozen=True, slots=True)
class Difference:
    """`s3bulk check`: one key that is only in SRC, only in DST, or differs."""

    event: ClassVar[str] = "difference"
    kind: Literal["only-in-src", "differs", "only-in-dst"]
    src: str | None  # None for only-in-dst
    dst: str

    def line(self) -> str:
        if self.kind == "only-in-src":
            return one_line(f"{self.kind}: {self.src}")
        if self.kind == "differs":
            return one_line(f"{self.kind}: {self.src} <> {self.dst}")
        return one_line(f"{self.kind}: {self.dst}")

    def json_fields(self) -> dict[str, Any]:
        if self.src is None:
            return {"event": self.event, "kind": self.kind, "dst": self.dst}
        return {"event": self.event, "kind": self.kind, "src": self.src, "dst": self.dst}


PlannedEvent = DryRunAction | Difference


def one_line(text: str) -> str:
    """A key's control characters shown escaped: a newline in a key cannot forge another line."""
    return text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text


def write_line(out: TextIO, text: str) -> None:
    """One line of a dry run or `check`, unflushed (there may be millions; the next flush of `out`
    sends them in order with the rest). Keys that are not valid UTF-8 (local names) are written
    with backslash escapes rather than failing the run."""
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(text + "\n")
    else:
        buffer.write((text + "\n").encode("utf-8", "backslashreplace"))


def printing_lines(on_event: Callable[[str, Any], None] | None, out: TextIO) -> Callable[[str, Any], None]:
    """An event sink that prints each dry-run / check line on `out` (flushed with each progress
    event and at the end), then passes every event on to `on_event`."""

    def sink(kind: str, payload: Any) -> None:
        if kind in (DryRunAction.event, Difference.event):
            write_line(out, payload.line())
        elif kind == "progress":
            out.flush()
        if on_event is not None:
            on_event(kind, payload)

    return sink
