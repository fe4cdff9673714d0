"""The Resident-context projection of MEMORY.md, within its budget (pure: text in, text out)."""

from __future__ import annotations

import re
from typing import Any

from harness_ros.memory.consolidation import LABELS
from harness_ros.memory.contracts import SECTIONS
from harness_ros.memory.document import SectionedDocument

__all__ = ["escape_entry", "render_resident"]

_HEADING_MARK = re.compile(r"(^|\s)(#{1,6})(?=\s|$)")


def escape_entry(text: str) -> str:
    """An entry as it may appear inside the model's <memory> block: one line, no markup.

    ``<``/``>`` become ``&lt;``/``&gt;`` (no tag can close or open the block) and a
    Markdown heading marker becomes ``\\#`` (no fake section), whoever wrote the entry.
    """
    flat = " ".join(text.split())
    flat = flat.replace("<", "&lt;").replace(">", "&gt;")
    return _HEADING_MARK.sub(lambda m: m.group(1) + "\\#" * len(m.group(2)), flat)


def _render(entries: dict[str, list[str]], left_out: set[int]) -> str:
    # An empty section, or an empty memory, is left out: its heading tells the model
    # nothing and costs tokens in every request.
    if not any(entries.values()):
        return ""
    lines = ["# Memory"]
    for section, texts in entries.items():
        if not texts:
            continue
        lines.append("")
        lines.append(f"## {section}")
        shown = (
            texts
            if section != "General Lessons"
            else [text for index, text in enumerate(texts) if index not in left_out]
        )
        lines.extend(f"- [{LABELS[section]}] {escape_entry(text)}" for text in shown)
        if section == "General Lessons" and left_out:
            lines.append(f"({len(left_out)} older general lesson(s) not shown: memory budget)")
    return "\n".join(lines) + "\n"


def render_resident(memory_text: str, budget: int | None) -> tuple[str, dict[str, Any] | None]:
    """The three sections only, in fixed order, and the notice for the operator (or None).

    Over ``budget`` characters, the oldest model-written General Lessons (bullets carrying
    the ``[general-lesson]`` label, oldest first in the file) are left out of the
    projection, never out of MEMORY.md. Preferences, Conventions and unlabelled bullets
    (the operator's own text) are always projected, even over budget. Either way a
    ``resident_budget_exceeded`` notice says so.
    """
    document = SectionedDocument(memory_text)
    labels = tuple(LABELS.values())
    entries = {section: document.entries(section, labels=labels) for section in SECTIONS}
    raw_lessons = document.entries("General Lessons")
    trimmable = [
        index for index, raw in enumerate(raw_lessons) if raw.startswith(f"[{LABELS['General Lessons']}]")
    ]
    left_out: set[int] = set()
    text = _render(entries, left_out)
    if budget is None or len(text) <= budget:
        return text, None
    full = len(text)
    for index in trimmable:
        left_out.add(index)
        text = _render(entries, left_out)
        if len(text) <= budget:
            break
    message = (
        f"Resident memory is {full} characters, over its budget of {budget} "
        f"(memory.resident_budget_chars): {len(left_out)} oldest model-written general lesson(s) "
        "left out of the prompt (kept in MEMORY.md)"
    )
    if len(text) > budget:
        message += f"; the operator's own entries alone take {len(text)} characters and are all kept"
    notice = {
        "notice": "resident_budget_exceeded",
        "budget_chars": budget,
        "chars": full,
        "projected_chars": len(text),
        "left_out": len(left_out),
        "message": message,
    }
    return text, notice
