"""Writable state stays out of the install share: memory and run logs go to ROS_HOME.

The install is simulated as colcon lays it out: ``<prefix>/share/harness_ros`` holding
the shipped config, profiles, skills and memory template (what setup.py installs).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.install_tree import make_install

from harness_ros.config import load_config
from harness_ros.errors import MemoryStoreError
from harness_ros.state_dir import install_share_of, relocate_state_dirs, ros_home, seed_memory, state_root

REPO = Path(__file__).resolve().parents[1]


def test_ros_home_defaults_to_dot_ros(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ROS_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ros_home() == tmp_path / ".ros"
    monkeypatch.setenv("ROS_HOME", str(tmp_path / "rh"))
    assert state_root("harness") == tmp_path / "rh" / "harness_ros" / "harness"


def test_namespaced_nodes_get_their_own_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROS_HOME", str(tmp_path))
    assert state_root("/robot1/harness") == tmp_path / "harness_ros" / "robot1" / "harness"
    assert state_root("/robot1/harness") != state_root("/robot2/harness")
    # A crafted name cannot climb out of ROS_HOME.
    assert state_root("/../../etc/harness") == tmp_path / "harness_ros" / "etc" / "harness"


def test_install_share_is_recognised_by_layout(tmp_path: Path) -> None:
    share = make_install(tmp_path / "install")
    assert install_share_of(share / "memory") == share
    assert install_share_of(share / "config" / "runs") == share
    assert install_share_of(REPO / "memory") is None, "the source tree is not an install"
    assert install_share_of(tmp_path / "memory") is None


def test_shipped_config_in_an_install_moves_state_to_ros_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ROS_HOME", str(tmp_path / "ros_home"))
    share = make_install(tmp_path / "install")
    config = load_config(share / "config" / "example.yaml")
    assert config.memory.dir == share / "memory", "precondition: the shipped config points into share/"

    state = relocate_state_dirs(config, "/harness")

    root = tmp_path / "ros_home" / "harness_ros" / "harness"
    assert state.config.memory.dir == root / "memory"
    assert state.config.harness.runs_dir == root / "runs"
    assert state.memory_template == share / "memory"
    assert set(state.moved) == {"memory.dir", "harness.runs_dir"}
    # Everything else is the config as loaded.
    assert state.config.skills.dir == config.skills.dir
    assert state.config.embodiment_profile_file == config.embodiment_profile_file
    assert not root.exists(), "relocating writes nothing; seeding does"


def test_unset_keys_in_a_config_kept_in_the_share_also_move(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Defaults resolve against the config's folder: share/harness_ros/config/memory.
    monkeypatch.setenv("ROS_HOME", str(tmp_path / "ros_home"))
    share = make_install(tmp_path / "install")
    bare = share / "config" / "bare.yaml"
    bare.write_text("embodiment_profile_file: ../profiles/mobile_manipulator.md\n", encoding="utf-8")

    state = relocate_state_dirs(load_config(bare), "harness")

    root = tmp_path / "ros_home" / "harness_ros" / "harness"
    assert state.config.memory.dir == root / "memory"
    assert state.config.harness.runs_dir == root / "runs"
    assert state.memory_template == share / "memory", "the shipped template, not the missing config/memory"


def test_paths_outside_a_share_are_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROS_HOME", str(tmp_path / "ros_home"))
    explicit = tmp_path / "robot.yaml"
    explicit.write_text(f"memory: {{dir: {tmp_path / 'm'}}}\nharness: {{runs_dir: {tmp_path / 'r'}}}\n")
    implicit = tmp_path / "site" / "robot.yaml"
    implicit.parent.mkdir()
    implicit.write_text("{}\n", encoding="utf-8")
    source_tree = load_config(REPO / "config" / "example.yaml")

    for config in (load_config(explicit), load_config(implicit), source_tree):
        state = relocate_state_dirs(config, "harness")
        assert state.config == config
        assert state.moved == {}
    assert load_config(implicit).memory.dir == (tmp_path / "site" / "memory").resolve()


def test_only_the_key_inside_the_share_moves(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROS_HOME", str(tmp_path / "ros_home"))
    share = make_install(tmp_path / "install")
    config = share / "config" / "mixed.yaml"
    config.write_text(f"harness: {{runs_dir: {tmp_path / 'my_runs'}}}\n", encoding="utf-8")

    state = relocate_state_dirs(load_config(config), "harness")

    assert set(state.moved) == {"memory.dir"}
    assert state.config.harness.runs_dir == tmp_path / "my_runs"


def test_seeding_copies_the_template_once_and_never_overwrites(tmp_path: Path) -> None:
    template = REPO / "memory"
    target = tmp_path / "state" / "memory"

    written = seed_memory(target, template)

    assert written == [target / "MEMORY.md"]
    assert (target / "MEMORY.md").read_bytes() == (template / "MEMORY.md").read_bytes()

    # The robot has learnt something: a restart keeps it.
    (target / "MEMORY.md").write_text("# Memory\n\n- [convention] learnt on site\n", encoding="utf-8")
    assert seed_memory(target, template) == []
    assert "learnt on site" in (target / "MEMORY.md").read_text(encoding="utf-8")

    # Files the operator deleted after first use are not brought back.
    (target / "MEMORY.md").unlink()
    (target / "tool_experience").mkdir()
    (target / "tool_experience" / "navigate.md").write_text("x", encoding="utf-8")
    assert seed_memory(target, template) == []
    assert not (target / "MEMORY.md").exists()


def test_seeding_without_a_template_writes_nothing(tmp_path: Path) -> None:
    assert seed_memory(tmp_path / "m", None) == []
    assert seed_memory(tmp_path / "m", tmp_path / "missing") == []
    assert not (tmp_path / "m").exists()


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores permissions")
def test_unwritable_state_folder_is_a_memory_error(tmp_path: Path) -> None:
    locked = tmp_path / "ros_home"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(MemoryStoreError, match="Cannot seed memory"):
            seed_memory(locked / "harness_ros" / "harness" / "memory", REPO / "memory")
    finally:
        locked.chmod(0o700)
