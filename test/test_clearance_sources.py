"""Several clearance sources: LaserScans and Range sensors, each at its mount, merged per
direction (the nearest obstacle wins; a direction is known when any fresh source covers
it; staleness per source), and a source that never published named by its topic.

The robot of issue 30: a 190-degree lidar 0.20 m ahead of the centre of a round base
(radius 0.27 m) cannot see behind, so backing up is blocked; a rear sonar at the base's
back edge makes the rear known. ROS-level tests use test/support/scan_publisher.py and
test/support/range_publisher.py in their own processes.
"""

from __future__ import annotations

import math
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness_ros.config import HarnessConfig, SafetyConfig, load_config
from harness_ros.errors import ConfigError
from harness_ros.hooks import BaseMotionSafetyFilter, HookAction
from harness_ros.observation.geometry import Footprint, SensorMount
from harness_ros.observation.pipeline import clearance_from_range, clearance_from_scan, merge_clearance
from harness_ros.tools import ToolSpec

SUPPORT = Path(__file__).resolve().parent / "support"
sys.path.insert(0, str(SUPPORT))
import scan_publisher  # noqa: E402

RADIUS_M = 0.27
LIDAR_X_M = 0.20
SONAR_X_M = -0.27  # at the back edge of the base, facing backward
SONAR_RANGE_M = 0.5
WALL_BEHIND_M = 1.0
SAFETY = SafetyConfig(
    footprint_shape="circle", footprint_radius_m=RADIUS_M, margin_m=0.1, max_translation_m=1.0
)
BACK_UP = ToolSpec(
    name="back_up",
    description="Drive the base straight backward.",
    input_schema={
        "type": "object",
        "properties": {"distance": {"type": "number"}, "direction": {"type": "string"}},
    },
    physical=True,
    base_motion=True,
    distance_argument="distance",
    direction_argument="direction",
)
SONAR = {"name": "rear_sonar", "range_topic": "/sonar_rear", "mount": {"x_m": SONAR_X_M, "yaw_rad": math.pi}}


def robot_config(*, with_sonar: bool) -> HarnessConfig:
    clearance: dict[str, Any] = {"scan_topic": "/scan", "scan_mount": {"x_m": LIDAR_X_M}, "max_age_s": 1.0}
    if with_sonar:
        clearance["sources"] = [SONAR]
    return HarnessConfig.model_validate(
        {
            "observations": {"clearance": clearance},
            "safety": SAFETY.model_dump(),
        }
    )


# ---------------------------------------------------------------------------- core


def test_merge_takes_the_nearest_obstacle_and_keeps_uncovered_directions_unknown() -> None:
    front = {"forward": 2.0, "left": 1.0, "backward": None, "right": 0.8}
    rear = {"forward": None, "left": 0.6, "backward": 0.5, "right": None}
    assert merge_clearance([front, rear]) == {"forward": 2.0, "left": 0.6, "backward": 0.5, "right": 0.8}
    assert merge_clearance([front]) == front
    assert merge_clearance([{"forward": math.nan}]) == dict.fromkeys(("forward", "left", "backward", "right"))
    assert merge_clearance([]) == dict.fromkeys(("forward", "left", "backward", "right"))


def test_a_rear_range_beside_a_190_degree_scan_makes_the_rear_known() -> None:
    footprint = Footprint.circle(RADIUS_M)
    angle_min, increment, ranges = scan_publisher.wall_ranges(LIDAR_X_M, WALL_BEHIND_M, 380, 190.0)
    scan = clearance_from_scan(
        ranges, angle_min, increment, 0.05, 10.0, footprint=footprint, mount=SensorMount(LIDAR_X_M, 0.0, 0.0)
    )
    assert scan["backward"] is None  # the lidar cannot see behind
    sonar = clearance_from_range(
        SimpleNamespace(range=SONAR_RANGE_M, min_range=0.02, max_range=4.0),
        footprint=footprint,
        mount=SensorMount(SONAR_X_M, 0.0, math.pi),
    )
    assert sonar["backward"] == pytest.approx(SONAR_RANGE_M, abs=0.005)
    assert sonar["forward"] is None and sonar["left"] is None and sonar["right"] is None
    merged = merge_clearance([scan, sonar])
    assert merged["backward"] == pytest.approx(SONAR_RANGE_M, abs=0.005)
    assert merged["forward"] == scan["forward"] and merged["left"] == scan["left"]


def test_legacy_keys_still_describe_one_source_each() -> None:
    scan = robot_config(with_sonar=False).observations.clearance
    assert scan is not None
    assert [(s.name, s.kind, s.topic, s.mount_key) for s in scan.sensors()] == [
        ("scan", "scan", "/scan", "observations.clearance.scan_mount")
    ]
    ranges = HarnessConfig.model_validate(
        {
            "observations": {
                "clearance": {
                    "range_topics": {d: f"/r/{d}" for d in ("forward", "left", "backward", "right")}
                }
            }
        }
    ).observations.clearance
    assert ranges is not None
    assert [s.name for s in ranges.sensors()] == ["forward", "left", "backward", "right"]
    assert {s.group for s in ranges.sensors()} == {"ranges"}
    both = robot_config(with_sonar=True).observations.clearance
    assert both is not None
    assert [(s.name, s.kind, s.topic_key) for s in both.sensors()] == [
        ("scan", "scan", "observations.clearance.scan_topic"),
        ("rear_sonar", "range", "observations.clearance.sources[0].range_topic"),
    ]


@pytest.mark.parametrize(
    ("clearance", "message"),
    [
        (
            {"sources": [{"range_topic": "/sonar"}]},
            "observations.clearance.sources.0: Value error, mount.yaw_rad",
        ),
        (
            {"sources": [{"scan_topic": "/a", "range_topic": "/b"}]},
            "set exactly one of scan_topic or range_topic",
        ),
        (
            {"scan_topic": "/scan", "sources": [{"scan_topic": "/scan"}]},
            "observations.clearance.sources[0].scan_topic: '/scan' is already used by "
            "observations.clearance.scan_topic",
        ),
        ({"sources": []}, "set scan_topic, range_topics or sources"),
        ({"sources": [{"rangetopic": "/x"}]}, "observations.clearance.sources.0.rangetopic: unknown key"),
    ],
)
def test_source_validation_errors_name_the_key(
    tmp_path: Path, clearance: dict[str, Any], message: str
) -> None:
    import yaml

    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump({"observations": {"clearance": clearance}}), encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert message in str(raised.value)


def test_sources_survive_the_ros_parameter_round_trip() -> None:
    from harness_ros.config import config_from_flat, flatten_config

    config = robot_config(with_sonar=True)
    flat = flatten_config(config)
    assert isinstance(flat["observations.clearance.sources"], str)  # one YAML-text parameter
    again = config_from_flat(flat, base_dir=Path.cwd(), origin="test")
    assert again.observations.clearance == config.observations.clearance


# ---------------------------------------------------------------------------- ROS


@pytest.fixture
def publisher(ros_env: dict[str, str]) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start(script: str, *args: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, str(SUPPORT / script), *args],
            env=ros_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


FIRST_READING_S = 20.0


def _source(node: Any, config: HarnessConfig) -> Any:
    from harness_ros.ros.observations import RosObservationSource

    return RosObservationSource(
        node, config.observations, footprint=Footprint.from_config(config.safety), views=()
    )


def _back_up(clearance: Any) -> Any:
    hook = BaseMotionSafetyFilter(SAFETY, lambda: clearance)
    return hook.before_execution(BACK_UP, {"distance": 0.3, "direction": "backward"}, None)


@pytest.mark.ros
def test_front_scan_and_rear_sonar_over_dds_unblock_back_up(ros_context: Any, publisher: Any) -> None:
    pytest.importorskip("rclpy")
    from support.spinning_node import spinning_node

    publisher(
        "scan_publisher.py",
        "--mount-x",
        str(LIDAR_X_M),
        "--wall-behind",
        str(WALL_BEHIND_M),
        "--fov-deg",
        "190",
    )
    publisher("range_publisher.py", "--topic", "/sonar_rear", "--range", str(SONAR_RANGE_M))
    with spinning_node(ros_context, "clearance_sources_test") as node:
        scan_only = _source(node, robot_config(with_sonar=False))
        both = _source(node, robot_config(with_sonar=True))
        try:
            assert both.wait_for_messages(FIRST_READING_S), both.stats()
            assert scan_only.wait_for_messages(FIRST_READING_S), scan_only.stats()

            alone = scan_only.clearance()
            assert alone.usable and alone.backward is None  # the 190-degree lidar cannot see behind
            blocked = _back_up(alone)
            assert blocked.action is HookAction.BLOCK
            assert blocked.reason == "base motion blocked: clearance backward is unknown"

            merged = both.clearance()
            assert merged.usable and merged.note is None
            assert merged.backward == pytest.approx(SONAR_RANGE_M, abs=0.01)
            assert merged.forward == pytest.approx(alone.forward, abs=0.01)
            decision = _back_up(merged)
            assert decision.action is HookAction.PASS, decision.reason
        finally:
            scan_only.destroy()
            both.destroy()


@pytest.mark.ros
def test_a_stale_rear_sonar_leaves_the_rear_unknown_and_the_front_usable(
    ros_context: Any, publisher: Any
) -> None:
    pytest.importorskip("rclpy")
    from support.spinning_node import spinning_node

    publisher(
        "scan_publisher.py",
        "--mount-x",
        str(LIDAR_X_M),
        "--wall-behind",
        str(WALL_BEHIND_M),
        "--fov-deg",
        "190",
    )
    publisher(
        "range_publisher.py", "--topic", "/sonar_rear", "--range", str(SONAR_RANGE_M), "--stamp-age", "5"
    )
    with spinning_node(ros_context, "clearance_stale_source_test") as node:
        source = _source(node, robot_config(with_sonar=True))
        try:
            assert source.wait_for_messages(FIRST_READING_S), source.stats()
            observation = source.observe()
            clearance = observation.clearance
            assert clearance.usable and clearance.forward is not None  # the fresh lidar still counts
            assert clearance.backward is None
            assert clearance.note is not None and "rear_sonar is stale (5." in clearance.note
            assert any("clearance rear_sonar: STALE" in note for note in observation.notes)
            decision = _back_up(clearance)
            assert decision.action is HookAction.BLOCK
            assert decision.reason.startswith(
                "base motion blocked: clearance backward is unknown (rear_sonar is stale"
            )
        finally:
            source.destroy()


@pytest.mark.ros
def test_a_clearance_topic_that_never_published_is_named_by_the_safety_filter(ros_context: Any) -> None:
    pytest.importorskip("rclpy")
    from support.spinning_node import spinning_node

    with spinning_node(ros_context, "clearance_silent_test") as node:
        source = _source(node, robot_config(with_sonar=False))
        try:
            clearance = source.clearance()
            assert clearance is not None and not clearance.usable
            decision = BaseMotionSafetyFilter(SAFETY, source.clearance).before_execution(
                BACK_UP, {"distance": 0.3, "direction": "backward"}, None
            )
        finally:
            source.destroy()
    assert decision.action is HookAction.BLOCK
    assert decision.reason.startswith(
        "base motion blocked: no base clearance reading: nothing received on '/scan' (since start-up "
    )
    assert "stale" not in decision.reason
