"""Clearance geometry: sensor mounts, the footprint's swept corridors, valid-reading rules.

Pure numpy: scans are built here (or by test/support/scan_publisher.py's geometry) and
fed to the pipeline functions the ROS layer calls. test/test_clearance_cli.py runs the
same cases over DDS.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from support.scan_publisher import wall_ranges

from harness_ros.config import load_config
from harness_ros.errors import ConfigError
from harness_ros.observation.geometry import Footprint, SensorMount, mount_from_transforms, resolve_mount
from harness_ros.observation.pipeline import clearance_from_ranges, clearance_from_scan

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = REPO_ROOT / "config" / "example.yaml"
PROFILE = REPO_ROOT / "profiles" / "mobile_manipulator.md"
RANGE_MIN, RANGE_MAX = 0.05, 10.0


def scan(ranges: np.ndarray, **kwargs: object) -> dict[str, float | None]:
    """clearance_from_scan of a 360-degree scan starting at -pi."""
    increment = 2 * math.pi / len(ranges)
    return clearance_from_scan(ranges, -math.pi, increment, RANGE_MIN, RANGE_MAX, **kwargs)  # type: ignore[arg-type]


def bearings(beams: int = 360) -> np.ndarray:
    return np.degrees(-math.pi + 2 * math.pi / beams * np.arange(beams))


# ----------------------------------------------------------------------------- off-centre lidar


def test_shipped_config_carries_the_profiles_lidar_mount_and_footprint() -> None:
    config = load_config(EXAMPLE)
    profile = PROFILE.read_text(encoding="utf-8")
    lidar = re.search(r"lidar \(not a view\): x = ([\d.]+), y = ([\d.]+)", profile)
    radius = re.search(r"Circumscribed footprint radius ([\d.]+) m", profile)
    assert lidar is not None and radius is not None
    clearance = config.observations.clearance
    assert clearance is not None
    assert (clearance.scan_mount.x_m, clearance.scan_mount.y_m) == (float(lidar[1]), float(lidar[2]))
    assert Footprint.from_config(config.safety) == Footprint.circle(float(radius[1]))


def test_off_centre_lidar_sees_the_wall_behind_at_its_true_distance() -> None:
    # issue 14: lidar 0.25 m ahead of the base centre, a wall 0.60 m behind the base centre
    config = load_config(EXAMPLE)
    clearance = config.observations.clearance
    assert clearance is not None
    mount = SensorMount(clearance.scan_mount.x_m, clearance.scan_mount.y_m)
    footprint = Footprint.from_config(config.safety)
    angle_min, increment, ranges = wall_ranges(mount.x_m, 0.60, 720)

    placed = clearance_from_scan(
        ranges, angle_min, increment, RANGE_MIN, RANGE_MAX, footprint=footprint, mount=mount
    )
    centred = clearance_from_scan(ranges, angle_min, increment, RANGE_MIN, RANGE_MAX, footprint=footprint)

    assert placed["backward"] == pytest.approx(0.60 - 0.39, abs=0.01)  # 0.21 m, the truth
    assert centred["backward"] == pytest.approx(0.85 - 0.39, abs=0.01)  # 0.46 m: what was reported
    # nothing ahead: free to the scanner's range, which starts 0.25 m ahead of the centre
    assert placed["forward"] == pytest.approx(RANGE_MAX + 0.25 - 0.39, abs=0.01)


def test_a_270_degree_lidar_cannot_see_behind_so_backward_is_unknown() -> None:
    angle_min, increment, ranges = wall_ranges(0.25, 0.60, 720)
    values = np.asarray(ranges)
    values[np.abs(bearings(720)) > 135.0] = math.nan  # outside the scanner's field of view
    result = clearance_from_scan(
        values, angle_min, increment, RANGE_MIN, RANGE_MAX, footprint_radius_m=0.39, mount=SensorMount(0.25)
    )
    assert result["backward"] is None
    assert result["forward"] is not None and result["left"] is not None


def test_yawed_and_upside_down_mounts_turn_the_scan_into_the_base_frame() -> None:
    ranges = np.full(360, math.inf)
    ranges[np.abs(bearings()) < 5] = 1.0  # an obstacle straight along the scanner's x axis
    facing_left = scan(ranges, footprint_radius_m=0.3, mount=SensorMount(0.0, 0.1, math.pi / 2))
    assert facing_left["left"] == pytest.approx(1.1 - 0.3, abs=0.001)
    ranges = np.full(360, math.inf)
    ranges[np.abs(bearings() - 90) < 5] = 1.0  # at +90 degrees in the scanner's frame
    flipped = scan(ranges, footprint_radius_m=0.3, mount=SensorMount(upside_down=True))
    assert flipped["right"] == pytest.approx(0.7)  # z axis down: +90 is the robot's right
    assert flipped["left"] == pytest.approx(RANGE_MAX - 0.3)


# ----------------------------------------------------------------------------- footprints


def obstacle_at(x: float, y: float, beams: int = 3600) -> np.ndarray:
    """A centred scan with a small obstacle (a post of 2 cm) at (x, y); elsewhere no return."""
    angles = np.radians(bearings(beams))
    distance, bearing = math.hypot(x, y), math.atan2(y, x)
    ranges = np.full(beams, math.inf)
    offset = np.abs((angles - bearing + math.pi) % (2 * math.pi) - math.pi)
    ranges[offset <= math.atan2(0.01, distance)] = distance
    return ranges


def test_rectangle_footprint_measures_its_own_edges_and_corridors() -> None:
    rectangle = Footprint.rectangle(0.60, 0.50)
    # a post 1.0 m ahead on the axis: 0.70 m from the front edge
    assert scan(obstacle_at(1.0, 0.0), footprint=rectangle)["forward"] == pytest.approx(0.70, abs=0.005)
    # a post 1.0 m to the left: 0.75 m from the left side
    assert scan(obstacle_at(0.0, 1.0), footprint=rectangle)["left"] == pytest.approx(0.75, abs=0.005)
    # 0.5 m ahead and 0.3 m left: outside the 0.50 m wide forward corridor, so forward is free...
    beside = scan(obstacle_at(0.5, 0.3), footprint=rectangle)
    assert beside["forward"] == pytest.approx(RANGE_MAX - 0.30, abs=0.01)
    # ...and ahead of the 0.60 m long left corridor, so left is free as well
    assert beside["left"] == pytest.approx(RANGE_MAX - 0.25, abs=0.3)
    # a post 0.2 m ahead and 0.4 m left is in the left corridor: 0.15 m from the left side
    assert scan(obstacle_at(0.2, 0.4), footprint=rectangle)["left"] == pytest.approx(0.15, abs=0.005)
    # the 0.39 m circle is wider: the same post is in its forward corridor
    circle = scan(obstacle_at(0.5, 0.3), footprint=Footprint.circle(0.39))
    assert circle["forward"] == pytest.approx(math.hypot(0.5, 0.3) - 0.39, abs=0.005)


def test_footprint_settings_are_validated_with_the_key_named(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("safety:\n  footprint_shape: rectangle\n  footprint_length_m: 0.6\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"safety: .*footprint_width_m"):
        load_config(path)
    path.write_text("safety:\n  footprint_length_m: 0.6\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"safety: .*footprint_shape 'rectangle'"):
        load_config(path)
    path.write_text(
        "observations:\n  clearance:\n    range_topics: {forward: a, left: b, backward: c, right: d}\n"
        "    scan_mount: {x_m: 0.2}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"observations\.clearance: .*scan_mount needs scan_topic"):
        load_config(path)
    path.write_text(
        "safety:\n  footprint_shape: rectangle\n  footprint_length_m: 0.6\n  footprint_width_m: 0.5\n",
        encoding="utf-8",
    )
    assert Footprint.from_config(load_config(path).safety) == Footprint.rectangle(0.6, 0.5)


# ----------------------------------------------------------------------------- range sensors


def rng(value: float, lo: float = 0.02, hi: float = 4.0) -> SimpleNamespace:
    return SimpleNamespace(range=value, min_range=lo, max_range=hi)


def test_range_sensors_at_the_base_edge_measure_from_the_edge() -> None:
    rectangle = Footprint.rectangle(0.60, 0.50)
    mounts = {
        "forward": SensorMount(0.30, 0.0, 0.0),
        "left": SensorMount(0.0, 0.25, math.pi / 2),
        "backward": SensorMount(-0.30, 0.0, math.pi),
        "right": SensorMount(0.0, -0.25, -math.pi / 2),
    }
    readings = {"forward": rng(0.5), "left": rng(0.4), "backward": rng(math.inf), "right": rng(math.nan)}
    result = clearance_from_ranges(readings, footprint=rectangle, mounts=mounts)
    assert result["forward"] == pytest.approx(0.5)  # was 0.5 - 0.39 = 0.11 with centred sensors
    assert result["left"] == pytest.approx(0.4)
    assert result["backward"] == pytest.approx(4.0)  # +inf: free to max_range, from the edge
    assert result["right"] is None  # NaN says nothing
    # the old assumption (sensors at the centre) under-counts the same readings
    centred = clearance_from_ranges(readings, footprint_radius_m=0.39)
    assert centred["forward"] == pytest.approx(0.11)


def test_a_range_sensor_at_the_edge_reading_too_close_blocks_its_direction_only() -> None:
    mounts = {"forward": SensorMount(0.39, 0.0, 0.0)}
    result = clearance_from_ranges(
        {"forward": rng(-math.inf), "left": rng(1.0)}, footprint_radius_m=0.39, mounts=mounts
    )
    assert result == {
        "forward": pytest.approx(0.0, abs=1e-5),  # REP 117 -inf: an obstacle at the sensor
        "left": pytest.approx(0.61),
        "backward": None,
        "right": None,
    }


# ----------------------------------------------------------------------------- valid readings


def test_sector_that_cannot_see_does_not_report_a_far_wall() -> None:
    # issue 13 finding 6: an object touching the scanner reads below range_min on most
    # forward beams; a few edge beams see a wall 4 m away
    ranges = np.full(360, math.inf)
    ranges[np.abs(bearings()) < 45.5] = 0.02  # below range_min: unusable
    edge = (np.abs(bearings()) > 37.5) & (np.abs(bearings()) < 45.5)
    ranges[edge] = 4.0 / np.cos(np.radians(bearings()[edge]))
    assert scan(ranges, footprint_radius_m=0.3)["forward"] is None
    # a gap of three beams on the axis sees the wall too: the corridor now shows the wall,
    # but only 19 of its 91 beams are usable (these 3 and the 16 edge beams): still unknown
    ranges[np.abs(bearings()) < 1.5] = 4.0
    assert scan(ranges, footprint_radius_m=0.3)["forward"] is None
    # the share is configurable, the minimum count too
    assert scan(ranges, footprint_radius_m=0.3, min_valid_fraction=0.2)["forward"] == pytest.approx(3.7)
    assert scan(ranges, footprint_radius_m=0.3, min_valid_fraction=0.25)["forward"] is None
    assert scan(ranges, footprint_radius_m=0.3, min_valid_fraction=0.2, min_valid_beams=20)["forward"] is None


def test_enough_valid_beams_keep_a_direction_known() -> None:
    ranges = np.full(360, 2.0)  # a round room
    ranges[::3] = math.nan  # every third beam is an error: 30 of the 91 looking forward
    assert scan(ranges, footprint_radius_m=0.3) == pytest.approx(
        dict.fromkeys(("forward", "left", "backward", "right"), 1.7)
    )
    ranges[::2] = math.nan  # and every second: 30 usable of 91, under half
    assert set(scan(ranges, footprint_radius_m=0.3).values()) == {None}


# ----------------------------------------------------------------------------- centred sensors


def test_a_centred_scanner_gives_the_sim_its_old_numbers_on_the_axes() -> None:
    from harness_ros_sim.sim.render import Renderer
    from harness_ros_sim.sim.spec import apartment_spec
    from harness_ros_sim.sim.world import World

    world = World(apartment_spec(), seed=0)
    data = Renderer(64, 48).scan(world)
    radius = world.spec.robot.footprint_radius_m
    result = clearance_from_scan(
        data.ranges,
        data.angle_min,
        data.angle_increment,
        data.range_min,
        data.range_max,
        footprint_radius_m=radius,
    )
    axis = {"forward": 180, "left": 270, "backward": 0, "right": 90}  # beam index of each direction
    for direction, index in axis.items():
        value = result[direction]
        # never more than the beam straight along the direction allows
        assert value is not None and value <= float(data.ranges[index]) - radius + 1e-6
    # at the start pose the wall on the left is square to the base: the old sector value
    assert result["left"] == pytest.approx(float(data.ranges[270]) - radius, abs=1e-6)


# ----------------------------------------------------------------------------- /tf_static


def transform(
    parent: str, child: str, x: float, y: float, yaw: float, *, roll: float = 0.0
) -> SimpleNamespace:
    # quaternion of yaw about z then roll about x (enough for these mounts)
    cy, sy, cr, sr = math.cos(yaw / 2), math.sin(yaw / 2), math.cos(roll / 2), math.sin(roll / 2)
    rotation = SimpleNamespace(x=cy * sr, y=sy * sr, z=sy * cr, w=cy * cr)
    return SimpleNamespace(
        header=SimpleNamespace(frame_id=parent),
        child_frame_id=child,
        transform=SimpleNamespace(translation=SimpleNamespace(x=x, y=y, z=0.2), rotation=rotation),
    )


def test_mount_from_a_tf_static_chain() -> None:
    transforms = [
        transform("base_link", "laser_mount", 0.20, 0.0, math.pi / 2),
        transform("laser_mount", "laser", 0.05, 0.0, 0.0),
        transform("base_link", "rear_sonar", -0.3, 0.0, math.pi, roll=math.pi),
    ]
    mount = mount_from_transforms(transforms, "base_link", "/laser")
    assert mount is not None
    assert (mount.x_m, mount.y_m, mount.yaw_rad) == pytest.approx((0.20, 0.05, math.pi / 2))
    assert not mount.upside_down
    rear = mount_from_transforms(transforms, "base_link", "rear_sonar")
    assert rear is not None and rear.upside_down
    assert mount_from_transforms(transforms, "base_link", "camera") is None  # no chain: config is used
    assert mount.differs_from(SensorMount(0.25), tolerance_m=0.02, tolerance_rad=0.035)
    assert not mount.differs_from(
        SensorMount(0.21, 0.05, math.pi / 2 + 0.01), tolerance_m=0.02, tolerance_rad=0.035
    )


def test_tf_static_wins_over_the_config_and_a_mismatch_is_flagged() -> None:
    configured = SensorMount(0.25)
    transforms = [transform("base_link", "laser", 0.10, 0.0, 0.0)]
    check = resolve_mount(configured, frame_id="laser", base_frame="base_link", transforms=transforms)
    assert check.mount == SensorMount(0.10) and check.mismatch and check.source == "/tf_static"
    # /tf_static that agrees within 2 cm: no report
    close = [transform("base_link", "laser", 0.26, 0.0, 0.0)]
    assert not resolve_mount(configured, frame_id="laser", base_frame="base_link", transforms=close).mismatch
    # /tf_static without the frame (yet): the config, and ask again later
    pending = resolve_mount(configured, frame_id="laser", base_frame="base_link", transforms=[])
    assert pending.mount is configured and not pending.final and not pending.mismatch
    # no tf2_msgs (the pip install): the config; a scan stamped in the base frame says "at the centre"
    plain = resolve_mount(configured, frame_id="laser", base_frame="base_link", transforms=None)
    assert plain.mount is configured and not plain.mismatch
    in_base = resolve_mount(configured, frame_id="/base_link", base_frame="base_link", transforms=None)
    assert in_base.mount is configured and in_base.mismatch and "frame_id 'base_link'" in in_base.source
