"""How many instruction revisions one task takes, and how much text (``task_api``).

A revision joins the task's history and is never compacted (it is the operator's word on
the goal), so revisions without a bound grow every later model request: hundreds of bare
strings on ``~/revise`` during one task made the next request 4 MB against a 16k-token
window. ``RevisionBudget`` admits at most ``max_revisions_per_task`` revisions and
``max_revision_chars_per_task`` characters of them per task; the rest are refused with a
reason naming the setting, and the task goes on with what it had. Thread-safe (revisions
arrive on the node's API callbacks).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["RevisionBudget"]


@dataclass
class _Spent:
    task_id: str
    count: int = 0
    chars: int = 0


class RevisionBudget:
    """Counts the revisions admitted to the running task; a new task id starts afresh."""

    def __init__(self, max_revisions: int, max_chars: int) -> None:
        if max_revisions < 1 or max_chars < 1:
            raise ValueError(f"revision limits must be positive, got {max_revisions} and {max_chars}")
        self.max_revisions = max_revisions
        self.max_chars = max_chars
        self._spent: _Spent | None = None
        self._lock = threading.Lock()

    def admit(self, task_id: str, text: str) -> str | None:
        """None when ``text`` may join task ``task_id`` (and it is counted), else why not."""
        size = len(text.strip())
        with self._lock:
            spent = self._spent
            if spent is None or spent.task_id != task_id:
                spent = self._spent = _Spent(task_id)
            if spent.count >= self.max_revisions:
                return (
                    f"task {task_id!r} already has {spent.count} revisions, the most one task takes "
                    f"(task_api.max_revisions_per_task); send a new instruction instead"
                )
            if spent.chars + size > self.max_chars:
                left = self.max_chars - spent.chars
                return (
                    f"revision of {size:,} characters refused: task {task_id!r} has {left:,} of its "
                    f"{self.max_chars:,} characters of revisions left "
                    "(task_api.max_revision_chars_per_task); send a shorter revision or a new instruction"
                )
            spent.count += 1
            spent.chars += size
            return None
