"""Clearance over DDS: an off-centre scanner publishing in its own process, read by
RosObservationSource and by ``harness-ros clearance``.

test/support/scan_publisher.py plays the shipped profile's lidar (0.25 m ahead of the
base centre) facing a wall 0.60 m behind the base centre; with the shipped 0.39 m
footprint the true backward clearance is 0.21 m.
"""

from __future__ import annotations

import json
import math
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy")

from support.spinning_node import spinning_node

from harness_ros.commands.clearance import clearance_json, format_clearance
from harness_ros.config import load_config
from harness_ros.observation.contracts import Clearance
from harness_ros.observation.geometry import Footprint

pytestmark = pytest.mark.ros

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = REPO_ROOT / "config" / "example.yaml"
PUBLISHER = REPO_ROOT / "test" / "support" / "scan_publisher.py"
FIRST_SCAN_TIMEOUT_S = 20.0  # discovery plus the publisher's start-up on a loaded machine
TRUE_BACKWARD_M = 0.60 - 0.39


@pytest.fixture
def wall_publisher(ros_env: dict[str, str]) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start(*extra: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, str(PUBLISHER), "--mount-x", "0.25", "--wall-behind", "0.60", *extra],
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


def clearance_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness_ros.cli", "clearance", "--config", str(EXAMPLE), *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def test_source_places_the_off_centre_lidar_at_its_mount(ros_context: Any, wall_publisher: Any) -> None:
    from harness_ros.ros.observations import RosObservationSource

    config = load_config(EXAMPLE)
    observations = config.observations.model_copy(update={"views": {}, "depth": None})
    publisher = wall_publisher()
    with spinning_node(ros_context, "clearance_geometry_test") as node:
        source = RosObservationSource(
            node, observations, footprint=Footprint.from_config(config.safety), views=()
        )
        if not source.wait_for_messages(FIRST_SCAN_TIMEOUT_S):
            pytest.fail(f"no scan within {FIRST_SCAN_TIMEOUT_S} s: {source.stats()} {publisher.poll()}")
        clearance = source.clearance()
        assert clearance is not None and clearance.usable
        assert clearance.backward == pytest.approx(TRUE_BACKWARD_M, abs=0.01)
        assert clearance.forward == pytest.approx(10.0 + 0.25 - 0.39, abs=0.01)
        assert source.check_mounts() == []  # frame 'laser' and no /tf_static here: nothing to compare
        source.destroy()


def test_clearance_command_once_json_against_a_scan_publisher(
    ros_env: dict[str, str], wall_publisher: Any
) -> None:
    # the driver stamps its scan in the base frame although the config mounts it 0.25 m
    # ahead: reported, and the config (the fallback without tf2_msgs) is used
    wall_publisher("--frame-id", "base_link")
    result = clearance_cli(ros_env, "--once", "--json", "--timeout", str(FIRST_SCAN_TIMEOUT_S))

    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    data = json.loads(lines[0])
    assert set(data) == {"forward", "left", "backward", "right", "age_s", "stale"}
    assert data["backward"] == pytest.approx(TRUE_BACKWARD_M, abs=0.01)
    assert data["forward"] == pytest.approx(10.0 + 0.25 - 0.39, abs=0.01)
    assert 0.0 <= data["age_s"] < 2.0 and data["stale"] is False
    assert "observations.clearance.scan_mount places it at x 0.250 m" in result.stderr
    assert "its frame_id 'base_link'" in result.stderr


def test_clearance_command_without_a_reading_fails_naming_the_topic(ros_env: dict[str, str]) -> None:
    result = clearance_cli(ros_env, "--once", "--timeout", "1")
    assert result.returncode == 1
    assert "error: no clearance reading within 1 s on /scan" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_clearance_text_and_json_formats() -> None:
    reading = Clearance(1.234, None, 0.21, 2.0, stamp=10.0, age_s=0.05, stale=False)
    assert format_clearance(reading) == (
        "forward 1.23 m  left unknown  backward 0.21 m  right 2.00 m  (age 0.05 s)"
    )
    assert clearance_json(reading) == {
        "forward": 1.234,
        "left": None,
        "backward": 0.21,
        "right": 2.0,
        "age_s": 0.05,
        "stale": False,
    }
    stale = Clearance(None, None, None, None, stamp=1.0, age_s=3.0, stale=True)
    assert format_clearance(stale).endswith("(age 3.00 s STALE (base motion blocked))")


def test_a_return_inside_the_footprint_is_named_where_it_reads_zero(
    ros_env: dict[str, str], wall_publisher: Any
) -> None:
    # The scanner, 0.25 m ahead of the base centre, sees the robot's mast 0.20 m away at
    # 135 degrees: a point about 0.18 m from the base centre, inside the 0.39 m footprint,
    # 52 degrees left of forward. Before, the line said 'left 0.00 m' and nothing else.
    wall_publisher("--mast", "135", "0.20")
    result = clearance_cli(ros_env, "--once", "--timeout", str(FIRST_SCAN_TIMEOUT_S))

    assert result.returncode == 0, result.stdout + result.stderr
    line, note = result.stdout.strip().splitlines()
    assert "  left 0.00 m (a return inside the footprint)  " in line
    assert "forward 9.86 m  " in line  # the forward corridor is not blocked by it
    assert re.fullmatch(
        r"  note: [0-9]+ readings end inside the footprint on '/scan', 0\.1[78]-0\.1[89] m from the base "
        r"centre: left read 0\.00 m \(the robot's own body seen by the sensor, such as a mast, or "
        r"something touching the base\)",
        note,
    ), note
    data = json.loads(
        clearance_cli(ros_env, "--once", "--json", "--timeout", str(FIRST_SCAN_TIMEOUT_S)).stdout
    )
    assert data["left"] == 0.0 and data["inside_footprint"] == [note.removeprefix("  note: ")]


def test_inside_returns_names_the_directions_a_point_blocks() -> None:
    from harness_ros.observation.geometry import inside_returns

    footprint = Footprint.circle(0.39)
    mast = inside_returns(footprint, origin_x=0.25, origin_y=0.0, angle=math.radians(135), distance=0.2)
    assert mast is not None and mast.count == 1 and mast.directions == ("left",)
    assert mast.nearest_m == pytest.approx(math.hypot(0.25 - 0.2 * math.sqrt(0.5), 0.2 * math.sqrt(0.5)))
    assert inside_returns(footprint, origin_x=0.25, origin_y=0.0, angle=0.0, distance=[1.0, math.nan]) is None
