"""Context lifetimes (Resident, Refreshed, Accumulated), request assembly and compaction."""

from __future__ import annotations

from harness_ros.context.builder import ContextBuilder
from harness_ros.context.compaction import (
    COMPACT_PROMPT,
    IMAGE_TOKENS,
    Compactor,
    estimate_tokens,
    request_chars_for_window,
)
from harness_ros.context.contracts import CompactionOutcome, EntryKind, HistoryEntry, Message, ResidentContext
from harness_ros.context.history import History
from harness_ros.context.observation import (
    OBSERVATION_HEADER,
    OBSERVATION_UNCHANGED,
    observation_images,
    observation_message,
    observation_summary,
    observation_update,
)
from harness_ros.context.resident import render_resident, system_message
from harness_ros.context.results import compact_value, model_result, tool_message

__all__ = [
    "COMPACT_PROMPT",
    "IMAGE_TOKENS",
    "OBSERVATION_HEADER",
    "OBSERVATION_UNCHANGED",
    "CompactionOutcome",
    "Compactor",
    "ContextBuilder",
    "EntryKind",
    "History",
    "HistoryEntry",
    "Message",
    "ResidentContext",
    "compact_value",
    "estimate_tokens",
    "model_result",
    "observation_images",
    "observation_message",
    "observation_summary",
    "observation_update",
    "render_resident",
    "request_chars_for_window",
    "system_message",
    "tool_message",
]
