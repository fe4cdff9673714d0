"""One task's trajectory, typed, and the one reducer that folds harness events into it.

Core (no rclpy). ``contracts``: the frozen ``Trajectory``, ``TrajectoryStep``,
``ToolResult`` and ``StepVerdict``, turned into JSON only at the file and model
boundaries; ``fold``: ``TrajectoryFold``, used by the live harness and by replay, so
``trajectory.json`` is the fold of ``events.jsonl``; ``bounds``: the size limits.
"""

from __future__ import annotations

from harness_ros.trajectory.contracts import (
    ASK_OPERATOR,
    PHASES,
    StepVerdict,
    ToolResult,
    Trajectory,
    TrajectoryFormatError,
    TrajectoryStep,
    as_step,
    load_trajectory,
    steps_from,
    trajectory_status,
)
from harness_ros.trajectory.fold import FoldedTask, TrajectoryFold, fold_events

__all__ = [
    "ASK_OPERATOR",
    "PHASES",
    "FoldedTask",
    "StepVerdict",
    "ToolResult",
    "Trajectory",
    "TrajectoryFold",
    "TrajectoryFormatError",
    "TrajectoryStep",
    "as_step",
    "fold_events",
    "load_trajectory",
    "steps_from",
    "trajectory_status",
]
