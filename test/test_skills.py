"""Skill catalog: discovery and frontmatter rules; SkillSession load semantics and confinement."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from harness_ros.errors import SkillError
from harness_ros.skills import (
    LOAD_SKILL_RESOURCE_SCHEMA,
    LOAD_SKILL_SCHEMA,
    MAX_RESOURCE_BYTES,
    SkillCatalog,
    SkillSession,
)
from harness_ros.tools.contracts import normalize_envelope

REPO_ROOT = Path(__file__).resolve().parents[1]


def make_skill(
    root: Path,
    folder: str,
    *,
    frontmatter: str | None = None,
    body: str = "## Steps\n1. Do it.\n",
    files: dict[str, str | bytes] | None = None,
) -> Path:
    skill_dir = root / folder
    skill_dir.mkdir(parents=True)
    if frontmatter is None:
        frontmatter = f"name: {folder}\ndescription: Does {folder}.\n"
    (skill_dir / "SKILL.md").write_text(f"---\n{frontmatter}---\n\n{body}", encoding="utf-8")
    for relative, content in (files or {}).items():
        path = skill_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return skill_dir


# --- discovery and frontmatter rules -------------------------------------------------


def test_shipped_skills_are_valid_and_one_declares_a_resource() -> None:
    catalog = SkillCatalog.discover(REPO_ROOT / "skills")
    assert catalog.names == ("fetch-object", "recover-failed-grasp", "tidy-surface")
    assert catalog.skills["fetch-object"].resources == ("checklists/handover.md",)
    assert catalog.has_skills and catalog.has_resources
    lines = catalog.render_catalog().splitlines()
    assert [line.split(":")[0] for line in lines] == [f"- {name}" for name in catalog.names]
    # Only name and description are resident, never the body.
    assert "Working order" not in catalog.render_catalog()
    assert catalog.render_catalog() == SkillCatalog.discover(REPO_ROOT / "skills").render_catalog()


def test_no_configured_folder_is_an_empty_catalog() -> None:
    catalog = SkillCatalog.discover(None)
    assert not catalog.has_skills and not catalog.has_resources
    assert catalog.render_catalog() == ""


def test_configured_folder_must_exist_and_be_a_folder(tmp_path: Path) -> None:
    with pytest.raises(SkillError, match=r"absent'? \(skills\.dir\) does not exist"):
        SkillCatalog.discover(tmp_path / "absent")
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(SkillError, match=r"\(skills\.dir\) is not a folder"):
        SkillCatalog.discover(tmp_path / "file")


def test_catalog_renders_sorted_one_line_per_skill(tmp_path: Path) -> None:
    make_skill(tmp_path, "zeta", frontmatter="name: zeta\ndescription: >\n  Last\n  one.\n")
    make_skill(tmp_path, "alpha")
    (tmp_path / "README.md").write_text("not a skill", encoding="utf-8")
    (tmp_path / ".drafts").mkdir()
    catalog = SkillCatalog.discover(tmp_path)
    assert catalog.render_catalog() == "- alpha: Does alpha.\n- zeta: Last one."
    assert not catalog.has_resources


@pytest.mark.parametrize(
    ("folder", "name_yaml", "rule"),
    [
        ("x", '""', r"name: must be 1-64 characters, got 0"),
        ("a" * 65, "a" * 65, r"name: must be 1-64 characters, got 65"),
        ("Fetch", "Fetch", r"name: must use only lowercase letters, digits and hyphens"),
        ("fetch_object", "fetch_object", r"name: must use only lowercase letters, digits and hyphens"),
        ("-fetch", "'-fetch'", r"name: must not start or end with a hyphen"),
        ("fetch-", "fetch-", r"name: must not start or end with a hyphen"),
        ("fetch--object", "fetch--object", r"name: must not contain consecutive hyphens"),
        (
            "fetch-object",
            "fetch-thing",
            r"name: must equal the folder name 'fetch-object', got 'fetch-thing'",
        ),
        ("x", "42", r"name: must be a string"),
    ],
)
def test_name_rules(tmp_path: Path, folder: str, name_yaml: str, rule: str) -> None:
    skill_dir = make_skill(tmp_path, folder, frontmatter=f"name: {name_yaml}\ndescription: d\n")
    with pytest.raises(SkillError, match=rule) as info:
        SkillCatalog.discover(tmp_path)
    assert str(skill_dir / "SKILL.md") in str(info.value)


def test_longest_name_and_description_are_accepted(tmp_path: Path) -> None:
    name = "a" * 64
    make_skill(tmp_path, name, frontmatter=f"name: {name}\ndescription: {'d' * 1024}\n")
    assert SkillCatalog.discover(tmp_path).skills[name].description == "d" * 1024


@pytest.mark.parametrize(
    ("frontmatter", "rule"),
    [
        ("name: s\n", r"description: required frontmatter key is missing"),
        ("description: d\n", r"name: required frontmatter key is missing"),
        ('name: s\ndescription: ""\n', r"description: must be 1-1024 characters, got 0"),
        ('name: s\ndescription: "   "\n', r"description: must be 1-1024 characters, got 0"),
        (f"name: s\ndescription: {'d' * 1025}\n", r"description: must be 1-1024 characters, got 1025"),
        ("name: s\ndescription: [a, b]\n", r"description: must be a string"),
        ("name: s\ndescription: d\nversion: 2\n", r"version: unknown frontmatter key \(allowed: name, desc"),
        ("name: s\ndescription: d\nmetadata:\n  rev: 2\n", r"metadata\.rev: must be a string"),
        (f"name: s\ndescription: d\ncompatibility: {'c' * 501}\n", r"compatibility: must be 1-500 char"),
        ("name: s\ndescription: d: e: f\n", r"frontmatter is not valid YAML"),
        ("- name\n- s\n", r"frontmatter must be a YAML mapping"),
    ],
)
def test_frontmatter_rules(tmp_path: Path, frontmatter: str, rule: str) -> None:
    skill_dir = make_skill(tmp_path, "s", frontmatter=frontmatter)
    with pytest.raises(SkillError, match=rule) as info:
        SkillCatalog.discover(tmp_path)
    assert str(info.value).startswith(f"Invalid skill ({skill_dir / 'SKILL.md'}): ")


def test_optional_spec_keys_are_kept_as_metadata(tmp_path: Path) -> None:
    frontmatter = (
        "name: s\ndescription: d\nlicense: MIT\ncompatibility: ROS 2 Kilted\n"
        "metadata:\n  author: lab\nallowed-tools: load_skill_resource\n"
    )
    make_skill(tmp_path, "s", frontmatter=frontmatter)
    skill = SkillCatalog.discover(tmp_path).skills["s"]
    assert dict(skill.metadata) == {
        "license": "MIT",
        "compatibility": "ROS 2 Kilted",
        "metadata": {"author": "lab"},
        "allowed-tools": "load_skill_resource",
    }


def test_missing_or_unclosed_frontmatter(tmp_path: Path) -> None:
    skill_dir = tmp_path / "s"
    skill_dir.mkdir()
    (skill_dir / "SKILL.md").write_text("# No frontmatter\n", encoding="utf-8")
    with pytest.raises(SkillError, match=r"SKILL\.md\): must start with YAML frontmatter"):
        SkillCatalog.discover(tmp_path)
    (skill_dir / "SKILL.md").write_text("---\nname: s\ndescription: d\n", encoding="utf-8")
    with pytest.raises(SkillError, match=r"frontmatter has no closing '---' line"):
        SkillCatalog.discover(tmp_path)
    (skill_dir / "SKILL.md").write_bytes(b"---\nname: s\ndescription: \xff\n---\n")
    with pytest.raises(SkillError, match=r"SKILL\.md\): not UTF-8 text"):
        SkillCatalog.discover(tmp_path)


def test_skill_folder_without_skill_file_or_symlinked_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "skills" / "empty").mkdir(parents=True)
    with pytest.raises(SkillError, match=r"empty'?: it has no SKILL\.md"):
        SkillCatalog.discover(tmp_path / "skills")
    (tmp_path / "skills" / "empty").rmdir()
    real = make_skill(tmp_path, "real")
    (tmp_path / "skills" / "real").symlink_to(real, target_is_directory=True)
    with pytest.raises(SkillError, match=r"real'?: it is a symlink"):
        SkillCatalog.discover(tmp_path / "skills")


def test_declared_resources_exclude_skill_file_hidden_and_symlinks(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("secret", encoding="utf-8")
    skill_dir = make_skill(
        tmp_path / "skills",
        "s",
        files={"notes.md": "n", "sub/deep.txt": "d", ".env": "x", ".git/config": "x", "sub/.hidden": "x"},
    )
    (skill_dir / "link.md").symlink_to(outside)
    (skill_dir / "linkdir").symlink_to(tmp_path, target_is_directory=True)
    skill = SkillCatalog.discover(tmp_path / "skills").skills["s"]
    assert skill.resources == ("notes.md", "sub/deep.txt")
    assert skill.body == "## Steps\n1. Do it."


# --- SkillSession: load_skill ----------------------------------------------------------


@pytest.fixture
def session(tmp_path: Path) -> SkillSession:
    make_skill(tmp_path / "skills", "fetch", files={"checklist.md": "- [ ] look\n", "sub/more.md": "more"})
    make_skill(tmp_path / "skills", "tidy", body="Tidy body.\n")
    return SkillSession(SkillCatalog.discover(tmp_path / "skills"))


def test_load_skill_puts_the_body_in_resident_context(session: SkillSession) -> None:
    assert session.render_loaded() is None
    result = session.load_skill("fetch")
    assert result == normalize_envelope(result)
    assert result["success"] is True and result["loaded"] is True
    assert result["resources"] == ["checklist.md", "sub/more.md"]
    assert "Do it" not in str(result)  # the body goes to Resident context, not the tool result
    rendered = session.render_loaded()
    assert rendered is not None
    assert rendered.startswith(
        "Loaded skill: fetch\nResources (load_skill_resource): checklist.md, sub/more.md\n"
    )
    assert "## Steps\n1. Do it." in rendered
    assert session.loaded_skill is not None and session.loaded_skill.name == "fetch"


def test_loading_the_same_skill_again_says_already_loaded(session: SkillSession) -> None:
    session.load_skill("fetch")
    before = session.render_loaded()
    again = session.load_skill("fetch")
    assert again["success"] is True and again["already_loaded"] is True
    assert "already loaded" in again["message"]
    assert session.render_loaded() == before
    assert before is not None and before.count("Do it") == 1


def test_loading_another_skill_replaces_the_loaded_one(session: SkillSession) -> None:
    session.load_skill("fetch")
    result = session.load_skill("tidy")
    assert result["success"] is True and result["replaced"] == "fetch"
    rendered = session.render_loaded()
    assert rendered is not None and "Tidy body." in rendered and "Do it" not in rendered
    refused = session.load_skill_resource("checklist.md")
    assert refused["success"] is False and "no resource 'checklist.md' in skill 'tidy'" in refused["reason"]


@pytest.mark.parametrize("name", ["unknown", "", None, 3])
def test_load_unknown_or_invalid_name_fails_naming_available_skills(
    session: SkillSession, name: object
) -> None:
    result = session.load_skill(name)
    assert result["success"] is False
    assert result["reason"].endswith("available skills: fetch, tidy")
    assert session.loaded_skill is None


def test_load_with_no_skills_says_so() -> None:
    result = SkillSession(SkillCatalog.discover(None)).load_skill("fetch")
    assert result == {"success": False, "reason": "unknown skill 'fetch'; no skills are available"}


def test_reset_unloads_at_task_end(session: SkillSession) -> None:
    session.load_skill("fetch")
    session.reset()
    assert session.loaded_skill is None and session.render_loaded() is None
    assert session.load_skill_resource("checklist.md")["success"] is False


# --- SkillSession: load_skill_resource -------------------------------------------------


def test_resource_requires_a_loaded_skill(session: SkillSession) -> None:
    result = session.load_skill_resource("checklist.md")
    assert result == {
        "success": False,
        "reason": "no skill is loaded; call load_skill first, then load_skill_resource",
    }


@pytest.mark.parametrize("path", ["checklist.md", "./checklist.md", "sub/../checklist.md"])
def test_resource_is_returned_as_text(session: SkillSession, path: str) -> None:
    session.load_skill("fetch")
    result = session.load_skill_resource(path)
    assert result == {"success": True, "skill": "fetch", "path": "checklist.md", "content": "- [ ] look\n"}


def test_nested_resource(session: SkillSession) -> None:
    session.load_skill("fetch")
    assert session.load_skill_resource("sub/more.md")["content"] == "more"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../tidy/SKILL.md", r"resource path '../tidy/SKILL.md' leaves the skill folder"),
        ("sub/../../tidy/x.md", r"leaves the skill folder"),
        ("/etc/passwd", r"resource path '/etc/passwd' must be relative to the skill folder"),
        ("SKILL.md", r"SKILL\.md is the skill itself, not a resource"),
        ("./sub/../SKILL.md", r"SKILL\.md is the skill itself"),
        (".env", r"resource path '.env' is hidden"),
        ("sub/.cache/x.md", r"is hidden"),
        (
            "missing.md",
            r"no resource 'missing.md' in skill 'fetch' \(declared resources: checklist.md, sub/more.md\)",
        ),
        ("sub", r"resource 'sub' is not a regular file"),
        ("checklist.md/x", r"'checklist.md' is not a folder"),
        ("", r"needs a resource path"),
        (".", r"names the skill folder, not a file"),
        ("a\x00b", r"contains a NUL byte"),
    ],
)
def test_resource_refusals(session: SkillSession, path: str, reason: str) -> None:
    session.load_skill("fetch")
    result = session.load_skill_resource(path)
    assert result["success"] is False
    assert re.search(reason, result["reason"]), result["reason"]
    assert result == normalize_envelope(result)


def test_symlinks_are_refused_at_every_component(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret", encoding="utf-8")
    skill_dir = make_skill(tmp_path / "skills", "s", files={"real/inside.md": "ok"})
    (skill_dir / "file-link.md").symlink_to(outside / "secret.md")
    (skill_dir / "dir-link").symlink_to(outside, target_is_directory=True)
    (skill_dir / "inner-link.md").symlink_to(skill_dir / "real" / "inside.md")
    session = SkillSession(SkillCatalog.discover(tmp_path / "skills"))
    session.load_skill("s")
    for path, component in [
        ("file-link.md", "file-link.md"),
        ("dir-link/secret.md", "dir-link"),
        ("inner-link.md", "inner-link.md"),  # even a link that stays inside
    ]:
        result = session.load_skill_resource(path)
        assert result["success"] is False
        assert f"goes through a symlink ('{component}')" in result["reason"]
    assert session.load_skill_resource("real/inside.md")["content"] == "ok"


def test_symlink_created_after_discovery_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("secret", encoding="utf-8")
    skill_dir = make_skill(tmp_path / "skills", "s", files={"notes.md": "n"})
    session = SkillSession(SkillCatalog.discover(tmp_path / "skills"))
    session.load_skill("s")
    (skill_dir / "notes.md").unlink()
    (skill_dir / "notes.md").symlink_to(tmp_path / "secret.md")
    result = session.load_skill_resource("notes.md")
    assert result["success"] is False and "symlink" in result["reason"]


def test_non_utf8_resource_is_refused(tmp_path: Path) -> None:
    make_skill(tmp_path / "skills", "s", files={"image.png": b"\x89PNG\r\n\x1a\n\xff"})
    session = SkillSession(SkillCatalog.discover(tmp_path / "skills"))
    session.load_skill("s")
    result = session.load_skill_resource("image.png")
    assert result["success"] is False
    assert result["reason"].startswith("resource 'image.png' of skill 's' is not UTF-8 text")


def test_resource_size_cap(tmp_path: Path) -> None:
    make_skill(
        tmp_path / "skills",
        "s",
        files={"max.md": "a" * MAX_RESOURCE_BYTES, "big.md": "a" * (MAX_RESOURCE_BYTES + 1)},
    )
    session = SkillSession(SkillCatalog.discover(tmp_path / "skills"))
    session.load_skill("s")
    assert len(session.load_skill_resource("max.md")["content"]) == MAX_RESOURCE_BYTES
    result = session.load_skill_resource("big.md")
    assert result["success"] is False
    assert f"is {MAX_RESOURCE_BYTES + 1} bytes, over the 64 KiB limit" in result["reason"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path / "skills", "s")
    os.mkfifo(skill_dir / "pipe.md")
    session = SkillSession(SkillCatalog.discover(tmp_path / "skills"))
    session.load_skill("s")
    result = session.load_skill_resource("pipe.md")
    assert result["success"] is False and "not a regular file" in result["reason"]


def test_tool_schemas_describe_the_arguments() -> None:
    assert LOAD_SKILL_SCHEMA["required"] == ["name"]
    assert LOAD_SKILL_SCHEMA["additionalProperties"] is False
    pattern = re.compile(LOAD_SKILL_SCHEMA["properties"]["name"]["pattern"])
    for name in SkillCatalog.discover(REPO_ROOT / "skills").names:
        assert pattern.fullmatch(name)
    assert not pattern.fullmatch("bad--name")
    assert LOAD_SKILL_RESOURCE_SCHEMA["required"] == ["path"]
    assert LOAD_SKILL_RESOURCE_SCHEMA["properties"]["path"]["type"] == "string"
