"""Config model: YAML loading, path resolution, key-naming errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_ros.config import HarnessConfig, config_from_flat, flatten_config, load_config
from harness_ros.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_relative_paths_resolve_against_config_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    path = write(
        tmp_path, "embodiment_profile_file: sub/robot.md\nmemory:\n  dir: mem\nskills:\n  dir: ../sk\n"
    )
    config = load_config(path)
    assert config.embodiment_profile_file == (tmp_path / "sub" / "robot.md").resolve()
    assert config.memory.dir == (tmp_path / "mem").resolve()
    assert config.skills.dir == (tmp_path.parent / "sk").resolve()
    assert config.source == path.resolve()


def test_unknown_key_is_named_with_file(tmp_path: Path) -> None:
    path = write(tmp_path, "memory:\n  dirr: x\n")
    with pytest.raises(ConfigError, match=r"memory\.dirr: unknown key") as info:
        load_config(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("value", [".nan", "1.5", "true", "-0.1"])
def test_min_confidence_must_be_finite_unit_number(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, f"memory:\n  min_confidence: {value}\n")
    with pytest.raises(ConfigError, match=r"memory\.min_confidence"):
        load_config(path)


def test_tool_type_string_checked(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "tools:\n  - name: pick\n    description: d\n    action: /pick\n    type: pkg/srv/Pick\n",
    )
    with pytest.raises(ConfigError, match=r"tools\.0: .*pkg/action/Name"):
        load_config(path)


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Cannot read configuration"):
        load_config(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(write(tmp_path, "a: [1,\n"))


def test_flat_round_trip(tmp_path: Path) -> None:
    config = HarnessConfig.model_validate(
        {
            "memory": {"dir": str(tmp_path), "min_confidence": 0.8},
            "tools": [{"name": "nav", "description": "go", "action": "/nav", "type": "p/action/Nav"}],
        }
    )
    flat = flatten_config(config)
    assert flat["memory.min_confidence"] == 0.8
    again = config_from_flat(
        {k: v for k, v in flat.items() if v is not None}, base_dir=tmp_path, origin="params"
    )
    assert again.tools[0].name == "nav"
    assert again.memory.dir == tmp_path


def test_harness_model_env_override(monkeypatch: pytest.MonkeyPatch) -> None:
    config = HarnessConfig()
    assert config.effective_model() == config.model.model
    monkeypatch.setenv("HARNESS_MODEL", "openai/gpt-4o-mini")
    assert config.effective_model() == "openai/gpt-4o-mini"


def test_default_paths_resolve_against_config_folder_like_explicit_ones(tmp_path: Path) -> None:
    # The node passes every key explicitly as a ROS parameter; a YAML file that leaves
    # memory.dir and harness.runs_dir at their defaults must land in the same folders.
    implicit = load_config(write(tmp_path, "skills: {}\n"))
    explicit = load_config(write(tmp_path, "memory: {dir: memory}\nharness: {runs_dir: runs}\n"))
    assert implicit.memory.dir == explicit.memory.dir == (tmp_path / "memory").resolve()
    assert implicit.harness.runs_dir == explicit.harness.runs_dir == (tmp_path / "runs").resolve()


def test_per_topic_record_throttle_round_trips_as_one_ros_parameter(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "record:\n  throttle_hz: {/sim/scan: 0.5, /cam/front: 1}\n"))
    flat = flatten_config(config)
    assert isinstance(flat["record.throttle_hz"], str)  # "/sim/scan" is no valid parameter name
    again = config_from_flat(flat, base_dir=tmp_path, origin="params")
    assert again.record.throttle_hz == {"/sim/scan": 0.5, "/cam/front": 1.0}
    with pytest.raises(ConfigError, match=r"record\.throttle_hz"):
        load_config(write(tmp_path, "record:\n  throttle_hz: {/sim/scan: 0}\n"))


@pytest.mark.parametrize(
    ("table", "where", "value"),
    [
        (
            "lookups:\n      locations:\n        dock: {x: 0.0, y: 0.0, yaw: 0.0}\n"
            "        kitchen: {x: 4.2, y: -1.5, yaw: .nan}\n",
            r"lookups\.locations\.kitchen\.yaw is nan",
            "nan",
        ),
        (
            "lookups:\n      locations:\n        dock: {x: -.inf, y: 0.0, yaw: 0.0}\n",
            r"lookups\.locations\.dock\.x is -inf",
            "-inf",
        ),
    ],
)
def test_a_non_finite_lookup_value_is_refused_at_start_up_with_its_key_path(
    tmp_path: Path, table: str, where: str, value: str
) -> None:
    path = write(tmp_path, f"tools:\n  - preset: navigate_to_location\n    {table}")
    with pytest.raises(ConfigError, match=rf"tools\.0: .*{where}: a number here must be finite") as info:
        load_config(path)
    assert str(path) in str(info.value) and value in str(info.value)


def test_a_non_finite_goal_constant_or_list_entry_is_refused(tmp_path: Path) -> None:
    arm = (
        "tools:\n  - preset: move_arm_to\n    action: /arm/follow_joint_trajectory\n"
        "    goal:\n      trajectory.joint_names: [j1, j2]\n"
        "    lookups:\n      arm_poses:\n        home: [0.0, 0.0]\n        ready: [0.6, .inf]\n"
    )
    with pytest.raises(ConfigError, match=r"lookups\.arm_poses\.ready\.1 is inf"):
        load_config(write(tmp_path, arm))
    finite = arm.replace(".inf", "1.2")
    assert load_config(write(tmp_path, finite)).tools[0].lookups["arm_poses"]["ready"] == [0.6, 1.2]


@pytest.mark.parametrize("name", ["../x", "a/b", "front camera", "x" * 65, "1st", ".hidden"])
def test_a_view_name_that_is_not_a_plain_name_is_refused_at_load(tmp_path: Path, name: str) -> None:
    # a view names files (``sensors --out``) and lines of the model's text
    path = write(tmp_path, f"observations:\n  views:\n    {name!r}: {{topic: /cam}}\n")
    with pytest.raises(ConfigError, match=r"observations\.views: .*is not a plain name") as info:
        load_config(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("name", ["front", "head_cam", "wrist-2", "Gripper"])
def test_plain_view_names_are_kept(tmp_path: Path, name: str) -> None:
    config = load_config(write(tmp_path, f"observations:\n  views:\n    {name}: {{topic: /cam}}\n"))
    assert list(config.observations.views) == [name]


def test_view_rotation_pan_tilt_and_depth_are_validated_naming_the_key(tmp_path: Path) -> None:
    path = write(tmp_path, "observations:\n  views:\n    head: {topic: /cam, rotate: 45}\n")
    with pytest.raises(
        ConfigError, match=r"observations\.views\.head\.rotate: Input should be 0, 90, 180 or 270"
    ):
        load_config(path)
    path = write(
        tmp_path, "observations:\n  views:\n    head: {topic: /cam, pan: {joint: j, positive: up}}\n"
    )
    with pytest.raises(
        ConfigError, match=r"observations\.views\.head: .*pan\.positive must be left or right"
    ):
        load_config(path)
    path = write(
        tmp_path,
        "observations:\n  views:\n    head: {topic: /cam, camera_info: /ci, depth: {topic: /d}}\n"
        "  depth: {topic: /d2, camera_info: /ci2, view: head}\n",
    )
    with pytest.raises(ConfigError, match=r"one depth camera per view"):
        load_config(path)
    config = load_config(
        write(
            tmp_path,
            "observations:\n  views:\n    head:\n      topic: /cam\n      rotate: 90\n"
            "      tilt: {joint: joint_head_tilt, positive: down, zero_deg: -5}\n"
            "      depth: {topic: /head/depth, compressed: true}\n"
            "  depth: {topic: /legacy/depth}\n",
        )
    )
    head = config.observations.views["head"]
    assert head.rotate == 90 and head.tilt is not None and head.tilt.topic == "/joint_states"
    assert head.depth is not None and head.depth.compressed
    assert config.observations.depth is not None  # the single observations.depth form still loads
