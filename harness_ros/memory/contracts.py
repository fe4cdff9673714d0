"""FileMemory contracts: consolidation results and the pluggable policies."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from harness_ros.memory.world_contracts import WorldFactEntry

if TYPE_CHECKING:
    from harness_ros.memory.lessons import RecoveryLesson
    from harness_ros.trajectory import Trajectory

__all__ = [
    "SECTIONS",
    "DurableMemoryEntry",
    "LedgerLesson",
    "LedgerProblem",
    "MemoryConsolidation",
    "MemoryConsolidatorProtocol",
    "TaskNotesSnapshot",
    "ToolExperienceEntry",
    "ToolExperienceSummarizerProtocol",
]

SECTIONS: tuple[str, ...] = ("Preferences", "Conventions", "General Lessons")
"""MEMORY.md sections that reach the model, in order."""

Section = Literal["Preferences", "Conventions", "General Lessons"]
Outcome = Literal["success", "failure"]


@dataclass(frozen=True)
class DurableMemoryEntry:
    section: str
    text: str
    confidence: Any
    """A number in [0, 1] once FileMemory accepted the entry; before, whatever the
    consolidator gave (a model may send anything: FileMemory's validation names it)."""
    source: str | None = None
    """The operator's words (instruction or revision) a Preference or Convention came from."""


@dataclass(frozen=True)
class TaskNotesSnapshot:
    """Task Notes as the model is shown them before a decision."""

    text: str
    update: bool
    """Only what changed since the last snapshot the model was shown (it has the rest)."""


@dataclass(frozen=True)
class ToolExperienceEntry:
    tool: str
    outcome: str
    text: str
    confidence: Any
    """As ``DurableMemoryEntry.confidence``: validated by FileMemory."""
    lesson: RecoveryLesson | None = None
    """The recovery the harness saw, as data (``text`` is rendered from it); None for a
    model's entry. Written into the ledger with the text, read back by what acts on it."""


@dataclass(frozen=True)
class LedgerLesson:
    """One line of a tool's ledger as it reads now: its text (an operator may have edited
    it) and the recovery lesson stored with it, or None (a model's or an operator's words,
    a lesson written before lessons were data, or data that could not be read)."""

    text: str
    lesson: RecoveryLesson | None = None


@dataclass(frozen=True)
class LedgerProblem:
    """A ledger line whose data part is not a lesson: reported, its text kept and used as
    words, its data not used."""

    path: str
    line: int
    field: str
    message: str

    def describe(self) -> str:
        return (
            f"{self.path} line {self.line}: lesson data, field {self.field!r}: {self.message} "
            "(entry kept as words, its data not used)"
        )


@dataclass(frozen=True)
class MemoryConsolidation:
    memory_entries: tuple[DurableMemoryEntry, ...] = field(default_factory=tuple)
    tool_experience_entries: tuple[ToolExperienceEntry, ...] = field(default_factory=tuple)
    world_entries: tuple[WorldFactEntry, ...] = field(default_factory=tuple)
    """Objects and where the operator said they are (``world_operator``: their words only)."""
    unreadable_entries: tuple[str, ...] = field(default_factory=tuple)
    """Entries of the reply that are not even objects, each as "where: why" (audited and
    dropped; the readable entries are judged on their own)."""


class MemoryConsolidatorProtocol(Protocol):
    def consolidate(
        self,
        task_notes: Trajectory,
        *,
        allowed_tools: list[str],
        existing: dict[str, Any],
    ) -> MemoryConsolidation:
        """Propose durable entries from a completed task's notes.

        ``task_notes``: the typed trajectory (goal, revisions, steps with tool, arguments,
        compact result, verdict); a consolidator that sends it out of the process (a
        model's prompt) writes its JSON there (``Trajectory.to_json``). ``existing``:
        {"memory": {section: [text]}, "tool_experience": {tool: {"success": [text],
        "failure": [text]}}}.
        """
        ...


class ToolExperienceSummarizerProtocol(Protocol):
    def summarize(self, tool: str, *, success: list[str], failure: list[str]) -> str: ...
