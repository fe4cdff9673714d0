"""Replay recorded harness runs: rebuild trajectories from events, re-run consolidation,
compare the accepted entries with an expected file. Pure Python (no rclpy)."""

from __future__ import annotations

from harness_ros.replay.consolidate import (
    RecordedProposalsConsolidator,
    consolidation_replies,
    replay_consolidation,
    trajectory_for_replay,
)
from harness_ros.replay.contracts import (
    ConsolidationTarget,
    ExpectedEntry,
    RecordedTask,
    TaskDiff,
    TaskOutcome,
)
from harness_ros.replay.expect import compare, format_diffs, load_expect, write_expect
from harness_ros.replay.trajectory import rebuild_tasks, trajectory_status

__all__ = [
    "ConsolidationTarget",
    "ExpectedEntry",
    "RecordedProposalsConsolidator",
    "RecordedTask",
    "TaskDiff",
    "TaskOutcome",
    "compare",
    "consolidation_replies",
    "format_diffs",
    "load_expect",
    "rebuild_tasks",
    "replay_consolidation",
    "trajectory_for_replay",
    "trajectory_status",
    "write_expect",
]
