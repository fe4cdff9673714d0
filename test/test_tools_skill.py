"""The built-in skill tools wrap a skill session; they exist only when there is something to load."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness_ros.skills import LOAD_SKILL, LOAD_SKILL_RESOURCE, skill_tools
from harness_ros.tools import CancelToken, ToolRegistry, failure, success


@dataclass
class FakeSession:
    calls: list[tuple[str, str]] = field(default_factory=list)

    def load_skill(self, name: str) -> dict[str, Any]:
        self.calls.append(("skill", name))
        if name != "pick-mug":
            return failure(f"unknown skill {name!r}")
        return success(loaded=name)

    def load_skill_resource(self, path: str) -> dict[str, Any]:
        self.calls.append(("resource", path))
        return success(path=path, content="grip at the handle")


@dataclass
class PropertyCatalog:
    has_skills: bool
    has_resources: bool


class MethodCatalog:
    def has_skills(self) -> bool:
        return True

    def has_resources(self) -> bool:
        return False


@pytest.mark.parametrize(
    ("catalog", "expected"),
    [
        (None, []),
        (PropertyCatalog(has_skills=False, has_resources=False), []),
        (PropertyCatalog(has_skills=True, has_resources=False), [LOAD_SKILL]),
        (PropertyCatalog(has_skills=True, has_resources=True), [LOAD_SKILL, LOAD_SKILL_RESOURCE]),
        (MethodCatalog(), [LOAD_SKILL]),
    ],
)
def test_skill_tools_exist_only_when_needed(catalog: Any, expected: list[str]) -> None:
    tools = skill_tools(FakeSession(), catalog)
    assert [t.spec.name for t in tools] == expected


def test_skill_tools_delegate_to_the_session_through_the_registry() -> None:
    session = FakeSession()
    registry = ToolRegistry(skill_tools(session, PropertyCatalog(has_skills=True, has_resources=True)))
    cancel = CancelToken()
    assert registry.execute(LOAD_SKILL, {"name": "pick-mug"}, cancel=cancel) == {
        "success": True,
        "loaded": "pick-mug",
    }
    assert registry.execute(LOAD_SKILL, {"name": "fly"}, cancel=cancel) == {
        "success": False,
        "reason": "unknown skill 'fly'",
    }
    resource = registry.execute(LOAD_SKILL_RESOURCE, {"path": "notes/grip.md"}, cancel=cancel)
    assert resource["content"] == "grip at the handle"
    assert session.calls == [("skill", "pick-mug"), ("skill", "fly"), ("resource", "notes/grip.md")]


def test_skill_tool_arguments_are_validated_before_the_session_is_called() -> None:
    session = FakeSession()
    registry = ToolRegistry(skill_tools(session, PropertyCatalog(has_skills=True, has_resources=True)))
    result = registry.execute(LOAD_SKILL, {"name": 7}, cancel=CancelToken())
    assert result["success"] is False
    assert "name" in result["reason"]
    result = registry.execute(LOAD_SKILL_RESOURCE, {}, cancel=CancelToken())
    assert result["success"] is False
    assert "'path' is a required property" in result["reason"]
    assert session.calls == []


def test_skill_tools_are_not_physical() -> None:
    for tool in skill_tools(FakeSession(), PropertyCatalog(has_skills=True, has_resources=True)):
        assert not (tool.spec.physical or tool.spec.base_motion or tool.spec.requires_approval)


def test_real_skill_session_through_the_registry(tmp_path: Path) -> None:
    from harness_ros.skills import SkillCatalog, SkillSession

    folder = tmp_path / "skills" / "pick-mug"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: pick-mug\ndescription: Pick a mug by its handle.\n---\nApproach from the handle side.\n",
        encoding="utf-8",
    )
    (folder / "grip.md").write_text("Close to 4 cm.\n", encoding="utf-8")
    catalog = SkillCatalog.discover(tmp_path / "skills")
    session = SkillSession(catalog)
    registry = ToolRegistry(skill_tools(session, catalog))
    assert registry.names() == [LOAD_SKILL, LOAD_SKILL_RESOURCE]
    loaded = registry.execute(LOAD_SKILL, {"name": "pick-mug"}, cancel=CancelToken())
    assert loaded["success"] is True
    resource = registry.execute(LOAD_SKILL_RESOURCE, {"path": "grip.md"}, cancel=CancelToken())
    assert resource["success"] is True
    assert "Close to 4 cm." in json.dumps(resource)
    escape = registry.execute(LOAD_SKILL_RESOURCE, {"path": "../../etc/passwd"}, cancel=CancelToken())
    assert escape["success"] is False
