"""Skill contracts: a validated skill, the Agent Skills limits and the two tool schemas.

A skill is ``skills/<name>/SKILL.md`` (YAML frontmatter + Markdown body) plus any
declared resource files beside it. Skills are instructions, never authority: tools
and hooks stay the execution, authorisation and safety boundary, whatever a
SKILL.md says (``allowed-tools`` is kept as metadata and grants nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

__all__ = [
    "ALLOWED_FRONTMATTER_KEYS",
    "LOAD_SKILL",
    "LOAD_SKILL_DESCRIPTION",
    "LOAD_SKILL_RESOURCE",
    "LOAD_SKILL_RESOURCE_DESCRIPTION",
    "LOAD_SKILL_RESOURCE_SCHEMA",
    "LOAD_SKILL_SCHEMA",
    "MAX_COMPATIBILITY_CHARS",
    "MAX_DESCRIPTION_CHARS",
    "MAX_NAME_CHARS",
    "MAX_RESOURCE_BYTES",
    "MAX_SKILL_FILE_BYTES",
    "SKILL_FILE",
    "Skill",
]

SKILL_FILE = "SKILL.md"
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500
MAX_RESOURCE_BYTES = 64 * 1024
"""A resource larger than this is refused: it would crowd the context window."""
MAX_SKILL_FILE_BYTES = 64 * 1024
"""A SKILL.md larger than this is refused at discovery: its body joins the context whole when
loaded (the skills of this project are under 2 KB; detail belongs in resources)."""

ALLOWED_FRONTMATTER_KEYS: tuple[str, ...] = (
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
)
"""Frontmatter keys of the Agent Skills specification; any other key is an error."""

LOAD_SKILL = "load_skill"
LOAD_SKILL_RESOURCE = "load_skill_resource"

LOAD_SKILL_DESCRIPTION = (
    "Load a Skill Catalog skill by name: its instructions join your context (another load replaces them)."
)
LOAD_SKILL_RESOURCE_DESCRIPTION = "Read a resource file the loaded skill lists."

LOAD_SKILL_SCHEMA: Mapping[str, Any] = MappingProxyType(
    {
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_NAME_CHARS,
                "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$",
            }
        },
        "required": ["name"],
        "additionalProperties": False,
    }
)
LOAD_SKILL_RESOURCE_SCHEMA: Mapping[str, Any] = MappingProxyType(
    {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "relative to the skill folder",
                "minLength": 1,
            }
        },
        "required": ["path"],
        "additionalProperties": False,
    }
)
"""Read-only views; copy with ``copy.deepcopy(dict(...))`` before handing one to a provider."""


@dataclass(frozen=True)
class Skill:
    """One validated skill.

    ``resources`` are the declared resource paths (POSIX, relative to ``folder``,
    sorted) found at discovery; ``metadata`` holds the optional frontmatter keys.
    """

    name: str
    description: str
    folder: Path
    body: str
    resources: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def skill_file(self) -> Path:
        return self.folder / SKILL_FILE
