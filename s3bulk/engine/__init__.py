"""The engine: plans, work units, the per-core worker pool and the per-object transfer."""

from .plan import KeyMap, Plan, TransferOptions
from .run.launch import Progress, run_plan

__all__ = ["KeyMap", "Plan", "TransferOptions", "Progress", "run_plan"]
