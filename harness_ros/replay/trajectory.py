"""Each recorded task's trajectory: the fold of its harness events.

Replay folds a recording with the harness's own reducer
(``harness_ros.trajectory.TrajectoryFold``), the one the live harness writes
``trajectory.json`` from, so a rebuilt trajectory equals the file byte for byte (a
consolidation replay, and a recorded model reply's digest, depend on every byte of it).
The fold's rules, and what it tolerates in older recordings, are in
``harness_ros.trajectory.fold``; ``finish_task`` is the harness's own end call and
never an allowed tool for consolidation.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from harness_ros.replay.contracts import RecordedTask
from harness_ros.trajectory import fold_events, trajectory_status

__all__ = ["rebuild_tasks", "trajectory_status"]

logger = logging.getLogger(__name__)


def rebuild_tasks(events: Iterable[dict[str, Any]]) -> list[RecordedTask]:
    """Tasks in the order they started, each with its rebuilt trajectory."""
    events = [event for event in events if isinstance(event, dict)]
    tasks = fold_events(events)
    consolidated_at = {
        str(event.get("task_id")): float(event["time"])
        for event in events
        if event.get("type") == "memory_consolidation" and isinstance(event.get("time"), int | float)
    }
    logger.debug("rebuilt %d tasks", len(tasks))
    return [
        RecordedTask(
            task_id=task.task_id,
            instruction=task.instruction,
            status=task.status,
            allowed_tools=task.tools or tuple(sorted({step.tool for step in task.trajectory.steps})),
            trajectory=task.trajectory,
            recorded_consolidation=task.consolidation.to_data() if task.consolidation is not None else None,
            consolidated_at=consolidated_at.get(task.task_id),
        )
        for task in tasks
    ]
