"""Stretch 3 in MuJoCo without ROS (harness_ros_sim.physics): the maker's model compiles
with our actuators, cameras and scene; the base holds still and drives; the lidar sees
the furniture; a drive into a table stalls with a reason; pick succeeds or fails by
what the physics says, over seeded object offsets; the cameras render headless."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import harness_ros_sim.physics  # noqa: F401  (MUJOCO_GL=egl before mujoco is imported)

pytest.importorskip("mujoco", reason="pip install -r requirements.txt -c constraints.txt")
pytest.importorskip("stretch_urdf", reason="pip install -r requirements.txt -c constraints.txt")

from harness_ros_sim.physics.model import GRIPPER_CAMERA, HEAD_CAMERA
from harness_ros_sim.physics.sim import PhysicsSim

GRASP_TRIALS = 10
GRASP_GOAL = 8


@pytest.fixture(scope="module")
def sim() -> PhysicsSim:
    return PhysicsSim(speed=0)


def test_model_has_the_makers_joints_our_actuators_and_cameras(sim: PhysicsSim) -> None:
    model = sim.model
    for joint in (
        "joint_lift",
        "joint_arm_l0",
        "joint_wrist_yaw",
        "joint_gripper_finger_left",
        "joint_head_pan",
    ):
        assert model.joint(joint).id >= 0
    assert {model.actuator(i).name for i in range(model.nu)} >= {
        "wheel_left",
        "wheel_right",
        "lift",
        "gripper_left",
    }
    assert model.camera(HEAD_CAMERA).id >= 0 and model.camera(GRIPPER_CAMERA).id >= 0
    assert math.isclose(model.opt.timestep, 0.002)


def test_the_model_compiles_without_a_mujoco_warning(tmp_path: Path) -> None:
    # The maker's URDF pins the finger joints (lower = upper = 0): MuJoCo warned that it
    # ignored the limit, on stderr and in a MUJOCO_LOG.TXT left in the working folder.
    run = subprocess.run(
        [sys.executable, "-c", "from harness_ros_sim.physics.model import build_model; build_model()"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "WARNING" not in run.stderr, run.stderr[-2000:]
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()


def test_finger_joints_have_their_range(sim: PhysicsSim) -> None:
    for side in ("left", "right"):
        joint = sim.model.joint(f"joint_gripper_finger_{side}")
        assert bool(sim.model.jnt_limited[joint.id])
        assert tuple(sim.model.jnt_range[joint.id]) == pytest.approx((-0.6, 0.6))


def test_idle_base_does_not_creep_and_a_drive_reaches_its_goal(sim: PhysicsSim) -> None:
    sim.reset()
    x0, y0, yaw0 = sim.base_pose()
    sim.advance(2.0)
    x1, y1, yaw1 = sim.base_pose()
    assert math.hypot(x1 - x0, y1 - y0) < 0.005 and abs(yaw1 - yaw0) < 0.01
    outcome = sim.navigate(0.8, 0.4, 1.0)
    assert outcome.success, outcome.message
    x, y, yaw = sim.base_pose()
    assert math.hypot(x - 0.8, y - 0.4) < 0.06 and abs(yaw - 1.0) < 0.06


def test_a_drive_into_the_table_stalls_with_a_reason(sim: PhysicsSim) -> None:
    sim.reset()
    outcome = sim.navigate(0.0, -1.5, 0.0)
    assert not outcome.success
    assert "stalled" in outcome.message and "dining_table" in outcome.message


def test_lidar_sees_the_table_beside_the_robot(sim: PhysicsSim) -> None:
    sim.reset()
    ranges, angle_min = sim.scan()
    assert ranges.shape == (360,) and angle_min == pytest.approx(-math.pi)
    # The lidar faces backwards (yaw pi): the robot's right (-y) is at +90 degrees of the scan.
    right = ranges[round((math.pi / 2 - angle_min) / (2 * math.pi / 360))]
    assert 0.5 < right < 0.7  # the dining table's near edge is 0.6 m to the right
    assert np.all(ranges > 0.2)  # never the robot's own mast


def test_pick_over_seeded_offsets_and_place(sim: PhysicsSim) -> None:
    started = time.monotonic()
    successes: list[str] = []
    for seed in range(GRASP_TRIALS):
        sim.reset()
        rng = np.random.default_rng(seed)
        sim.put_object("red_cup", float(rng.uniform(-0.06, 0.06)), float(rng.uniform(-0.06, 0.06)))
        z0 = float(sim.object_position("red_cup")[2])
        outcome = sim.pick("red_cup")
        if outcome.success:
            assert float(sim.object_position("red_cup")[2]) > z0 + 0.05  # it rose with the gripper
            successes.append(outcome.message)
        else:
            assert outcome.message.split(":")[0] in {"slipped", "missed", "out of reach", "collided"}
    print(f"grasp success {len(successes)}/{GRASP_TRIALS} in {time.monotonic() - started:.1f} s")
    assert len(successes) >= GRASP_GOAL
    placed = sim.place("dining_table")
    assert placed.success, placed.message
    assert sim.ground_truth()["objects"]["red_cup"]["on"] == "dining_table"  # type: ignore[index]


def test_pick_failures_have_physical_reasons(sim: PhysicsSim) -> None:
    sim.reset()
    far = sim.pick("blue_bottle")
    assert not far.success and far.message.startswith("out of reach")
    sim.reset()
    sim.put_object("red_cup", 0.0, -0.35)  # beyond the arm's 0.52 m
    assert sim.pick("red_cup").message.startswith("out of reach")
    sim.reset()
    # Perception aims 12 cm short of the cup (a stale or wrong estimate): the fingers close on air.
    original = sim.object_position
    sim.object_position = lambda name: original(name) + np.array([0.0, 0.12, 0.0])  # type: ignore[method-assign]
    try:
        missed = sim.pick("red_cup")
    finally:
        del sim.object_position
    print(missed.message)
    assert not missed.success and missed.message.startswith(("missed", "collided")), missed.message


def test_cameras_render_headless(sim: PhysicsSim) -> None:
    import mujoco

    sim.reset()
    renderer = mujoco.Renderer(sim.model, 60, 80)
    try:
        renderer.update_scene(sim.data, camera=HEAD_CAMERA)
        rgb = renderer.render()
        renderer.enable_depth_rendering()
        renderer.update_scene(sim.data, camera=GRIPPER_CAMERA)
        depth = renderer.render()
    finally:
        renderer.close()
    assert rgb.shape == (60, 80, 3) and rgb.std() > 5  # a picture, not a blank
    assert depth.shape == (60, 80) and 0.01 < float(np.median(depth)) < 5.0


def test_nav2_behaviours_turn_drive_back_and_stall_at_the_table() -> None:
    """spin, drive_on_heading and backup (turn_by, shift_along_axis): to within 2 cm and
    1.5 degrees, and a drive into the dining table stops with the stall's reason."""
    world = PhysicsSim(speed=0)
    turned = world.turn_by(math.pi / 2)
    assert turned.success, turned.message
    x0, y0, yaw = world.base_pose()
    assert abs(yaw - math.pi / 2) < 0.03
    forward = world.shift_along_axis(0.4, tolerance=0.01)
    x, y, _ = world.base_pose()
    assert forward.success and abs((y - y0) - 0.4) < 0.02 and abs(x - x0) < 0.02, forward.message
    back = world.shift_along_axis(-0.2, tolerance=0.01)
    assert back.success and abs(world.base_pose()[1] - y0 - 0.2) < 0.02, back.message
    assert world.turn_by(-math.pi).success  # now facing the table (-y)
    into_table = world.shift_along_axis(1.5, tolerance=0.01, speed=0.15)
    assert not into_table.success and into_table.stop == "stalled", into_table
    assert "dining_table" in into_table.message
    short = world.shift_along_axis(-0.5, time_allowance_s=0.5)
    assert not short.success and short.stop == "timeout", short
