"""``harness-ros check`` and ``harness-ros skills list``: exit codes and messages, run as a user would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness_ros.commands.check import summarize_memory
from harness_ros.errors import ConfigError, MemoryStoreError
from harness_ros.paths import default_config_path, share_dir

REPO_ROOT = Path(__file__).resolve().parents[1]
ENTRY_POINT = REPO_ROOT / ".venv" / "bin" / "harness-ros"


MODEL_ENV = {"HARNESS_MODEL": "openai/gpt-4o-mini", "OPENAI_API_KEY": "sk-not-a-real-key"}
"""A model whose settings pass the offline check (nothing is sent to it)."""


def harness_ros(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [str(ENTRY_POINT)] if ENTRY_POINT.exists() else [sys.executable, "-m", "harness_ros.cli"]
    return subprocess.run(
        [*command, *args],
        cwd=cwd,
        env=env if env is not None else dict(os.environ, **MODEL_ENV),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def deployment(tmp_path: Path) -> Path:
    """A copy of the shipped profile, skills, memory and example config in a temp folder."""
    root = tmp_path / "deploy"
    for folder in ("config", "profiles", "skills", "memory"):
        shutil.copytree(REPO_ROOT / folder, root / folder)
    return root


def assert_user_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith("error: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr


def test_check_default_config_prints_the_summary(tmp_path: Path) -> None:
    # From an unrelated folder: the default config is the package's, not the cwd's.
    result = harness_ros("check", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "config/example.yaml" in out
    assert "model:   openai/gpt-4o-mini (from HARNESS_MODEL) [provider openai]\n" in out
    assert "mobile_manipulator.md (views: front, torso, wrist)" in out
    assert "skills:  3 (fetch-object, recover-failed-grasp, tidy-surface); 1 declared resource(s)" in out
    assert "tools:   none configured" in out
    assert "(5 entries: Preferences 2, Conventions 2, General Lessons 1; 0 tool ledger(s))" in out
    assert out.rstrip().endswith("check: OK")
    assert result.stderr == ""


def test_profile_without_camera_positions_fails_naming_it(deployment: Path) -> None:
    profile = deployment / "profiles" / "mobile_manipulator.md"
    text = profile.read_text(encoding="utf-8")
    assert "### Camera Positions\n" in text
    profile.write_text(text.replace("### Camera Positions\n", ""), encoding="utf-8")
    result = harness_ros("check", "--config", "config/example.yaml", cwd=deployment)
    assert_user_error(
        result,
        "error: Invalid Embodiment Profile (profiles/mobile_manipulator.md): "
        "missing item: Base-Relative Positions / Camera Positions",
    )
    assert result.stdout == ""


def test_unknown_config_key_fails_naming_key_and_file(deployment: Path) -> None:
    config = deployment / "config" / "example.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "\nmodle: x\n", encoding="utf-8")
    result = harness_ros("check", "--config", str(config), cwd=deployment)
    assert_user_error(result, f"Invalid configuration ({config})", "modle: unknown key")


def test_a_config_error_keeps_its_lines(deployment: Path) -> None:
    """Found in a timed bring-up: the error printed as one line with a literal '\\x0a'."""
    config = deployment / "config" / "example.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(
        text.replace("      camera_info: /head_camera/color/camera_info\n", ""), encoding="utf-8"
    )
    result = harness_ros("check", "--config", str(config), cwd=deployment)
    assert_user_error(
        result, f"error: Invalid configuration ({config}):\n  observations: Value error, depth.view"
    )
    assert "\\x0a" not in result.stderr, result.stderr


def test_missing_config_file_fails(tmp_path: Path) -> None:
    result = harness_ros("check", "--config", "absent.yaml", cwd=tmp_path)
    assert_user_error(result, "error: Cannot read configuration 'absent.yaml'")


def test_bad_skill_fails_naming_its_skill_file(deployment: Path) -> None:
    skill_file = deployment / "skills" / "tidy-surface" / "SKILL.md"
    skill_file.write_text(
        skill_file.read_text(encoding="utf-8").replace("name: tidy-surface", "name: Tidy"), encoding="utf-8"
    )
    result = harness_ros("check", "--config", "config/example.yaml", cwd=deployment)
    assert_user_error(
        result, "Invalid skill (skills/tidy-surface/SKILL.md): name: must use only lowercase letters"
    )


def test_memory_folder_missing_is_empty_and_ledgers_are_counted(deployment: Path) -> None:
    shutil.rmtree(deployment / "memory")
    result = harness_ros("check", "--config", "config/example.yaml", cwd=deployment)
    assert result.returncode == 0, result.stderr
    assert (
        "memory:  memory (0 entries: Preferences 0, Conventions 0, General Lessons 0; 0 tool" in result.stdout
    )
    ledgers = deployment / "memory" / "tool_experience"
    ledgers.mkdir(parents=True)
    (ledgers / "pick.md").write_text(
        "# Tool Experience: pick\n\n## Success\n\n## Failure\n", encoding="utf-8"
    )
    result = harness_ros("check", "--config", "config/example.yaml", cwd=deployment)
    assert "1 tool ledger(s) (pick))" in result.stdout


def test_memory_folder_that_is_a_file_fails(deployment: Path) -> None:
    shutil.rmtree(deployment / "memory")
    (deployment / "memory").write_text("oops", encoding="utf-8")
    result = harness_ros("check", "--config", "config/example.yaml", cwd=deployment)
    assert_user_error(result, "error: Memory folder 'memory' (memory.dir) is not a folder")


def test_model_override_and_unmapped_view_fails_as_the_node_does(deployment: Path) -> None:
    config = deployment / "config" / "example.yaml"
    env = dict(os.environ, HARNESS_MODEL="anthropic/claude-3-5-haiku-latest", ANTHROPIC_API_KEY="x")
    result = harness_ros("check", "--config", str(config), cwd=deployment, env=env)
    assert result.returncode == 0, result.stderr
    assert (
        "model:   anthropic/claude-3-5-haiku-latest (from HARNESS_MODEL) [provider anthropic, "
        "text-only (model.vision): camera views are described, never sent]\n" in result.stdout
    )
    assert "demo policy" not in result.stdout

    # A profile view without a camera topic: the node refuses to start, so check fails.
    text = config.read_text(encoding="utf-8")
    config.write_text(
        text.replace("    wrist:\n      topic: /wrist_camera/image_raw\n", ""), encoding="utf-8"
    )
    result = harness_ros("check", "--config", str(config), cwd=deployment, env=env)
    assert_user_error(
        result,
        "Model-Visible View(s) ['wrist'] have no camera topic: set observations.views.wrist.topic "
        "(configured views: ['front', 'torso'])",
    )
    assert "check: OK" not in result.stdout


def test_config_without_profile_or_skills(tmp_path: Path) -> None:
    (tmp_path / "bare.yaml").write_text("memory:\n  dir: mem\n", encoding="utf-8")
    result = harness_ros("check", "--config", "bare.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "profile: none configured (embodiment_profile_file)" in result.stdout
    assert "skills:  none" in result.stdout
    listing = harness_ros("skills", "list", "--config", "bare.yaml", cwd=tmp_path)
    assert listing.returncode == 0 and listing.stdout == "no skills (skills.dir is not set)\n"


def test_skills_list_prints_names_and_descriptions(tmp_path: Path) -> None:
    result = harness_ros("skills", "list", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    names = [line for line in result.stdout.splitlines() if line and not line.startswith(" ")]
    assert names == ["fetch-object", "recover-failed-grasp", "tidy-surface"]
    assert "    Find an object, pick it up" in result.stdout
    assert "    resources: checklists/handover.md" in result.stdout


def test_skills_without_action_is_a_usage_error(tmp_path: Path) -> None:
    result = harness_ros("skills", cwd=tmp_path)
    assert result.returncode == 2
    assert "required: ACTION" in result.stderr


# --- in-process helpers ------------------------------------------------------------------


def test_summarize_memory_counts_only_the_three_sections(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text(
        "# Memory\n\n## preferences\n- [user-preference] a\n- [user-preference] b\n\n"
        "## Operator Notes\n- [convention] not counted\n\n## General Lessons\n- [general-lesson] c\nprose\n",
        encoding="utf-8",
    )
    summary = summarize_memory(tmp_path)
    assert summary.entries == {"Preferences": 2, "Conventions": 0, "General Lessons": 1}
    assert summary.total_entries == 3 and summary.ledgers == ()


def test_summarize_memory_rejects_non_utf8(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_bytes(b"# Memory\n\xff")
    with pytest.raises(MemoryStoreError, match=r"MEMORY\.md'?: not UTF-8"):
        summarize_memory(tmp_path)


def test_default_config_is_in_the_source_tree_without_ament(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    assert share_dir() == REPO_ROOT
    assert default_config_path() == REPO_ROOT / "config" / "example.yaml"


def test_default_config_prefers_the_ament_share_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = tmp_path / "install"
    (prefix / "share" / "ament_index" / "resource_index" / "packages").mkdir(parents=True)
    (prefix / "share" / "ament_index" / "resource_index" / "packages" / "harness_ros").write_text("")
    (prefix / "share" / "harness_ros" / "config").mkdir(parents=True)
    monkeypatch.setenv("AMENT_PREFIX_PATH", os.pathsep.join([str(tmp_path / "other"), str(prefix)]))
    assert default_config_path("robot.yaml") == prefix / "share" / "harness_ros" / "config" / "robot.yaml"


def test_share_dir_error_names_where_it_looked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import harness_ros.paths as paths

    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    monkeypatch.setattr(paths, "__file__", str(tmp_path / "pkg" / "harness_ros" / "paths.py"))
    monkeypatch.setattr(paths.sys, "prefix", str(tmp_path / "prefix"))
    with pytest.raises(
        ConfigError, match=r"Cannot find the harness_ros share folder with config/ \(looked in"
    ):
        paths.share_dir()
