"""The two built-in skill tools, ``load_skill`` and ``load_skill_resource``.

They are thin wrappers: the skill session (``harness_ros.skills.session``) owns the rules
(declared files only, no path escapes, size bounds, "already loaded") and returns
envelopes. Each tool exists only when the catalog has something for it to load. They live
with the skills, which build on the tools' contracts (the tools never import the skills).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Protocol

from harness_ros.skills.contracts import (
    LOAD_SKILL,
    LOAD_SKILL_DESCRIPTION,
    LOAD_SKILL_RESOURCE,
    LOAD_SKILL_RESOURCE_DESCRIPTION,
    LOAD_SKILL_RESOURCE_SCHEMA,
    LOAD_SKILL_SCHEMA,
)
from harness_ros.tools.contracts import CancelToken, FeedbackSink, Tool, ToolSpec

__all__ = [
    "LOAD_SKILL",
    "LOAD_SKILL_RESOURCE",
    "LoadSkillResourceTool",
    "LoadSkillTool",
    "SkillCatalogLike",
    "SkillSessionLike",
    "skill_tools",
]


class SkillSessionLike(Protocol):
    def load_skill(self, name: Any) -> dict[str, Any]: ...

    def load_skill_resource(self, path: Any) -> dict[str, Any]: ...


class SkillCatalogLike(Protocol):
    """``has_skills`` / ``has_resources`` may be properties or zero-argument methods."""

    @property
    def has_skills(self) -> Any: ...

    @property
    def has_resources(self) -> Any: ...


def _schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    # The skills module publishes read-only views; the spec needs its own plain dict.
    return copy.deepcopy(dict(schema))


class LoadSkillTool:
    """Puts a skill's body into Resident context for the rest of the task."""

    def __init__(self, session: SkillSessionLike) -> None:
        self._session = session
        self.spec = ToolSpec(
            name=LOAD_SKILL, description=LOAD_SKILL_DESCRIPTION, input_schema=_schema(LOAD_SKILL_SCHEMA)
        )

    def execute(
        self,
        arguments: dict[str, Any],
        *,
        cancel: CancelToken,
        feedback: FeedbackSink | None = None,
    ) -> dict[str, Any]:
        return self._session.load_skill(arguments.get("name"))


class LoadSkillResourceTool:
    """Returns one declared file of the loaded skill."""

    def __init__(self, session: SkillSessionLike) -> None:
        self._session = session
        self.spec = ToolSpec(
            name=LOAD_SKILL_RESOURCE,
            description=LOAD_SKILL_RESOURCE_DESCRIPTION,
            input_schema=_schema(LOAD_SKILL_RESOURCE_SCHEMA),
        )

    def execute(
        self,
        arguments: dict[str, Any],
        *,
        cancel: CancelToken,
        feedback: FeedbackSink | None = None,
    ) -> dict[str, Any]:
        return self._session.load_skill_resource(arguments.get("path"))


def _flag(catalog: object, attribute: str) -> bool:
    value = getattr(catalog, attribute, False)
    return bool(value() if callable(value) else value)


def skill_tools(session: SkillSessionLike, catalog: SkillCatalogLike | None) -> list[Tool]:
    """The skill tools this catalog needs: none, ``load_skill``, or both."""
    if catalog is None or not _flag(catalog, "has_skills"):
        return []
    tools: list[Tool] = [LoadSkillTool(session)]
    if _flag(catalog, "has_resources"):
        tools.append(LoadSkillResourceTool(session))
    return tools
