"""The engine: plans, work units, the per-core worker pool and the per-object transfer.

The names below are imported on first use, not with the package: every engine module's import
runs this file first, and `s3bulk ls` (which needs none of them) spent ~12 ms of its start, before
its first request, importing the plan and the run's coordinator through it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .plan import KeyMap, Plan, TransferOptions
    from .run.launch import Progress, run_plan

__all__ = ["KeyMap", "Plan", "TransferOptions", "Progress", "run_plan"]


def __getattr__(name: str) -> Any:
    if name in ("KeyMap", "Plan", "TransferOptions"):
        from . import plan

        return getattr(plan, name)
    if name in ("Progress", "run_plan"):
        from .run import launch

        return getattr(launch, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
