"""FileMemory: Task Notes, durable memory, tool-experience ledgers and their consolidation."""

from __future__ import annotations

from harness_ros.memory.contracts import (
    SECTIONS,
    DurableMemoryEntry,
    MemoryConsolidation,
    MemoryConsolidatorProtocol,
    TaskNotesSnapshot,
    ToolExperienceEntry,
    ToolExperienceSummarizerProtocol,
)
from harness_ros.memory.file_memory import LABELS, ConsolidationDecision, FileMemory
from harness_ros.memory.model_policies import (
    ModelMemoryConsolidator,
    ModelToolExperienceSummarizer,
    consolidation_from_dict,
)
from harness_ros.memory.rules import DEFAULT_POISONING_RULES, DEFAULT_TRANSIENT_RULES, TransientRule

__all__ = [
    "DEFAULT_POISONING_RULES",
    "DEFAULT_TRANSIENT_RULES",
    "LABELS",
    "SECTIONS",
    "ConsolidationDecision",
    "DurableMemoryEntry",
    "FileMemory",
    "MemoryConsolidation",
    "MemoryConsolidatorProtocol",
    "ModelMemoryConsolidator",
    "ModelToolExperienceSummarizer",
    "TaskNotesSnapshot",
    "ToolExperienceEntry",
    "ToolExperienceSummarizerProtocol",
    "TransientRule",
    "consolidation_from_dict",
]
