"""Bindings: model-facing arguments mapped onto real goal types, checked at start-up.

No ROS graph: the goal types are the generated classes (the nav2_msgs and
control_msgs test stand-ins of test/interfaces/kilted, built by `make test-interfaces`).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness_ros.config import ToolBinding, config_from_dict, config_from_flat, flatten_config, load_config
from harness_ros.errors import ConfigError, ToolError
from harness_ros.ros.interfaces import binding_schema, fill_message, request_class
from harness_ros.tools.binding import (
    BindingError,
    binding_spec,
    check_definition_budget,
    parse_path,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
PRESETS = REPO_ROOT / "config" / "presets"
NOW = {"sec": 1234, "nanosec": 500}


def preset(which: str, /, **overrides: Any) -> dict[str, Any]:
    data = yaml.safe_load((PRESETS / f"{which}.yaml").read_text(encoding="utf-8"))
    data.update(overrides)
    return data


def compiled(data: dict[str, Any]):
    schema, binding = binding_schema(ToolBinding.model_validate(data))
    assert binding is not None
    return schema, binding


def goal_message(data: dict[str, Any], arguments: dict[str, Any]) -> Any:
    tool = ToolBinding.model_validate(data)
    _schema, binding = binding_schema(tool)
    assert binding is not None
    return fill_message(request_class(tool), binding.build(arguments, now=lambda: dict(NOW)))


def error_of(data: dict[str, Any]) -> str:
    with pytest.raises(BindingError) as raised:
        binding_schema(ToolBinding.model_validate(data))
    return str(raised.value)


# ---------------------------------------------------------------------- goals


def test_navigate_to_pose_fills_frame_stamp_and_a_normalised_quaternion() -> None:
    goal = goal_message(preset("navigate_to_pose"), {"x": 1.5, "y": -2.0, "yaw": 90})
    assert goal.pose.header.frame_id == "map"
    assert (goal.pose.header.stamp.sec, goal.pose.header.stamp.nanosec) == (1234, 500)
    assert (goal.pose.pose.position.x, goal.pose.pose.position.y, goal.pose.pose.position.z) == (
        1.5,
        -2.0,
        0.0,
    )
    q = goal.pose.pose.orientation
    assert (q.x, q.y) == (0.0, 0.0)
    assert q.z == pytest.approx(math.sqrt(0.5)) and q.w == pytest.approx(math.sqrt(0.5))
    assert math.isclose(q.x**2 + q.y**2 + q.z**2 + q.w**2, 1.0)
    assert goal.behavior_tree == ""


def test_an_omitted_optional_argument_takes_its_default() -> None:
    goal = goal_message(preset("navigate_to_pose"), {"x": 0.0, "y": 0.0})
    q = goal.pose.pose.orientation
    assert (q.z, q.w) == (0.0, 1.0)


def test_named_location_becomes_coordinates_and_heading() -> None:
    data = preset(
        "navigate_to_location", lookups={"locations": {"kitchen": {"x": 4.0, "y": 1.0, "yaw": 180}}}
    )
    schema, _ = compiled(data)
    assert schema["properties"]["location"]["enum"] == ["kitchen"]
    goal = goal_message(data, {"location": "kitchen"})
    assert (goal.pose.pose.position.x, goal.pose.pose.position.y) == (4.0, 1.0)
    assert goal.pose.pose.orientation.w == pytest.approx(0.0, abs=1e-12)
    assert goal.pose.pose.orientation.z == pytest.approx(1.0)
    assert goal.pose.header.frame_id == "map"


def test_an_unknown_name_is_a_clear_error() -> None:
    _, binding = compiled(preset("navigate_to_location"))
    with pytest.raises(BindingError, match=r"unknown locations entry 'attic' \(known: dock\)"):
        binding.build({"location": "attic"}, now=lambda: dict(NOW))


def test_named_arm_pose_becomes_joint_positions_with_names_and_duration() -> None:
    goal = goal_message(preset("move_arm_to"), {"pose": "ready", "duration": 2.25})
    trajectory = goal.trajectory
    assert list(trajectory.joint_names) == [
        "shoulder_pan_joint",
        "shoulder_lift_joint",
        "elbow_joint",
        "wrist_1_joint",
        "wrist_2_joint",
        "wrist_3_joint",
    ]
    assert len(trajectory.points) == 1
    assert list(trajectory.points[0].positions) == [0.0, -0.8, 1.2, 0.0, 0.9, 0.0]
    assert (trajectory.points[0].time_from_start.sec, trajectory.points[0].time_from_start.nanosec) == (
        2,
        250_000_000,
    )
    assert list(goal.path_tolerance) == [] and goal.multi_dof_trajectory.joint_names == []


def test_spin_converts_degrees_and_behaviours_get_a_time_allowance() -> None:
    goal = goal_message(preset("spin"), {"angle": -90})
    assert goal.target_yaw == pytest.approx(-math.pi / 2, rel=1e-6)
    assert (goal.time_allowance.sec, goal.time_allowance.nanosec) == (30, 0)
    drive = goal_message(preset("back_up"), {"distance": 0.4, "direction": "backward"})
    assert drive.target.x == pytest.approx(0.4) and drive.speed == pytest.approx(0.1)


def test_grippers_are_constants_only() -> None:
    schema, _ = compiled(preset("close_gripper"))
    assert schema["properties"] == {}
    goal = goal_message(preset("open_gripper"), {})
    assert (goal.command.position, goal.command.max_effort) == (0.08, 40.0)


def test_durations_split_into_sec_and_nanosec() -> None:
    from harness_ros.tools.binding import CONVERSIONS

    duration = CONVERSIONS["seconds_to_duration"].apply
    assert duration(1.5) == {"sec": 1, "nanosec": 500_000_000}
    assert duration(-0.5) == {"sec": -1, "nanosec": 500_000_000}
    with pytest.raises(ValueError, match="finite"):
        duration(float("inf"))


def test_paths_parse_indices() -> None:
    assert parse_path("trajectory.points[0].positions") == ["trajectory", "points", 0, "positions"]
    with pytest.raises(ValueError, match="malformed"):
        parse_path("pose..x")


# ---------------------------------------------------------------------- start-up checks


def test_a_path_missing_from_the_type_names_tool_path_and_the_fields_there() -> None:
    data = preset("navigate_to_pose")
    data["goal"] = {**data["goal"], "pose.pose.positon.x": data["goal"].pop("pose.pose.position.x")}
    text = error_of(data)
    assert "tool 'navigate_to_pose': goal field 'pose.pose.positon.x': no such field" in text
    assert "fields of pose.pose: position, orientation" in text


def test_a_required_field_left_unmapped_is_an_error() -> None:
    data = preset("navigate_to_pose")
    del data["goal"]["pose.header.frame_id"]
    assert "goal field 'pose.header.frame_id': is required" in error_of(data)


def test_an_empty_frame_id_is_refused() -> None:
    data = preset("navigate_to_pose")
    data["goal"]["pose.header.frame_id"] = ""
    assert "goal field 'pose.header.frame_id': is required and its constant is empty" in error_of(data)


def test_units_must_match_the_conversion() -> None:
    data = preset("navigate_to_pose")
    data["arguments"]["yaw"]["unit"] = "rad"
    text = error_of(data)
    assert (
        "goal field 'pose.pose.orientation': yaw_deg_to_quaternion takes deg, argument 'yaw' is in rad"
        in text
    )


def test_degrees_never_reach_a_radian_field_unconverted() -> None:
    data = preset("spin")
    data["goal"]["target_yaw"] = {"arg": "angle"}
    assert "use convert: deg_to_rad" in error_of(data)


def test_a_duration_field_needs_the_duration_conversion() -> None:
    data = preset("move_arm_to")
    data["goal"]["trajectory.points[0].time_from_start"] = {"arg": "duration"}
    assert "builtin_interfaces/msg/Duration: use convert: seconds_to_duration" in error_of(data)


def test_a_conversion_must_fit_the_field_type() -> None:
    data = preset("spin")
    data["goal"]["target_yaw"] = {"value": 3, "convert": "seconds_to_duration"}
    del data["arguments"]["angle"]  # else it is unused, a mistake named first (check_binding_shape)
    assert "seconds_to_duration fills builtin_interfaces/msg/Duration, but the field is float" in error_of(
        data
    )


def test_joint_positions_must_match_the_joint_names() -> None:
    data = preset("move_arm_to")
    data["lookups"] = {"arm_poses": {"home": [0.0, 0.0, 0.0, 0.0, 0.0]}}
    assert "arm_poses entry 'home' has 5 positions for 6 joint_names" in error_of(data)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["arguments"].update(extra={"unit": "m"}),
            "argument 'extra': is not mapped to any goal field",
        ),
        (lambda d: d["goal"].update({"pose.pose": {"value": {}}}), "overlaps goal field"),
        (
            lambda d: d["goal"].update({"pose.pose.position.z": {"arg": "nope"}}),
            "argument 'nope' is not declared",
        ),
        (lambda d: d["goal"].update({"behavior_tree": {"convert": "squash"}}), "unknown conversion 'squash'"),
        (
            lambda d: d["goal"].update({"behavior_tree": {"arg": "x"}}),
            "is a string, argument 'x' is a number",
        ),
    ],
)
def test_other_binding_mistakes_name_what_is_wrong(change: Any, expected: str) -> None:
    data = preset("navigate_to_pose")
    change(data)
    assert expected in error_of(data)


def test_index_gaps_are_refused() -> None:
    data = preset("move_arm_to")
    data["goal"]["trajectory.points[2].positions"] = data["goal"].pop("trajectory.points[0].positions")
    assert "indices [0, 2] must run from 0 without gaps" in error_of(data)


def test_definition_budget_names_the_binding() -> None:
    data = preset("navigate_to_pose", description="Drive somewhere. " * 100)
    tool = ToolBinding.model_validate(data)
    schema, _ = binding_schema(tool)
    with pytest.raises(
        BindingError, match=r"tool 'navigate_to_pose': its model-facing definition is about \d+"
    ):
        check_definition_budget(binding_spec(tool, schema), tool.max_definition_tokens)
    assert check_definition_budget(binding_spec(tool, schema), 2000) > 400


def test_a_derived_schema_of_a_large_type_is_over_the_default_budget() -> None:
    # Binding FollowJointTrajectory without arguments derives the whole goal: far too big.
    tool = ToolBinding(
        name="fjt", description="d", action="/fjt", type="control_msgs/action/FollowJointTrajectory"
    )
    schema, compiled_binding = binding_schema(tool)
    assert compiled_binding is None and "trajectory" in schema["properties"]
    with pytest.raises(BindingError, match="over max_definition_tokens 400"):
        check_definition_budget(binding_spec(tool, schema), tool.max_definition_tokens)


# ---------------------------------------------------------------------- config composition


def test_presets_compose_with_overrides(tmp_path: Path) -> None:
    config = config_from_dict(
        {
            "tools": [
                {
                    "preset": "move_arm_to",
                    "action": "/my_arm/follow_joint_trajectory",
                    "goal": {"trajectory.joint_names": ["a", "b"]},
                    "lookups": {"arm_poses": {"up": [0.0, 1.0]}},
                }
            ]
        },
        base_dir=tmp_path,
        origin="test",
    )
    tool = config.tools[0]
    assert tool.action == "/my_arm/follow_joint_trajectory"
    assert tool.goal["trajectory.joint_names"] == ["a", "b"]
    assert "trajectory.points[0].positions" in tool.goal  # extended, not replaced
    assert tool.lookups == {"arm_poses": {"up": [0.0, 1.0]}}
    goal = fill_message(request_class(tool), binding_schema(tool)[1].build({"pose": "up"}, now=lambda: NOW))
    assert list(goal.trajectory.points[0].positions) == [0.0, 1.0]


def test_a_preset_next_to_the_config_wins_and_a_missing_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "presets").mkdir()
    (tmp_path / "presets" / "spin.yaml").write_text(
        yaml.safe_dump(preset("spin", name="my_spin")), encoding="utf-8"
    )
    config = config_from_dict({"tools": [{"preset": "spin"}]}, base_dir=tmp_path, origin="test")
    assert config.tools[0].name == "my_spin"
    with pytest.raises(ConfigError, match=r"tools\.1\.preset: no preset 'nope'"):
        config_from_dict({"tools": [{"preset": "spin"}, {"preset": "nope"}]}, base_dir=tmp_path, origin="t")


def test_robot_nav2_survives_the_ros_parameter_round_trip(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    source = load_config(REPO_ROOT / "config" / "robot_nav2.yaml")
    again = config_from_flat(flatten_config(source), base_dir=REPO_ROOT / "config", origin="params")
    assert again.tools == source.tools
    assert again.tools[0].error_codes[9002] == "transform (TF) error"


def test_every_shipped_preset_compiles_and_hides_plumbing_fields() -> None:
    hidden = {"header", "stamp", "frame_id", "behavior_tree", "joint_names", "time_allowance"}
    names = sorted(p.stem for p in PRESETS.glob("*.yaml"))
    assert len(names) >= 10
    for name in names:
        tool = ToolBinding.model_validate(preset(name))
        schema, compiled_binding = binding_schema(tool)
        assert compiled_binding is not None, name
        assert not hidden & set(schema["properties"]), name
        assert schema["additionalProperties"] is False


def test_arguments_and_input_schema_exclude_each_other() -> None:
    with pytest.raises(ValueError, match="not both"):
        ToolBinding.model_validate(preset("spin", input_schema={"type": "object"}))
    with pytest.raises(ToolError):
        binding_schema(ToolBinding.model_validate(preset("spin", type="nav2_msgs/action/Nope")))


# ---------------------------------------------------------------------- docs


def _documented_goals() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    text = (REPO_ROOT / "docs" / "robot.md").read_text(encoding="utf-8")
    found = re.findall(
        r"^<!-- goal: (\S+) (\{[^\n]*\}) -->\n```json\n(.*?)\n```$", text, re.MULTILINE | re.DOTALL
    )
    return [(name, json.loads(arguments), json.loads(goal)) for name, arguments, goal in found]


def test_the_goals_in_docs_robot_md_are_what_the_presets_send(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROS_DISTRO", "kilted")  # the doc shows Kilted's goals (the venv's stand-ins)
    documented = _documented_goals()
    config = load_config(REPO_ROOT / "config" / "robot_nav2.yaml")
    assert sorted(name for name, _, _ in documented) == sorted(tool.name for tool in config.tools)
    tools = {tool.name: tool for tool in config.tools}
    sim_now = {"sec": 1000, "nanosec": 250_000_000}
    for name, arguments, goal in documented:
        tool = tools[name]
        _schema, binding = binding_schema(tool)
        assert binding is not None
        built = binding.build(arguments, now=lambda: dict(sim_now))
        assert built == goal, name
        fill_message(request_class(tool), built)  # and it is a valid message


def test_a_lookup_argument_that_is_not_a_name_is_a_clear_error() -> None:
    _, binding = compiled(preset("move_arm_to"))
    with pytest.raises(BindingError, match=r"pose: unknown arm_poses entry \[0\.0\]"):
        binding.build({"pose": [0.0]}, now=lambda: dict(NOW))
