"""Replay contracts: recorded tasks, consolidation outcomes and expected entries.

Pure Python (no rclpy): the bag layer turns a recording into event dicts, this
package turns event dicts into trajectories and compares what consolidation
accepts with an expected file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from harness_ros.trajectory import Trajectory

__all__ = [
    "ConsolidationTarget",
    "ExpectedEntry",
    "RecordedTask",
    "TaskDiff",
    "TaskOutcome",
]


@dataclass(frozen=True)
class RecordedTask:
    """One task as rebuilt from its events."""

    task_id: str
    instruction: str
    status: str | None
    """The ``done`` status (completed|failed|aborted|cancelled); None when the recording ended first."""
    allowed_tools: tuple[str, ...]
    trajectory: Trajectory
    """The fold's typed trajectory (``trajectory.json`` is its ``to_json``)."""
    recorded_consolidation: dict[str, Any] | None = None
    """The ``memory_consolidation`` event data of the original run, if recorded."""
    consolidated_at: float | None = None
    """When the original run's ``memory_consolidation`` event was emitted."""

    @property
    def world_time(self) -> float | None:
        """When the original run folded this task into WORLD.md: the time it recorded,
        else (a recording from before world memory) its consolidation event's time."""
        world = (self.recorded_consolidation or {}).get("world")
        recorded = world.get("time") if isinstance(world, dict) else None
        if isinstance(recorded, int | float) and not isinstance(recorded, bool):
            return float(recorded)
        return self.consolidated_at

    @property
    def completed(self) -> bool:
        return self.status == "completed"


@dataclass(frozen=True, order=True)
class ExpectedEntry:
    """An accepted consolidation entry, as the expected file lists it."""

    kind: str
    key: str
    """``section`` of a memory entry or ``tool`` of a tool-experience entry."""
    outcome: str
    text: str

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ExpectedEntry:
        key = raw.get("section") if raw.get("section") is not None else raw.get("tool")
        return cls(
            kind=str(raw.get("kind") or ""),
            key=str(key or ""),
            outcome=str(raw.get("outcome") or ""),
            text=" ".join(str(raw.get("text") or "").split()),
        )

    @property
    def is_tool_entry(self) -> bool:
        return bool(self.outcome) or "tool" in self.kind

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.is_tool_entry:
            out["tool"] = self.key
            out["outcome"] = self.outcome
        else:
            out["section"] = self.key
        out["text"] = self.text
        return out

    def describe(self) -> str:
        where = f"{self.key}/{self.outcome}" if self.is_tool_entry else self.key
        return f"{self.kind} [{where}] {self.text!r}"


@dataclass(frozen=True)
class TaskOutcome:
    """What replaying one task's consolidation produced."""

    task_id: str
    status: str | None
    skipped: str | None = None
    """Why the task was not consolidated (not completed, ...); None when it was."""
    decisions: tuple[dict[str, Any], ...] = ()
    counts: dict[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> list[ExpectedEntry]:
        return sorted(ExpectedEntry.from_dict(d) for d in self.decisions if d.get("accepted"))


@dataclass(frozen=True)
class TaskDiff:
    """Differences between the expected and the accepted entries of one task."""

    task_id: str
    missing: tuple[ExpectedEntry, ...] = ()
    unexpected: tuple[ExpectedEntry, ...] = ()
    note: str = ""
    """A task-level difference (task not in the bag, not consolidated, ...)."""
    rejected_by: dict[ExpectedEntry, str] = field(default_factory=dict)
    """Missing entries that were proposed but rejected: entry -> rule."""

    @property
    def empty(self) -> bool:
        return not (self.missing or self.unexpected or self.note)


class ConsolidationTarget(Protocol):
    """What replay needs from FileMemory."""

    def consolidate_trajectory(
        self,
        trajectory: Trajectory,
        *,
        allowed_tools: list[str],
        dry_run: bool = False,
        world_time: float | None = None,
    ) -> dict[str, Any]: ...
