"""Skills: a catalog of ``skills/<name>/SKILL.md``, the per-task load_skill state and the
two built-in skill tools."""

from __future__ import annotations

from harness_ros.skills.catalog import SkillCatalog, load_skill_file
from harness_ros.skills.contracts import (
    LOAD_SKILL,
    LOAD_SKILL_DESCRIPTION,
    LOAD_SKILL_RESOURCE,
    LOAD_SKILL_RESOURCE_DESCRIPTION,
    LOAD_SKILL_RESOURCE_SCHEMA,
    LOAD_SKILL_SCHEMA,
    MAX_RESOURCE_BYTES,
    Skill,
)
from harness_ros.skills.session import SkillSession
from harness_ros.skills.tools import LoadSkillResourceTool, LoadSkillTool, skill_tools

__all__ = [
    "LOAD_SKILL",
    "LOAD_SKILL_DESCRIPTION",
    "LOAD_SKILL_RESOURCE",
    "LOAD_SKILL_RESOURCE_DESCRIPTION",
    "LOAD_SKILL_RESOURCE_SCHEMA",
    "LOAD_SKILL_SCHEMA",
    "MAX_RESOURCE_BYTES",
    "LoadSkillResourceTool",
    "LoadSkillTool",
    "Skill",
    "SkillCatalog",
    "SkillSession",
    "load_skill_file",
    "skill_tools",
]
