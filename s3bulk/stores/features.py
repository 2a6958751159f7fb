"""A store's `Features`, derived from the protocols it implements (rclone's fs/features.go Fill).

Why: a capability flag set by hand beside the method it stands for can say one thing while the
method says another (a flag without its method is a crash in the engine; a method without its
flag a capability never used), and nothing checked the two agreed. Here a capability is the
protocol implemented: `features_of` asks isinstance of each protocol in CAPABILITIES, and takes
only what no method shows from the store's hand-declared `Traits` (read_into and read_to among
them: every store's `get` takes a buffer or a sink; whether its data path fills them in place, as
the bytes arrive, is a trait of that path, not a method). A store computes it once,
when it is made (never per object).

A wrapper forwards every method of the contract, so isinstance would credit it with every
capability: its features are its inner store's, masked by what it forwards (`mask`, rclone's
Features.Mask), so a wrapper never claims more than the store inside can do.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from .base import (ChecksumReader, FileBodyReader, Features, LevelLister, PartSizeReader, ResumableUploads, ServerSideCopier,
                   StreamedPutter, Traits, VersionedStore, Writer)

# each capability flag of Features and the protocol that is it
CAPABILITIES: tuple[tuple[str, type], ...] = (
    ("write", Writer),
    ("resumable_uploads", ResumableUploads),
    ("server_side_copy", ServerSideCopier),
    ("part_sizes", PartSizeReader),
    ("checksums", ChecksumReader),
    ("versions", VersionedStore),
    ("file_bodies", FileBodyReader),
    ("streamed_puts", StreamedPutter),
    ("one_level", LevelLister),
)

_TRAITS = tuple(f.name for f in fields(Traits))


def features_of(store: object, traits: Traits) -> Features:
    """The store's features: each capability is the protocol implemented, the rest `traits`."""
    values: dict[str, Any] = {name: isinstance(store, protocol) for name, protocol in CAPABILITIES}
    values.update((name, getattr(traits, name)) for name in _TRAITS)
    return Features(**values)


def traits_of(features: Features) -> Traits:
    """The traits inside a Features value (a store that declares its features by hand)."""
    return Traits(**{name: getattr(features, name) for name in _TRAITS})


def mask(inner: Features, wrapper: object) -> Features:
    """A wrapper's features: the inner store's, each capability kept only where the wrapper
    implements its protocol too (rclone's Mask). The inner value itself when nothing is masked,
    so a wrapper's features are its inner store's (`is`) wherever it forwards all of them."""
    lost: dict[str, Any] = {name: False for name, protocol in CAPABILITIES
            if getattr(inner, name) and not isinstance(wrapper, protocol)}
    return replace(inner, **lost) if lost else inner
