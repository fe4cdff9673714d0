"""A SKILL.md that is a symlink, not a regular file or too large is refused at discovery
(issue 47, item 13): symlinked folders and resources were refused, the file itself was
not, and a 3 MB body was loaded whole into the model's context."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness_ros.errors import SkillError
from harness_ros.skills import SkillCatalog
from harness_ros.skills.contracts import MAX_SKILL_FILE_BYTES

SECRET = "TOP-SECRET-OUTSIDE-THE-SKILLS-FOLDER"


def _skill_text(name: str, body: str = "Pick the mug by its handle.") -> str:
    return f"---\nname: {name}\ndescription: Hand an object over.\n---\n{body}\n"


def test_a_symlinked_skill_file_is_refused_and_its_target_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text(_skill_text("handover", SECRET), encoding="utf-8")
    folder = tmp_path / "skills" / "handover"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").symlink_to(outside)
    with pytest.raises(SkillError) as raised:
        SkillCatalog.discover(tmp_path / "skills")
    message = str(raised.value)
    assert "SKILL.md" in message and "handover" in message
    assert "symlink" in message
    assert SECRET not in message


def test_a_symlink_within_the_folder_is_refused_too(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "handover"
    folder.mkdir(parents=True)
    (folder / "real.md").write_text(_skill_text("handover"), encoding="utf-8")
    (folder / "SKILL.md").symlink_to("real.md")
    with pytest.raises(SkillError, match="symlink"):
        SkillCatalog.discover(tmp_path / "skills")


def test_a_three_megabyte_skill_file_is_refused_naming_the_limit(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "huge"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(_skill_text("huge", "Stay careful. " * 220_000), encoding="utf-8")
    assert (folder / "SKILL.md").stat().st_size > 3_000_000
    with pytest.raises(SkillError) as raised:
        SkillCatalog.discover(tmp_path / "skills")
    message = str(raised.value)
    assert "SKILL.md" in message and "huge" in message
    assert "64 KiB" in message


def test_a_skill_file_at_the_limit_loads(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "full"
    folder.mkdir(parents=True)
    head = _skill_text("full", "")
    (folder / "SKILL.md").write_text(head + "x" * (MAX_SKILL_FILE_BYTES - len(head)), encoding="utf-8")
    assert (folder / "SKILL.md").stat().st_size == MAX_SKILL_FILE_BYTES
    skill = SkillCatalog.discover(tmp_path / "skills").get("full")
    assert skill is not None and len(skill.body) == MAX_SKILL_FILE_BYTES - len(head)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_skill_file_is_refused_without_blocking(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "pipe"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "SKILL.md")
    with pytest.raises(SkillError, match="not a regular file"):
        SkillCatalog.discover(tmp_path / "skills")
