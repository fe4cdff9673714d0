"""Every preset and config/robot_nav2.yaml on Humble, Jazzy and Kilted.

Each distribution's nav2_msgs / control_msgs stand-ins (test/interfaces, field for
field and constant for constant from the upstream release tags its README names) are
imported by a process of its own (test/support/ros_distros.py): only Kilted's are in
the venv. In that process test/support/distro_client.py binds the configs with
``build_ros_tools`` on a real node, the node's start-up path, result and feedback
validation included, and prints the goal each tool builds. The goals are compared whole
with the message written out here from the distribution's definition, not with what the
generated class defaults to.

With real servers (test/support/preset_servers.py, in another process, with the same
distribution's types), every tool of config/robot_nav2.yaml runs: the goal the server
receives is compared whole, and the outcome is checked, also for a navigation that
SUCCEEDS with a non-zero error code (the status decides).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy")

from support.processes import ServerProcess
from support.ros_distros import DISTROS, distro_env, missing

pytestmark = pytest.mark.ros

REPO_ROOT = Path(__file__).resolve().parents[1]
PRESETS = REPO_ROOT / "config" / "presets"
CLIENT = REPO_ROOT / "test" / "support" / "distro_client.py"
SERVERS = REPO_ROOT / "test" / "support" / "preset_servers.py"
ROBOT = REPO_ROOT / "config" / "robot_nav2.yaml"
ZERO = {"sec": 0, "nanosec": 0}
SIM = {"sec": 1000, "nanosec": 250_000_000}
SIM_NS = 1000 * 10**9 + 250_000_000

ROBOT_SAMPLES: dict[str, dict[str, Any]] = {
    "navigate_to_pose": {"x": 1.5, "y": -2.0, "yaw": 90},
    "navigate_to_location": {"location": "kitchen"},
    "drive_forward": {"distance": 0.5},
    "back_up": {"distance": 0.3, "direction": "backward"},
    "spin": {"angle": 90},
    "move_arm_to": {"pose": "ready", "duration": 2.5},
    "open_gripper": {},
    "close_gripper": {},
    "reset_arm_faults": {},
    "set_arm_motors": {"enable": True},
}
PRESET_SAMPLES: dict[str, dict[str, Any]] = {
    "navigate_to_pose": {"x": -1.0, "y": 0.5, "yaw": -45},
    "navigate_to_location": {"location": "dock"},
    "drive_forward": {"distance": 1.0},
    "back_up": {"distance": 0.2, "direction": "backward"},
    "spin": {"angle": -30},
    "move_arm_to": {"pose": "ready"},
    "open_gripper": {},
    "close_gripper": {},
    "open_parallel_gripper": {},
    "close_parallel_gripper": {},
    "open_joint_gripper": {},
    "close_joint_gripper": {},
    "trigger": {},
    "set_bool": {"enable": False},
}
UR_JOINTS = [
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
]


# --------------------------------------------------------------------------- the messages


def header(stamp: dict[str, int] = ZERO, frame: str = "") -> dict[str, Any]:
    return {"stamp": stamp, "frame_id": frame}


def quaternion(yaw_deg: float) -> dict[str, float]:
    half = math.radians(yaw_deg) / 2
    return {"x": 0.0, "y": 0.0, "z": math.sin(half), "w": math.cos(half)}


def float32(value: float) -> float:
    return float(f"{value:.7g}")  # message_to_jsonable's reading of a float32


def navigate(x: float, y: float, yaw: float, stamp: dict[str, int]) -> dict[str, Any]:
    # nav2_msgs/action/NavigateToPose goal: the same on all three.
    position = {"x": x, "y": y, "z": 0.0}
    return {
        "pose": {
            "header": header(stamp, "map"),
            "pose": {"position": position, "orientation": quaternion(yaw)},
        },
        "behavior_tree": "",
    }


def straight(distro: str, x: float, speed: float) -> dict[str, Any]:
    # DriveOnHeading / BackUp goal: disable_collision_checks from Kilted on.
    goal: dict[str, Any] = {
        "target": {"x": x, "y": 0.0, "z": 0.0},
        "speed": float32(speed),
        "time_allowance": {"sec": 30, "nanosec": 0},
    }
    if distro == "kilted":
        goal["disable_collision_checks"] = False
    return goal


def spin(distro: str, angle_deg: float) -> dict[str, Any]:
    goal: dict[str, Any] = {
        "target_yaw": float32(math.radians(angle_deg)),
        "time_allowance": {"sec": 30, "nanosec": 0},
    }
    if distro == "kilted":
        goal["disable_collision_checks"] = False
    return goal


def trajectory(joints: list[str], positions: list[float], seconds: float) -> dict[str, Any]:
    # control_msgs/action/FollowJointTrajectory goal: the same on all three.
    sec = int(seconds)
    point = {
        "positions": positions,
        "velocities": [],
        "accelerations": [],
        "effort": [],
        "time_from_start": {"sec": sec, "nanosec": round((seconds - sec) * 1e9)},
    }
    return {
        "trajectory": {"header": header(), "joint_names": joints, "points": [point]},
        "multi_dof_trajectory": {"header": header(), "joint_names": [], "points": []},
        "path_tolerance": [],
        "component_path_tolerance": [],
        "goal_tolerance": [],
        "component_goal_tolerance": [],
        "goal_time_tolerance": ZERO,
    }


def gripper(position: float) -> dict[str, Any]:
    return {"command": {"position": position, "max_effort": 40.0}}


def parallel_gripper(position: float) -> dict[str, Any]:
    # ParallelGripperCommand: a sensor_msgs/JointState with one position.
    return {"command": {"header": header(), "name": [], "position": [position], "velocity": [], "effort": []}}


def robot_goals(distro: str, stamp: dict[str, int]) -> dict[str, dict[str, Any]]:
    """What each tool of config/robot_nav2.yaml sends on ``distro`` for ROBOT_SAMPLES."""
    grip = gripper if distro in ("humble", "jazzy") else parallel_gripper
    return {
        "navigate_to_pose": navigate(1.5, -2.0, 90, stamp),
        "navigate_to_location": navigate(4.2, -1.5, 90.0, stamp),
        "drive_forward": straight(distro, 0.5, 0.15),
        "back_up": straight(distro, 0.3, 0.1),
        "spin": spin(distro, 90),
        "move_arm_to": trajectory([f"joint_{i}" for i in range(1, 7)], [0.0, 0.6, -1.2, 0.0, 0.9, 0.0], 2.5),
        "open_gripper": grip(0.08),
        "close_gripper": grip(0.0),
        "reset_arm_faults": {},
        "set_arm_motors": {"data": True},
    }


def preset_goals(distro: str) -> dict[str, dict[str, Any]]:
    """What each preset, bound as it ships, sends on ``distro`` for PRESET_SAMPLES."""
    return {
        "navigate_to_pose": navigate(-1.0, 0.5, -45, ZERO),
        "navigate_to_location": navigate(0.0, 0.0, 0.0, ZERO),
        "drive_forward": straight(distro, 1.0, 0.15),
        "back_up": straight(distro, 0.2, 0.1),
        "spin": spin(distro, -30),
        "move_arm_to": trajectory(UR_JOINTS, [0.0, -0.8, 1.2, 0.0, 0.9, 0.0], 4.0),
        "open_gripper": gripper(0.08),
        "close_gripper": gripper(0.0),
        "open_parallel_gripper": parallel_gripper(0.08),
        "close_parallel_gripper": parallel_gripper(0.0),
        "open_joint_gripper": trajectory(["gripper_aperture"], [0.07], 2.0),
        "close_joint_gripper": trajectory(["gripper_aperture"], [-0.02], 2.0),
        "trigger": {},
        "set_bool": {"data": False},
    }


NAV2_TOOLS = ("navigate_to_pose", "navigate_to_location", "drive_forward", "back_up", "spin")


# --------------------------------------------------------------------------- processes


def presets_config(tmp_path: Path) -> Path:
    """Every shipped preset as it ships, named after its file."""
    lines = ["tools:"]
    for path in sorted(PRESETS.glob("*.yaml")):
        if path.stem in ("move_arm_to_pose", "move_arm_to_named"):
            continue  # MoveGroup presets need an arm workspace: test/test_moveit.py, per distro
        lines += [f"  - preset: {json.dumps(str(path))}", f"    name: {path.stem}"]
        if "gripper" in path.stem:  # a process cannot have two types on one action name
            lines.append(f"    action: /{path.stem}_controller/gripper_cmd")
    config = tmp_path / "presets.yaml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


def run_client(distro: str, ros_env: dict[str, str], spec: dict[str, Any], timeout: float = 120) -> list[str]:
    env = distro_env(distro, ros_env)
    proc = subprocess.run(
        [sys.executable, str(CLIENT), json.dumps(spec)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "done" in proc.stdout.splitlines(), output
    return (proc.stdout + "\n" + proc.stderr).splitlines()


def parsed(lines: list[str], kind: str, label: str) -> dict[str, Any]:
    prefix = f"{kind} {label} "
    out = {}
    for line in lines:
        if line.startswith(prefix):
            name, _, body = line[len(prefix) :].partition(" ")
            out[name] = json.loads(body)
    return out


def require(distro: str) -> None:
    problem = missing(distro)
    if problem is not None:
        pytest.fail(f"the {distro} stand-ins are missing: {problem}")


# --------------------------------------------------------------------------- the matrix


@pytest.mark.parametrize("distro", DISTROS)
def test_every_preset_and_the_robot_config_bind_and_build_the_distros_goal(
    distro: str, ros_env: dict[str, str], tmp_path: Path
) -> None:
    require(distro)
    spec = {
        "configs": {"robot": str(ROBOT), "presets": str(presets_config(tmp_path))},
        "samples": {"robot": ROBOT_SAMPLES, "presets": PRESET_SAMPLES},
    }
    lines = run_client(distro, ros_env, spec)
    output = "\n".join(lines)
    assert not [line for line in lines if line.startswith("error ")], output
    looks = {"humble": "Humble", "jazzy": "Jazzy", "kilted": "Kilted"}[distro]
    assert f"distro nav2_msgs {looks}" in output, output  # the process imports that distro's types

    for label, goals, samples in (
        ("robot", robot_goals(distro, ZERO), ROBOT_SAMPLES),
        ("presets", preset_goals(distro), PRESET_SAMPLES),
    ):
        tools = parsed(lines, "tool", label)
        assert sorted(tools) == sorted(samples), output
        for name, expected in goals.items():
            assert tools[name]["goal"] == expected, f"{distro} {label} {name}: {tools[name]['goal']}"
        for name in NAV2_TOOLS:
            # Humble's Nav2 results carry no error code: not required, not read.
            code, message = ("error_code", "error_msg") if distro != "humble" else (None, None)
            assert (tools[name]["error_code_field"], tools[name]["message_field"]) == (code, message)
        assert tools["move_arm_to"]["error_code_field"] == "error_code"

    robot = parsed(lines, "tool", "robot")
    gripper_type = "GripperCommand" if distro in ("humble", "jazzy") else "ParallelGripperCommand"
    assert robot["close_gripper"]["type"] == f"control_msgs/action/{gripper_type}"
    projection = ["effort_n", "gap_m"] if distro in ("humble", "jazzy") else ["effort", "position"]
    assert robot["close_gripper"]["result_fields"] == [*projection, "reached_goal", "stalled"]
    # The preset's 2.0 m maximum is clamped to the config's safety.max_translation_m.
    assert robot["drive_forward"]["schema"]["properties"]["distance"]["maximum"] == 1.5
    if distro != "kilted":
        # What the distro lacks is left out with a log naming it, never silently.
        left_out = [line for line in lines if "left out: not in the installed nav2_msgs/action/Spin" in line]
        assert left_out and f"ROS 2 {looks}" in left_out[0], output


def _goals_received(server: ServerProcess) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for line in list(server.lines):
        if line.startswith("goal "):
            name, _, body = line[len("goal ") :].partition(" ")
            out.append((name, json.loads(body)))
    return out


ROBOT_SERVERS = [
    ("navigate_to_pose", "navigate_to_pose"),
    ("navigate_to_location", "navigate_to_pose"),
    ("drive_forward", "DriveOnHeading"),
    ("back_up", "BackUp"),
    ("spin", "Spin"),
    ("move_arm_to", "follow_joint_trajectory"),
    ("open_gripper", "gripper_cmd"),
    ("close_gripper", "gripper_cmd"),
    ("reset_arm_faults", "reset_faults"),
    ("set_arm_motors", "enable_motors"),
]


def run_against_servers(
    distro: str, behaviour: str, ros_env: dict[str, str]
) -> tuple[dict[str, Any], ServerProcess]:
    server = ServerProcess(behaviour, distro_env(distro, ros_env), script=SERVERS)
    try:
        assert server.wait_for_line("ready", 30), server.output
        spec = {
            "configs": {"robot": str(ROBOT)},
            "samples": {"robot": ROBOT_SAMPLES},
            "run": True,
            "sim_time_ns": SIM_NS,
        }
        lines = run_client(distro, ros_env, spec)
        assert not [line for line in lines if line.startswith("error ")], "\n".join(lines)
        envelopes = parsed(lines, "envelope", "robot")
    finally:
        server.stop()
    assert sorted(envelopes) == sorted(ROBOT_SAMPLES), "\n".join(lines)
    return envelopes, server


@pytest.mark.parametrize("distro", DISTROS)
def test_the_robot_config_against_real_servers_of_the_distro(distro: str, ros_env: dict[str, str]) -> None:
    require(distro)
    envelopes, server = run_against_servers(distro, "succeed", ros_env)
    assert {name: env.get("success") for name, env in envelopes.items()} == dict.fromkeys(ROBOT_SAMPLES, True)
    goals = robot_goals(distro, SIM)
    received = _goals_received(server)
    assert [name for name, _ in received] == [server_name for _, server_name in ROBOT_SERVERS], server.output
    for (tool, _), (_, goal) in zip(ROBOT_SERVERS, received, strict=True):
        assert goal == goals[tool], f"{distro} {tool}: the server received {goal}"
    if distro in ("humble", "jazzy"):
        assert envelopes["open_gripper"]["result"] == {
            "gap_m": 0.08,
            "effort_n": 2.0,
            "stalled": False,
            "reached_goal": True,
        }
    else:
        assert envelopes["open_gripper"]["result"] == {
            "position": [0.08],
            "effort": [2.0],
            "stalled": False,
            "reached_goal": True,
        }


@pytest.mark.parametrize("distro", DISTROS)
def test_failures_read_the_distros_error_codes_after_the_status(distro: str, ros_env: dict[str, str]) -> None:
    require(distro)
    envelopes, _ = run_against_servers(distro, "fail", ros_env)
    navigate = envelopes["navigate_to_pose"]
    assert navigate["success"] is False
    if distro == "humble":
        # No error code in Humble's result: the status alone says it failed.
        assert navigate["reason"] == "action server '/navigate_to_pose' aborted the goal"
        assert "error_code" not in navigate
    else:
        assert navigate["reason"] == (
            "action server '/navigate_to_pose' aborted the goal: "
            "no valid path (error code 208): no path around the sofa"
        )
    drive = envelopes["drive_forward"]
    assert drive["success"] is False and drive["result"] == {"elapsed_s": 3.0}
    if distro != "humble":
        assert "collision ahead (error code 723): obstacle in the way" in drive["reason"]
    # A stall aborts the grasp (the controller's allow_stalling is false): a failure.
    assert envelopes["close_gripper"]["success"] is False
    assert envelopes["close_gripper"]["result"]["stalled"] is True


@pytest.mark.parametrize("distro", ["jazzy", "kilted"])
def test_a_navigation_that_succeeds_with_an_error_code_is_a_success(
    distro: str, ros_env: dict[str, str]
) -> None:
    require(distro)
    envelopes, _ = run_against_servers(distro, "recovered", ros_env)
    navigate = envelopes["navigate_to_pose"]
    assert navigate == {"success": True, "result": {}, "run_id": navigate["run_id"]}


def test_a_binding_that_does_not_fit_names_the_distro_and_the_fix(
    ros_env: dict[str, str], tmp_path: Path
) -> None:
    require("jazzy")
    # The Kilted-era spin binding (disable_collision_checks required) on Jazzy's types.
    strict = tmp_path / "strict.yaml"
    strict.write_text("tools:\n  - preset: spin\n    optional_fields: []\n", encoding="utf-8")
    skippable = tmp_path / "skippable.yaml"
    skippable.write_text(
        "tools:\n  - preset: spin\n    optional_fields: []\n    optional: true\n  - preset: drive_forward\n",
        encoding="utf-8",
    )
    spec = {
        "configs": {"strict": str(strict), "skippable": str(skippable)},
        "samples": {"skippable": {"drive_forward": {"distance": 0.5}}},
    }
    lines = run_client("jazzy", ros_env, spec)
    errors = [line for line in lines if line.startswith("error strict ")]
    assert len(errors) == 1, lines
    assert errors[0].startswith(
        "error strict tool 'spin': goal field 'disable_collision_checks': no such field in "
        "nav2_msgs/action/Spin_Goal (fields of the goal: target_yaw, time_allowance) "
        "[the installed nav2_msgs looks like ROS 2 Jazzy"
    ), errors
    fix = "remove goal field 'disable_collision_checks', list 'goal.disable_collision_checks' in optional_"
    assert fix in errors[0]
    # optional: true leaves the tool out with that message as a warning; the rest binds.
    assert sorted(parsed(lines, "tool", "skippable")) == ["drive_forward"], lines
    warned = [line for line in lines if "(optional: true, so the tool is left out)" in line]
    assert warned and "tool 'spin': goal field 'disable_collision_checks'" in warned[0], lines


@pytest.mark.parametrize("distro", ["humble", "jazzy"])
def test_harness_ros_tools_prints_the_robot_config_on_the_distro(
    distro: str, ros_env: dict[str, str]
) -> None:
    # `harness-ros tools` (and check) bind as the node does: what a distro lacks is left out.
    require(distro)
    cli = [sys.executable, "-c", "import sys; from harness_ros.cli import main; sys.exit(main())"]
    proc = subprocess.run(
        [*cli, "tools", "--config", str(ROBOT), "--json"],
        env=distro_env(distro, ros_env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "spin" in proc.stdout and "disable_collision_checks" not in proc.stdout
