"""Discover and validate ``skills/<name>/SKILL.md``; render the resident Skill Catalog.

Discovery is strict so a typo fails at start-up, not mid-task: a configured
folder that does not exist, a skill folder without SKILL.md, a symlinked skill
folder, a SKILL.md that is a symlink or not a regular file or over
``MAX_SKILL_FILE_BYTES`` (64 KiB), bad YAML (aliases expanded past ``yaml_safe``'s budget
included) or a frontmatter rule broken are each a ``SkillError`` naming the
SKILL.md (or folder) and the rule. Hidden entries and plain files in the skills
folder (a README) are ignored.

Declared resources are the regular files under a skill folder that are not a
SKILL.md, not hidden (no path part starting with '.') and not reached through a
symlink. Note for ``colcon build --symlink-install``: the installed files are
symlinks, so point ``skills.dir`` at the source folder to keep the resources.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness_ros.errors import SkillError
from harness_ros.paths import display_path
from harness_ros.skills.contracts import (
    ALLOWED_FRONTMATTER_KEYS,
    MAX_COMPATIBILITY_CHARS,
    MAX_DESCRIPTION_CHARS,
    MAX_NAME_CHARS,
    MAX_SKILL_FILE_BYTES,
    SKILL_FILE,
    Skill,
)
from harness_ros.yaml_safe import safe_load

__all__ = ["SkillCatalog", "load_skill_file"]

_NAME_CHARS = re.compile(r"[a-z0-9-]+")
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_COMMENT_OR_SPACE = re.compile(r"<!--.*?-->|\s+", re.DOTALL)


def _check_name(value: str) -> str:
    """Agent Skills name rules, one precise message per rule."""
    if not 1 <= len(value) <= MAX_NAME_CHARS:
        raise ValueError(f"must be 1-{MAX_NAME_CHARS} characters, got {len(value)}")
    if not _NAME_CHARS.fullmatch(value):
        raise ValueError(f"must use only lowercase letters, digits and hyphens, got {value!r}")
    if value.startswith("-") or value.endswith("-"):
        raise ValueError(f"must not start or end with a hyphen, got {value!r}")
    if "--" in value:
        raise ValueError(f"must not contain consecutive hyphens, got {value!r}")
    return value


class _Frontmatter(BaseModel):
    """The YAML frontmatter of a SKILL.md (Agent Skills specification keys only)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)

    name: str
    description: str
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] | None = None
    allowed_tools: str | None = Field(default=None, alias="allowed-tools")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _check_name(value)

    @field_validator("description")
    @classmethod
    def _description(cls, value: str) -> str:
        value = value.strip()
        if not 1 <= len(value) <= MAX_DESCRIPTION_CHARS:
            raise ValueError(f"must be 1-{MAX_DESCRIPTION_CHARS} characters, got {len(value)}")
        return value

    @field_validator("compatibility")
    @classmethod
    def _compatibility(cls, value: str | None) -> str | None:
        if value is not None and not 1 <= len(value.strip()) <= MAX_COMPATIBILITY_CHARS:
            raise ValueError(f"must be 1-{MAX_COMPATIBILITY_CHARS} characters, got {len(value.strip())}")
        return value


def _invalid(skill_file: Path, problem: str) -> SkillError:
    return SkillError(f"Invalid skill ({display_path(skill_file)}): {problem}")


def _frontmatter_problem(err: ValidationError) -> str:
    item = err.errors()[0]
    key = ".".join(str(part) for part in item["loc"]) or "frontmatter"
    if item["type"] == "missing":
        return f"{key}: required frontmatter key is missing"
    if item["type"] == "extra_forbidden":
        return f"{key}: unknown frontmatter key (allowed: {', '.join(ALLOWED_FRONTMATTER_KEYS)})"
    if item["type"] == "string_type":
        return f"{key}: must be a string"
    return f"{key}: {item['msg'].removeprefix('Value error, ')}"


def _split_frontmatter(text: str, skill_file: Path) -> tuple[dict[str, Any], str]:
    lines = text.replace("\r\n", "\n").split("\n")
    if not lines or lines[0].rstrip() != "---":
        raise _invalid(skill_file, "must start with YAML frontmatter between '---' lines")
    index = next((i for i, line in enumerate(lines[1:], start=1) if line.rstrip() == "---"), None)
    if index is None:
        raise _invalid(skill_file, "frontmatter has no closing '---' line")
    try:
        data = safe_load("\n".join(lines[1:index]))
    except yaml.YAMLError as err:
        raise _invalid(skill_file, f"frontmatter is not valid YAML: {err}") from None
    except RecursionError:  # pathological nesting: a clear error, not a crash
        raise _invalid(skill_file, "frontmatter nests too deeply to be valid YAML") from None
    if not isinstance(data, dict):
        raise _invalid(skill_file, "frontmatter must be a YAML mapping with name and description")
    return data, "\n".join(lines[index + 1 :]).strip()


def _declared_resources(folder: Path) -> tuple[str, ...]:
    found: list[str] = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.startswith(".") or name == SKILL_FILE:
                continue
            path = Path(root) / name
            if stat.S_ISREG(path.lstat().st_mode):  # a symlink is not a declared resource
                found.append(path.relative_to(folder).as_posix())
    return tuple(sorted(found))


def _read_skill_file(skill_file: Path) -> bytes:
    """SKILL.md's bytes: a regular file in the skill folder itself, never through a symlink
    (one could point anywhere on the machine), at most ``MAX_SKILL_FILE_BYTES``."""
    if skill_file.is_symlink():  # also where the platform has no O_NOFOLLOW
        raise _invalid(skill_file, "it is a symlink; copy the file into the skill folder instead")
    try:
        descriptor = os.open(skill_file, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK)
    except OSError as err:
        if err.errno == errno.ELOOP:  # replaced by a symlink since the check above
            raise _invalid(
                skill_file, "it is a symlink; copy the file into the skill folder instead"
            ) from None
        raise
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _invalid(skill_file, "it is not a regular file")
        limit = MAX_SKILL_FILE_BYTES
        if info.st_size > limit:
            raise _invalid(skill_file, _too_large(info.st_size))
        data = handle.read(limit + 1)
    if len(data) > limit:  # grew after fstat
        raise _invalid(skill_file, _too_large(len(data)))
    return data


def _too_large(size: int) -> str:
    return (
        f"it is {size:,} bytes, over the {MAX_SKILL_FILE_BYTES // 1024} KiB limit for a {SKILL_FILE} "
        "(its body joins the model's context whole); move detail into resources the skill names"
    )


def load_skill_file(folder: Path) -> Skill:
    """Validate one skill folder; ``SkillError`` names its SKILL.md and the broken rule."""
    skill_file = folder / SKILL_FILE
    try:
        text = _read_skill_file(skill_file).decode("utf-8")
    except FileNotFoundError:
        raise SkillError(f"Invalid skill folder {display_path(folder)!r}: it has no {SKILL_FILE}") from None
    except OSError as err:
        raise _invalid(skill_file, f"cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise _invalid(skill_file, f"not UTF-8 text (invalid byte at offset {err.start})") from None
    data, body = _split_frontmatter(text, skill_file)
    try:
        front = _Frontmatter.model_validate(data)
    except ValidationError as err:
        raise _invalid(skill_file, _frontmatter_problem(err)) from None
    if front.name != folder.name:
        raise _invalid(skill_file, f"name: must equal the folder name {folder.name!r}, got {front.name!r}")
    if not _COMMENT_OR_SPACE.sub("", body):
        # A skill with no instructions would load as nothing: a packaging mistake, caught here.
        raise _invalid(skill_file, "the body after the frontmatter is empty; a skill needs instructions")
    extras = front.model_dump(by_alias=True, exclude={"name", "description"}, exclude_none=True)
    return Skill(
        name=front.name,
        description=front.description,
        folder=folder,
        body=body,
        resources=_declared_resources(folder),
        metadata=MappingProxyType(extras),
    )


class SkillCatalog:
    """The validated skills of one folder, by name. Immutable after discovery."""

    def __init__(self, skills: Mapping[str, Skill], folder: Path | None = None) -> None:
        self._skills: Mapping[str, Skill] = MappingProxyType(dict(sorted(skills.items())))
        self.folder = folder

    @classmethod
    def discover(cls, skills_dir: Path | None) -> SkillCatalog:
        """Every ``<skills_dir>/<name>/SKILL.md``; an empty catalog when ``skills_dir`` is None."""
        if skills_dir is None:
            return cls({})
        skills_dir = Path(skills_dir)
        if not skills_dir.is_dir():
            state = "is not a folder" if skills_dir.exists() else "does not exist"
            raise SkillError(f"Skills folder {display_path(skills_dir)!r} (skills.dir) {state}")
        skills: dict[str, Skill] = {}
        for entry in sorted(skills_dir.iterdir()):
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            if entry.is_symlink():
                raise SkillError(
                    f"Invalid skill folder {display_path(entry)!r}: it is a symlink; copy the skill instead"
                )
            skill = load_skill_file(entry)
            skills[skill.name] = skill
        return cls(skills, skills_dir)

    @property
    def skills(self) -> Mapping[str, Skill]:
        return self._skills

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._skills)

    @property
    def has_skills(self) -> bool:
        """Whether ``load_skill`` should be offered to the model."""
        return bool(self._skills)

    @property
    def has_resources(self) -> bool:
        """Whether ``load_skill_resource`` should be offered to the model."""
        return any(skill.resources for skill in self._skills.values())

    def get(self, name: str) -> Skill | None:
        return self._skills.get(name)

    def render_catalog(self) -> str:
        """One ``- name: description`` line per skill, sorted by name; '' when there are none.

        Only name and description are resident; the body arrives through load_skill.
        """
        return "\n".join(
            f"- {skill.name}: {' '.join(skill.description.split())}" for skill in self._skills.values()
        )
