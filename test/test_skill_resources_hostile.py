"""Hostile ``load_skill_resource`` requests: every escape, link and oversized or binary file
is refused with a failure envelope, and nothing outside the skill's declared files is read.

The skill folder is real (``tmp_path``), with a secret file beside it, symlinks
pointing out of and within the folder, a sparse multi-GiB file, a binary file and a
FIFO. Requests go through the ``load_skill_resource`` tool of a ``ToolRegistry``,
the path the model uses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness_ros.skills import MAX_RESOURCE_BYTES, SkillCatalog, SkillSession
from harness_ros.skills.tools import skill_tools
from harness_ros.tools import CancelToken, ToolRegistry

FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    max_examples=1500,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

SECRET = "TOP-SECRET-OUTSIDE-THE-SKILL"
GOOD = "Hand the mug over handle first."
NESTED = "Check the gripper before the handover."
SKILL = "handover"


@dataclass
class Workspace:
    root: Path
    skill_dir: Path
    registry: ToolRegistry
    session: SkillSession

    def request(self, path: Any) -> dict[str, Any]:
        return self.registry.execute("load_skill_resource", {"path": path}, cancel=CancelToken())


def _write_skill(skill_dir: Path) -> None:
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text(
        f"---\nname: {SKILL}\ndescription: Hand an object to a person.\n---\nUse the checklist.\n"
    )
    (skill_dir / "good.md").write_text(GOOD)
    (skill_dir / "sub").mkdir()
    (skill_dir / "sub" / "nested.md").write_text(NESTED)


def _build(root: Path, *, hostile: bool) -> Workspace:
    """``<root>/secret.txt`` and ``<root>/skills/handover/`` with hostile entries added after discovery."""
    (root / "secret.txt").write_text(SECRET)
    (root / "outside").mkdir()
    (root / "outside" / "secret.md").write_text(SECRET)
    skill_dir = root / "skills" / SKILL
    _write_skill(skill_dir)
    catalog = SkillCatalog.discover(root / "skills")
    if hostile:
        # Added after discovery, as a compromised or careless deployment would.
        (skill_dir / "link_out.md").symlink_to(root / "secret.txt")
        (skill_dir / "link_abs.md").symlink_to("/etc/hostname")
        (skill_dir / "link_in.md").symlink_to(skill_dir / "good.md")
        (skill_dir / "link_rel.md").symlink_to("good.md")
        (skill_dir / "link_dir").symlink_to(root / "outside")
        (skill_dir / "sub" / "link_up").symlink_to("..")
        (skill_dir / "dangling.md").symlink_to(root / "nowhere.md")
        with (skill_dir / "huge.md").open("wb") as handle:
            handle.truncate(4 * 1024**3)  # sparse: 4 GiB of size, no disk
        (skill_dir / "just_over.md").write_bytes(b"a" * (MAX_RESOURCE_BYTES + 1))
        (skill_dir / "binary.bin").write_bytes(bytes(range(256)) * 4)
        (skill_dir / "latin1.md").write_bytes("caf\xe9 ".encode("latin-1") + SECRET.encode())
        os.mkfifo(skill_dir / "pipe.md")
        (skill_dir / "%2e%2e%2fliteral.md").write_text(GOOD)  # a literal name, not a decoded path
    session = SkillSession(catalog)
    registry = ToolRegistry(skill_tools(session, catalog))
    loaded = registry.execute("load_skill", {"name": SKILL}, cancel=CancelToken())
    assert loaded["success"] is True, loaded
    return Workspace(root, skill_dir, registry, session)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return _build(tmp_path, hostile=True)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path the skill session hands to ``os.open`` (to prove a refusal read nothing)."""
    seen: list[str] = []
    real_open = os.open

    def spy(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        seen.append(os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr("harness_ros.skills.session.os.open", spy)
    return seen


def _refused(result: dict[str, Any]) -> str:
    assert result["success"] is False, result
    assert SECRET not in repr(result)
    assert "content" not in result
    return result["reason"]


# --------------------------------------------------------------------------- the declared files work


def test_declared_resources_are_read(workspace: Workspace) -> None:
    assert workspace.request("good.md") == {
        "success": True,
        "skill": SKILL,
        "path": "good.md",
        "content": GOOD,
    }
    nested = workspace.request("sub/./nested.md")
    assert nested["content"] == NESTED and nested["path"] == "sub/nested.md"
    assert workspace.request("sub/../good.md")["content"] == GOOD  # stays inside: allowed


# --------------------------------------------------------------------------- path escapes

TRAVERSALS = [
    "../secret.txt",
    "../../secret.txt",
    "sub/../../secret.txt",
    "sub/../../../secret.txt",
    "./../secret.txt",
    "good.md/../../secret.txt",
    "..",
    "../",
    "../skills/handover/good.md",  # leaves and re-enters: still refused
]
ABSOLUTE = [
    "/etc/passwd",
    "//etc/passwd",
    "/",
    "/proc/self/environ",
    "/dev/zero",
]
ENCODED = [
    "%2e%2e%2fsecret.txt",
    "%2e%2e/secret.txt",
    "..%2fsecret.txt",
    "%2E%2E%2F%2E%2E%2Fsecret.txt",
    "..%252fsecret.txt",
    "%252e%252e%252fsecret.txt",
    "file:///etc/passwd",
    "..%00/secret.txt",
]
BACKSLASHES = ["..\\secret.txt", "sub\\..\\..\\secret.txt", "\\etc\\passwd", "good.md\\"]
NUL_BYTES = ["good.md\x00", "../secret.txt\x00good.md", "\x00", "sub/\x00/nested.md"]
LOOKALIKES = [
    "\u2024\u2024/secret.txt",  # one dot leader, twice
    "\uff0e\uff0e/secret.txt",  # fullwidth full stop
    "\uff0e\uff0e\uff0fsecret.txt",  # fullwidth solidus
    "..\u2215secret.txt",  # division slash
    "..\u2044secret.txt",  # fraction slash
    "\u0660\u0660/secret.txt",
    "..\uff3csecret.txt",  # fullwidth reverse solidus
    "\u202e../secret.txt",  # right-to-left override
    "..\u200b/secret.txt",  # zero-width space
]
HIDDEN_AND_SELF = [".", "./", "", "   ", "SKILL.md", "sub/../SKILL.md", ".hidden", "sub/.git/config", "sub"]


@pytest.mark.parametrize("path", TRAVERSALS + ABSOLUTE + ENCODED + BACKSLASHES + NUL_BYTES + LOOKALIKES)
def test_escapes_are_refused_without_reading_outside(
    workspace: Workspace, opened: list[str], path: str
) -> None:
    reason = _refused(workspace.request(path))
    assert SKILL in reason or "resource path" in reason
    # Only the skill folder itself and names inside it were opened, never the secret.
    assert all("secret" not in name or "%2" in name for name in opened), opened
    assert all(not name.startswith("/") or name == str(workspace.skill_dir) for name in opened), opened


@pytest.mark.parametrize("path", HIDDEN_AND_SELF)
def test_hidden_files_the_folder_and_skill_md_are_not_resources(workspace: Workspace, path: str) -> None:
    _refused(workspace.request(path))


@pytest.mark.parametrize("path", [None, 7, 1.5, True, ["good.md"], {"path": "good.md"}, b"good.md"])
def test_non_string_paths_are_refused(workspace: Workspace, path: Any) -> None:
    reason = _refused(workspace.request(path))
    assert "invalid arguments for 'load_skill_resource'" in reason


def test_encoded_names_are_literal_names_not_decoded_paths(workspace: Workspace) -> None:
    # A file literally named "%2e%2e%2fliteral.md" inside the folder is just a file there:
    # looked up under its literal name (never decoded to ../literal.md), and refused
    # because it was added after discovery (only catalogued files are served, issue 16).
    reason = _refused(workspace.request("%2e%2e%2fliteral.md"))
    assert "'%2e%2e%2fliteral.md' is not a declared resource" in reason


# --------------------------------------------------------------------------- links

SYMLINKS = [
    "link_out.md",
    "link_abs.md",
    "link_in.md",
    "link_rel.md",
    "link_dir/secret.md",
    "sub/link_up/good.md",
    "sub/link_up/sub/nested.md",
    "dangling.md",
]


@pytest.mark.parametrize("path", SYMLINKS)
def test_symlinks_inside_or_out_are_refused(workspace: Workspace, opened: list[str], path: str) -> None:
    reason = _refused(workspace.request(path))
    assert "symlink" in reason
    links = {part for part in path.split("/") if "link" in part or part == "dangling.md"}
    assert not links & set(opened), opened  # refused from lstat: the link itself is never opened


def test_symlinks_are_not_declared_resources(tmp_path: Path) -> None:
    skill_dir = tmp_path / "skills" / SKILL
    _write_skill(skill_dir)
    (tmp_path / "secret.txt").write_text(SECRET)
    (skill_dir / "link_out.md").symlink_to(tmp_path / "secret.txt")
    (skill_dir / "link_in.md").symlink_to("good.md")
    catalog = SkillCatalog.discover(tmp_path / "skills")
    skill = catalog.get(SKILL)
    assert skill is not None and skill.resources == ("good.md", "sub/nested.md")


def test_file_swapped_for_a_symlink_after_loading_is_refused(tmp_path: Path) -> None:
    workspace = _build(tmp_path, hostile=False)
    good = workspace.skill_dir / "good.md"
    good.unlink()
    good.symlink_to(tmp_path / "secret.txt")
    reason = _refused(workspace.request("good.md"))
    assert "symlink" in reason


# --------------------------------------------------------------------------- size, type, encoding


def test_huge_file_is_refused_before_reading(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    real_fdopen = os.fdopen

    def spy(fd: int, *args: Any, **kwargs: Any) -> Any:
        reads.append(fd)
        return real_fdopen(fd, *args, **kwargs)

    monkeypatch.setattr("harness_ros.skills.session.os.fdopen", spy)
    for path in ("huge.md", "just_over.md"):
        reason = _refused(workspace.request(path))
        assert f"over the {MAX_RESOURCE_BYTES // 1024} KiB limit" in reason
    assert reads == []  # refused from fstat alone: not one byte read


def test_fifo_and_folders_are_not_regular_files(workspace: Workspace, opened: list[str]) -> None:
    for path in ("pipe.md", "sub", "sub/"):
        assert "not a regular file" in _refused(workspace.request(path))
    assert not any(name.endswith("pipe.md") for name in opened)  # never opened, so never blocks


@pytest.mark.parametrize("path", ["binary.bin", "latin1.md"])
def test_binary_files_are_refused_and_never_returned(workspace: Workspace, path: str) -> None:
    reason = _refused(workspace.request(path))
    assert "not UTF-8 text" in reason
    assert "\ufffd" not in reason and "\x00" not in reason


def test_overlong_paths_are_refused(workspace: Workspace) -> None:
    for path in ("a" * 5000, "sub/" * 2000 + "nested.md", "../" * 2000 + "secret.txt"):
        _refused(workspace.request(path))


# --------------------------------------------------------------------------- fuzzed paths

_PIECES = [
    "..",
    ".",
    "",
    "sub",
    "good.md",
    "nested.md",
    "secret.txt",
    "link_out.md",
    "link_dir",
    "link_up",
    "SKILL.md",
    ".hidden",
    "%2e%2e",
    "%2f",
    "\\",
    "\x00",
    "\uff0e\uff0e",
    "\u2215",
    "~",
    "$HOME",
    "outside",
    "handover",
    "skills",
    "pipe.md",
    "huge.md",
    "binary.bin",
]
# Paths that often do name a real file, so the success side is exercised too.
inside_path = st.tuples(
    st.lists(st.sampled_from(["sub", ".", "", "sub/..", "./sub"]), max_size=3),
    st.sampled_from(["good.md", "nested.md", "sub/nested.md"]),
).map(lambda t: "/".join([*t[0], t[1]]))
hostile_path = st.one_of(
    inside_path,
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=7).map("/".join),
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=7).map(lambda parts: "/" + "/".join(parts)),
    st.text(alphabet=st.sampled_from("./\\%2e5cf\x00\uff0e\u2215~ab"), max_size=16),
    st.text(max_size=24),
)


@pytest.fixture(scope="module")
def shared_workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """One hostile folder for every fuzzed example: reads never change it."""
    return _build(tmp_path_factory.mktemp("hostile"), hostile=True)


@FUZZ
@given(path=hostile_path)
def test_fuzzed_paths_return_a_file_inside_the_folder_or_a_failure(
    shared_workspace: Workspace, path: str
) -> None:
    opened: list[str] = []
    real_open = os.open

    def spy(name: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fsdecode(name))
        return real_open(name, flags, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("harness_ros.skills.session.os.open", spy)
        result = shared_workspace.request(path)
    assert SECRET not in repr(result)
    # The folder is opened by its path; everything below it one plain name at a time.
    folder = str(shared_workspace.skill_dir)
    assert all(name == folder or ("/" not in name and name not in {"..", "."}) for name in opened), opened
    event("read" if result["success"] else "refused")
    if result["success"]:
        assert result["content"] in {GOOD, NESTED}
        target = shared_workspace.skill_dir / result["path"]
        assert ".." not in result["path"].split("/")
        assert target.resolve().is_relative_to(shared_workspace.skill_dir.resolve())
        assert not any(p.is_symlink() for p in [target, *target.parents][: result["path"].count("/") + 1])
    else:
        assert result["reason"].strip()
