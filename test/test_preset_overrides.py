"""How a config's keys combine with a preset's: arguments merged key by key, limits
clamped to the safety limits, a preset picked by $ROS_DISTRO, optional_fields checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_ros.config import load_config
from harness_ros.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[1]
PRESETS = REPO_ROOT / "config" / "presets"


def config_with(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def tool(tmp_path: Path, text: str, name: str) -> object:
    config = load_config(config_with(tmp_path, text))
    return next(t for t in config.tools if t.name == name)


def test_overriding_one_key_of_an_argument_keeps_the_presets_other_keys(tmp_path: Path) -> None:
    drive = tool(
        tmp_path,
        f"tools:\n  - preset: {PRESETS / 'drive_forward.yaml'}\n"
        "    arguments: {distance: {maximum: 0.8}}\n",
        "drive_forward",
    )
    distance = drive.arguments["distance"]
    assert (distance.maximum, distance.minimum, distance.unit) == (0.8, 0.01, "m")
    assert distance.description == "How far to drive forward"


def test_a_presets_limit_is_clamped_to_the_safety_limit(tmp_path: Path) -> None:
    text = f"safety: {{max_translation_m: 1.2}}\ntools:\n  - preset: {PRESETS / 'drive_forward.yaml'}\n"
    assert tool(tmp_path, text, "drive_forward").arguments["distance"].maximum == 1.2  # the preset says 2.0
    # A limit already inside the safety limit is kept.
    text = f"safety: {{max_translation_m: 1.2}}\ntools:\n  - preset: {PRESETS / 'back_up.yaml'}\n"
    assert tool(tmp_path, text, "back_up").arguments["distance"].maximum == 1.0


def test_a_minimum_above_the_safety_limit_is_refused(tmp_path: Path) -> None:
    text = (
        f"safety: {{max_translation_m: 0.5}}\ntools:\n  - preset: {PRESETS / 'drive_forward.yaml'}\n"
        "    arguments: {distance: {minimum: 0.6}}\n"
    )
    with pytest.raises(
        ConfigError, match=r"'drive_forward'.*minimum 0.6 m is above safety.max_translation_m 0.5 m"
    ):
        load_config(config_with(tmp_path, text))


@pytest.mark.parametrize(
    ("distro", "wanted"),
    [
        ("humble", "GripperCommand"),
        ("jazzy", "GripperCommand"),
        ("kilted", "ParallelGripperCommand"),
        ("", "ParallelGripperCommand"),
    ],
)
def test_the_robot_config_picks_its_gripper_preset_by_ros_distro(
    distro: str, wanted: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROS_DISTRO", distro)
    config = load_config(REPO_ROOT / "config" / "robot_nav2.yaml")
    grippers = {t.name: t.type for t in config.tools if "gripper" in t.name}
    assert grippers == dict.fromkeys(["open_gripper", "close_gripper"], f"control_msgs/action/{wanted}")


def test_a_distro_keyed_preset_without_a_match_names_the_distro(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROS_DISTRO", "rolling")
    text = "tools:\n  - preset: {humble: close_gripper, jazzy: close_gripper}\n"
    with pytest.raises(
        ConfigError, match=r"tools.0.preset: no preset for ROS_DISTRO 'rolling' \(keys: humble, jazzy\)"
    ):
        load_config(config_with(tmp_path, text))


def test_an_optional_goal_field_must_be_a_constant(tmp_path: Path) -> None:
    text = f"tools:\n  - preset: {PRESETS / 'drive_forward.yaml'}\n    optional_fields: [goal.target.x]\n"
    with pytest.raises(
        ConfigError, match=r"goal field 'target.x' is a model argument; only constants may be left out"
    ):
        load_config(config_with(tmp_path, text))
    with pytest.raises(ConfigError, match=r"write goal.PATH, result.PATH or feedback.PATH"):
        load_config(config_with(tmp_path, text.replace("goal.target.x", "disable_collision_checks")))


def test_an_overlapping_goal_path_is_named_without_advice_about_the_distribution(tmp_path: Path) -> None:
    # Issue 42 item 10: extending move_arm_to with positions[0] said "overlaps" and then
    # "[the installed control_msgs looks like ROS 2 Kilted ... GripperActionController is
    # gone ...]": a mistake of the binding alone, whatever the installed type.
    from harness_ros.errors import ToolError
    from harness_ros.ros.interfaces import tool_spec

    binding = tool(
        tmp_path,
        f"tools:\n  - preset: {PRESETS / 'move_arm_to.yaml'}\n"
        "    goal: {trajectory.joint_names: [a], 'trajectory.points[0].positions[0]': {arg: pose}}\n"
        "    lookups: {arm_poses: {up: 0.5}}\n",
        "move_arm_to",
    )
    with pytest.raises(ToolError) as raised:
        tool_spec(binding)
    text = str(raised.value)
    assert text.startswith(
        "tool 'move_arm_to': goal field 'trajectory.points[0].positions[0]': overlaps goal field "
        "'trajectory.points[0].positions': map a field once"
    )
    assert "give the preset's own path" in text
    assert "looks like ROS 2" not in text and "Gripper" not in text and "[" not in text.split(": map")[1]
    # A mismatch with the installed type still gets the advice.
    other = tool(
        tmp_path,
        f"tools:\n  - preset: {PRESETS / 'move_arm_to.yaml'}\n"
        "    goal: {trajectory.joint_names: [a], trajectory.no_such_field: 1}\n"
        "    lookups: {arm_poses: {up: [0.5]}}\n",
        "move_arm_to",
    )
    with pytest.raises(ToolError, match=r"no such field .* \[the installed control_msgs looks like ROS 2"):
        tool_spec(other)
