"""Context contracts: the three lifetimes of what the model sees.

- Resident: system prompt, Memory, Embodiment Profile, Tool Definitions, Skill
  Catalog, loaded Skill. Built once per task (the loaded Skill may change) and
  rendered byte-identically between turns so provider prompt caches keep hitting.
- Refreshed: the latest Observation, rebuilt before every decision and never kept.
- Accumulated: instruction, Task Notes snapshots, model responses, compact tool
  results; compacted into a checkpoint summary when the context nears the window.

Messages use the OpenAI chat format (what litellm speaks).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = ["CompactionOutcome", "EntryKind", "HistoryEntry", "Message", "ResidentContext"]

Message = dict[str, Any]
"""One chat message in the OpenAI format."""


@dataclass(frozen=True)
class ResidentContext:
    """What stays in the context for the whole task, in rendering order.

    ``tool_definitions`` travel in the request's ``tools`` parameter (providers place
    them ahead of the system message); the other parts form the system message.
    Empty strings mean "section absent".
    """

    system_prompt: str
    memory: str = ""
    profile: str = ""
    tool_definitions: tuple[dict[str, Any], ...] = ()
    skill_catalog: str = ""
    loaded_skill: str = ""


class EntryKind(str, Enum):
    """Why an accumulated message is there; compaction treats kinds differently."""

    SESSION = "session"
    """The session's earlier tasks (harness-recorded data); pinned like the instruction."""
    INSTRUCTION = "instruction"
    REVISION = "revision"
    NOTES = "notes"
    ASSISTANT = "assistant"
    TOOL = "tool"
    CHECKPOINT = "checkpoint"
    HARNESS = "harness"
    """A note from the harness itself (e.g. after an empty reply)."""
    OBSERVATION = "observation"
    """A text-only model's observation (or what changed in it); superseded by the next one."""
    SKILL = "skill"
    """The loaded skill's body, when the Resident context keeps it in the history
    (``ContextBuilder(skill_in_history=True)``); pinned like the instruction, and superseded
    by a later one."""


@dataclass(frozen=True)
class HistoryEntry:
    kind: EntryKind
    message: Message


@dataclass(frozen=True)
class CompactionOutcome:
    """What one compaction attempt did. ``error`` set means history is unchanged."""

    compacted: bool
    before_tokens: int
    after_tokens: int
    summarised_messages: int = 0
    summary_chars: int = 0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "compacted": self.compacted,
            "before_tokens": self.before_tokens,
            "after_tokens": self.after_tokens,
            "summarised_messages": self.summarised_messages,
            "summary_chars": self.summary_chars,
            "error": self.error,
        }
