"""Per-task skill state: ``load_skill`` / ``load_skill_resource`` and the loaded body.

One skill is loaded at a time (as in the reference harness). Loading a different
skill replaces the loaded one and the result says which it replaced, so the model
knows the earlier instructions left its context. Loading the same skill again
succeeds without repeating the body. ``reset()`` at task end unloads it.

Every outcome is a tool-result envelope; nothing here raises for model input.

Resource reads are limited to the files catalogued at discovery (``Skill.resources``)
and confined to the loaded skill's folder. The path is normalised
lexically (``..`` may not leave the folder), then opened one component at a time
relative to the folder with ``O_NOFOLLOW``, so a symlink anywhere on the path is
refused even if it appears after discovery.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from harness_ros.skills.catalog import SkillCatalog
from harness_ros.skills.contracts import (
    LOAD_SKILL,
    LOAD_SKILL_RESOURCE,
    MAX_RESOURCE_BYTES,
    SKILL_FILE,
    Skill,
)
from harness_ros.tools.contracts import failure, success

__all__ = ["SkillSession"]

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO must not block the task


class _RefusedError(Exception):
    """A resource request that becomes a failure envelope (internal)."""


def _normalise(raw: str) -> tuple[str, ...]:
    """Path parts inside the skill folder, or ``_RefusedError`` with the reason."""
    if "\x00" in raw or "\\" in raw:
        raise _RefusedError(f"resource path {raw!r} contains a NUL byte or a backslash")
    if raw.startswith("/"):
        raise _RefusedError(f"resource path {raw!r} must be relative to the skill folder")
    parts: list[str] = []
    for part in raw.split("/"):
        if part in {"", "."}:
            continue
        if part == "..":
            if not parts:
                raise _RefusedError(f"resource path {raw!r} leaves the skill folder")
            parts.pop()
        else:
            parts.append(part)
    if not parts:
        raise _RefusedError(f"resource path {raw!r} names the skill folder, not a file")
    if any(part.startswith(".") for part in parts):
        raise _RefusedError(
            f"resource path {raw!r} is hidden (a part starts with '.'); hidden files are not resources"
        )
    if parts[-1] == SKILL_FILE:
        raise _RefusedError(f"{SKILL_FILE} is the skill itself, not a resource; it is loaded by {LOAD_SKILL}")
    return tuple(parts)


def _read_confined(folder: Path, parts: tuple[str, ...], shown: str) -> bytes:
    """Read ``folder/parts`` without following any symlink; at most MAX_RESOURCE_BYTES."""
    with ExitStack() as stack:
        try:
            fd = os.open(folder, os.O_RDONLY | _O_DIRECTORY)
        except OSError as err:
            raise _RefusedError(f"skill folder is unreadable: {err.strerror}") from None
        stack.callback(os.close, fd)
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            flags = os.O_RDONLY | _O_NOFOLLOW | (_O_NONBLOCK if last else _O_DIRECTORY)
            prefix = "/".join(parts[: depth + 1])
            through_link = f"resource path {shown!r} goes through a symlink ({prefix!r})"
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    raise _RefusedError(through_link)
                if not last and not stat.S_ISDIR(st.st_mode):
                    raise _RefusedError(f"resource path {shown!r}: {prefix!r} is not a folder")
                if last and not stat.S_ISREG(st.st_mode):
                    raise _RefusedError(f"resource {shown!r} is not a regular file")
                fd = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                raise _RefusedError(f"no resource {shown!r}") from None
            except OSError as err:
                if err.errno == errno.ELOOP:  # swapped for a symlink after the check
                    raise _RefusedError(through_link) from None
                raise _RefusedError(f"resource {shown!r} is unreadable: {err.strerror}") from None
            stack.callback(os.close, fd)
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):  # swapped after the check
            raise _RefusedError(f"resource {shown!r} is not a regular file")
        size = opened.st_size
        if size > MAX_RESOURCE_BYTES:
            raise _RefusedError(
                f"resource {shown!r} is {size} bytes, over the {MAX_RESOURCE_BYTES // 1024} KiB limit"
            )
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(MAX_RESOURCE_BYTES + 1)
        if len(data) > MAX_RESOURCE_BYTES:  # grew after fstat
            raise _RefusedError(f"resource {shown!r} is over the {MAX_RESOURCE_BYTES // 1024} KiB limit")
        return data


class SkillSession:
    """What one task has loaded from a ``SkillCatalog``. Not shared between tasks."""

    def __init__(self, catalog: SkillCatalog) -> None:
        self._catalog = catalog
        self._loaded: Skill | None = None

    @property
    def catalog(self) -> SkillCatalog:
        return self._catalog

    @property
    def loaded_skill(self) -> Skill | None:
        return self._loaded

    @property
    def loaded_name(self) -> str | None:
        """The name of the skill loaded for this task, or None."""
        return self._loaded.name if self._loaded is not None else None

    @property
    def offers_resources(self) -> bool:
        """Whether ``load_skill_resource`` has anything to read: the loaded skill lists
        resources. Until then the tool is not offered (its definition is prompt the model
        cannot use), though a call is still answered."""
        return self._loaded is not None and bool(self._loaded.resources)

    def _available(self) -> str:
        names = self._catalog.names
        return f"available skills: {', '.join(names)}" if names else "no skills are available"

    def load_skill(self, name: Any) -> dict[str, Any]:
        """Put one skill's body into the Resident context for the rest of the task."""
        if not isinstance(name, str) or not name.strip():
            return failure(f"{LOAD_SKILL} needs a skill name (a non-empty string); {self._available()}")
        skill = self._catalog.get(name)
        if skill is None:
            return failure(f"unknown skill {name!r}; {self._available()}")
        if self._loaded is not None and self._loaded.name == skill.name:
            return success(
                skill=skill.name,
                already_loaded=True,
                message=f"Skill {skill.name!r} is already loaded; its instructions are in your context.",
            )
        replaced = self._loaded.name if self._loaded is not None else None
        self._loaded = skill
        message = f"Skill {skill.name!r} is loaded; its instructions are in your context for this task."
        result = success(skill=skill.name, loaded=True, resources=list(skill.resources), message=message)
        if replaced is not None:
            result["replaced"] = replaced
            result["message"] += f" It replaced skill {replaced!r}."
        return result

    def load_skill_resource(self, path: Any) -> dict[str, Any]:
        """One declared UTF-8 resource file of the loaded skill, as text."""
        skill = self._loaded
        if skill is None:
            return failure(f"no skill is loaded; call {LOAD_SKILL} first, then {LOAD_SKILL_RESOURCE}")
        if not isinstance(path, str) or not path.strip():
            return failure(f"{LOAD_SKILL_RESOURCE} needs a resource path (a non-empty string)")
        declared = ", ".join(skill.resources) or "none"
        try:
            parts = _normalise(path.strip())
            shown = "/".join(parts)
            data = _read_confined(skill.folder, parts, shown)
        except _RefusedError as refused:
            return failure(f"{refused} in skill {skill.name!r} (declared resources: {declared})")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            return failure(
                f"resource {shown!r} of skill {skill.name!r} is not UTF-8 text "
                f"(invalid byte at offset {err.start})"
            )
        if shown not in skill.resources:
            # Only files catalogued at discovery: one added (or renamed) later was never
            # reviewed with the skill and is not served. Checked last so a symlink, FIFO or
            # missing file keeps its precise reason; the content is never returned.
            return failure(
                f"{shown!r} is not a declared resource of skill {skill.name!r} (it was not there at "
                f"discovery; declared resources: {declared})"
            )
        return success(skill=skill.name, path=shown, content=text)

    def render_loaded(self) -> str | None:
        """The loaded skill for the Resident context (name, resources, body); None when none."""
        skill = self._loaded
        if skill is None:
            return None
        lines = [f"Loaded skill: {skill.name}"]
        if skill.resources:
            lines.append(f"Resources ({LOAD_SKILL_RESOURCE}): {', '.join(skill.resources)}")
        return "\n".join(lines) + "\n\n" + skill.body + "\n"

    def reset(self) -> None:
        """Unload at task end (completed or aborted)."""
        self._loaded = None
