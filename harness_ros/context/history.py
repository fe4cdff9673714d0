"""The Accumulated context of one task: an append-only list of typed messages.

Appending never rewrites earlier messages, so the request prefix stays
byte-identical between turns; only compaction replaces entries, all at once.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness_ros.context.contracts import EntryKind, HistoryEntry, Message
from harness_ros.model.markers import NOTES_HEADER, NOTES_UPDATE_HEADER

__all__ = ["History"]

TASK_HEADER = "# Task"
REVISION_HEADER = "# Instruction revision from the operator"


class History:
    def __init__(self) -> None:
        self._entries: list[HistoryEntry] = []

    @property
    def entries(self) -> tuple[HistoryEntry, ...]:
        return tuple(self._entries)

    def messages(self) -> list[Message]:
        return [entry.message for entry in self._entries]

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, kind: EntryKind, message: Message) -> None:
        self._entries.append(HistoryEntry(kind, message))

    def add_instruction(self, instruction: str, *, session: str = "") -> None:
        # The session's earlier tasks are data the harness recorded (partly model-written):
        # their own pinned message, never in the message carrying the operator's words.
        # Compaction keeps both.
        if session.strip():
            self.add(EntryKind.SESSION, {"role": "user", "content": session.strip()})
        self.add(EntryKind.INSTRUCTION, {"role": "user", "content": f"{TASK_HEADER}\n{instruction.strip()}"})

    def add_revision(self, instruction: str) -> None:
        text = f"{REVISION_HEADER}\n{instruction.strip()}\n(It refines or replaces the task above.)"
        self.add(EntryKind.REVISION, {"role": "user", "content": text})

    def add_notes(self, snapshot: str, *, update: bool = False) -> None:
        header = NOTES_UPDATE_HEADER if update else NOTES_HEADER
        text = f"{header}\n<task_notes>\n{snapshot.strip()}\n</task_notes>"
        self.add(EntryKind.NOTES, {"role": "user", "content": text})

    def add_skill(self, block: str) -> None:
        self.add(EntryKind.SKILL, {"role": "user", "content": block})

    def add_observation(self, text: str) -> None:
        self.add(EntryKind.OBSERVATION, {"role": "user", "content": text})

    def add_assistant(self, message: Message) -> None:
        self.add(EntryKind.ASSISTANT, message)

    def add_tool(self, message: Message) -> None:
        self.add(EntryKind.TOOL, message)

    def replace(self, entries: Sequence[HistoryEntry]) -> None:
        """Swap in a compacted history (used by compaction only)."""
        self._entries = list(entries)
