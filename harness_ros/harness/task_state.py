"""A task's shared state (``ActiveTask``) and how it ends (``TaskEnd``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness_ros.events import DonePayload, MemoryConsolidationPayload, Outcome, TaskStatus
from harness_ros.harness.replies import json_safe
from harness_ros.tools import CancelToken
from harness_ros.tools.finish_task import FINISH_TASK

if TYPE_CHECKING:
    from harness_ros.memory import FileMemory
    from harness_ros.trajectory import TrajectoryStep

__all__ = ["ActiveTask", "TaskEnd", "consolidate", "remember"]

logger = logging.getLogger(__name__)


@dataclass
class ActiveTask:
    """The running task's shared state: touched by the worker and by cancel()/revise()."""

    task_id: str
    token: CancelToken
    revisions: list[str] = field(default_factory=list)
    timed_out: bool = False
    session_context: str = ""
    """Summaries of the session's earlier tasks, put before the instruction."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take_revisions(self) -> list[str]:
        with self.lock:
            taken, self.revisions = self.revisions, []
        return taken


@dataclass(frozen=True)
class TaskEnd:
    """How a task ended: the done event's status, reason, report and outcome."""

    status: TaskStatus
    reason: str = ""
    report: str = ""
    outcome: Outcome | None = None
    """Settled for a completed task; None: implied by the status (``outcome_for_status``)."""
    claim: str | None = None
    goal_verdict: dict[str, Any] | None = None
    finished_by: str | None = None
    """``finish_task`` or ``final_message`` for a completed task."""

    def payload(
        self, outcome: Outcome, report: str, turns: int, elapsed_s: float, tokens: dict[str, int]
    ) -> DonePayload:
        """The ``done`` event's payload."""
        return DonePayload(
            status=self.status.value,
            outcome=outcome.value,
            claim=self.claim,
            goal_verdict=self.goal_verdict,
            finished_by=self.finished_by,
            report=report,
            reason=self.reason,
            turns=turns,
            elapsed_s=elapsed_s,
            tokens=dict(tokens),
        )


def consolidate(
    memory: FileMemory | None, tools: Sequence[str], memory_status: str, outcome: Outcome
) -> MemoryConsolidationPayload:
    """Memory's end of a task (``FileMemory.finish_task``) as the memory_consolidation event's payload."""
    return MemoryConsolidationPayload.from_data(_consolidated(memory, tools, memory_status, outcome))


def _consolidated(
    memory: FileMemory | None, tools: Sequence[str], memory_status: str, outcome: Outcome
) -> dict[str, Any]:
    if memory is None:
        return {"skipped": True, "reason": "no memory configured", "status": memory_status}
    # finish_task is the harness's own end-of-task call: it has no ledger.
    allowed = [name for name in tools if name != FINISH_TASK]
    try:
        result = dict(memory.finish_task(memory_status, allowed_tools=allowed, outcome=outcome))
    except Exception as err:  # a consolidation fault is an event, never a crashed task
        logger.exception("finish_task failed")
        return {"skipped": False, "error": f"{type(err).__name__}: {err}", "status": memory_status}
    result.pop("trajectory", None)  # already in trajectory.json; events stay small
    return {**json_safe(result), "status": memory_status}


def remember(memory: FileMemory | None, step: TrajectoryStep | None) -> None:
    """Memory's Task Notes get the fold's step (unknown tools and ``finish_task`` have
    none: no ledger, no place in the trajectory), so they hold the same trajectory."""
    if step is None or memory is None:
        return
    memory.record_step(step)
