"""Rendering of the Resident context into the system message.

The rendering is a pure function of ``ResidentContext``: same parts, same bytes.
Memory, profile and skill text is wrapped in named tags so the model can tell
data (what an operator or a past task wrote) from the rules above it.
"""

from __future__ import annotations

import re

from harness_ros.context.contracts import Message, ResidentContext

__all__ = ["loaded_skill_section", "render_resident", "resident_sections", "system_message"]

_TAGS = ("memory", "embodiment_profile", "skill_catalog", "loaded_skill")
# Any opening or closing block tag inside a body (any case, spaces allowed): the text of
# one block can never end it early or start another.
_BLOCK_TAG = re.compile(rf"<(\s*/?\s*(?:{'|'.join(_TAGS)})\b)", re.IGNORECASE)


_PROFILE_TITLE = re.compile(r"\A#[ \t]+Embodiment Profile[ \t]*\n+", re.IGNORECASE)
"""A profile's own title line: its block's tag already names it."""


def _section(tag: str, body: str) -> str:
    # The tag names the block; a Markdown heading above it repeated the name in every
    # request (and the block's own title often a third time).
    safe = _BLOCK_TAG.sub(r"&lt;\1", body.strip())
    return f"<{tag}>\n{safe}\n</{tag}>"


def loaded_skill_section(body: str) -> str:
    """The loaded skill's block, as the system message has it."""
    return _section("loaded_skill", body)


def resident_sections(resident: ResidentContext) -> list[tuple[str, str]]:
    """(part name, text) of each part of the system message present, in order."""
    parts = [("system prompt", resident.system_prompt.strip())]
    if resident.memory.strip():
        parts.append(("memory", _section("memory", resident.memory)))
    if resident.profile.strip():
        profile = _PROFILE_TITLE.sub("", resident.profile.strip())
        parts.append(("embodiment profile", _section("embodiment_profile", profile)))
    if resident.skill_catalog.strip():
        parts.append(("skill catalog", _section("skill_catalog", resident.skill_catalog)))
    if resident.loaded_skill.strip():
        parts.append(("loaded skill", loaded_skill_section(resident.loaded_skill)))
    return parts


def render_resident(resident: ResidentContext) -> str:
    """System message text: prompt, Memory, Embodiment Profile, Skill Catalog, loaded Skill."""
    return "\n\n".join(text for _name, text in resident_sections(resident)) + "\n"


def system_message(resident: ResidentContext) -> Message:
    return {"role": "system", "content": render_resident(resident)}
