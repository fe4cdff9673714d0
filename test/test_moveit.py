"""MoveIt 2's MoveGroup as small tools (config/robot_moveit.yaml, config/presets/move_arm_*.yaml)
against a fake move_group in another process (test/support/move_group_server.py), with
the moveit_msgs test stand-ins: Kilted in this process (the venv's), Humble, Jazzy and
Kilted each in a process of its own (test/support/distro_client.py).

Each received goal is compared whole with the expected message: the mapped fields as the
binding fills them, every other field at its message default.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy")
# No skip without moveit_msgs: `make test` builds its stand-ins, and a missing one must fail.

from support.processes import ServerProcess
from support.ros_distros import DISTROS, distro_env, missing
from support.spinning_node import spinning_node

from harness_ros.config import HarnessConfig, config_from_dict, load_config
from harness_ros.hooks import HookAction, run_hooks
from harness_ros.hooks.arm_workspace import ArmWorkspaceHook
from harness_ros.tools.binding import definition_tokens, model_definition
from harness_ros.tools.contracts import CancelToken

pytestmark = pytest.mark.ros

REPO_ROOT = Path(__file__).resolve().parents[1]
SCRIPT = REPO_ROOT / "test" / "support" / "move_group_server.py"
CLIENT = REPO_ROOT / "test" / "support" / "distro_client.py"
ROBOT = REPO_ROOT / "config" / "robot_moveit.yaml"
PRESETS = REPO_ROOT / "config" / "presets"
DISCOVERY_S = 10.0
SIM_NS = 1000 * 10**9 + 250_000_000
UR_HOME = {
    "shoulder_pan_joint": 0.0,
    "shoulder_lift_joint": -1.57,
    "elbow_joint": 1.57,
    "wrist_1_joint": 0.0,
    "wrist_2_joint": 0.0,
    "wrist_3_joint": 0.0,
}
SAMPLES = {
    "move_arm_to_pose": {"x": 0.45, "y": -0.2, "z": 0.3, "orientation": "forward"},
    "move_arm_to_named": {"state": "home"},
    "plan_arm_to_pose": {"x": 0.5, "y": 0.1, "z": 0.25},
}
FORWARD = {"x": 0.0, "y": 0.7071068, "z": 0.0, "w": 0.7071068}
TOP_DOWN = {"x": 1.0, "y": 0.0, "z": 0.0, "w": 0.0}


# --------------------------------------------------------------------------- expected goals


def jsonable(cls: type, **changes: Any) -> dict[str, Any]:
    from harness_ros.ros.interfaces import message_to_jsonable

    return merged(message_to_jsonable(cls()), changes)


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in changes.items():
        out[key] = (
            merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def move_group_goal(constraints: dict[str, Any], *, plan_only: bool = False) -> dict[str, Any]:
    """The MoveGroup goal every preset sends (MoveGroupInterface's shape) around ``constraints``."""
    from moveit_msgs.action import MoveGroup
    from moveit_msgs.msg import Constraints

    return jsonable(
        MoveGroup.Goal,
        request={
            "group_name": "ur_manipulator",
            "num_planning_attempts": 5,
            "allowed_planning_time": 5.0,
            "max_velocity_scaling_factor": 0.1,
            "max_acceleration_scaling_factor": 0.1,
            "start_state": {"is_diff": True},
            "goal_constraints": [jsonable(Constraints, **constraints)],
        },
        planning_options={
            "plan_only": plan_only,
            "planning_scene_diff": {"is_diff": True, "robot_state": {"is_diff": True}},
        },
    )


def pose_goal(x: float, y: float, z: float, orientation: dict[str, float], **options: Any) -> dict[str, Any]:
    from geometry_msgs.msg import Pose
    from moveit_msgs.msg import OrientationConstraint, PositionConstraint
    from shape_msgs.msg import SolidPrimitive

    position = jsonable(
        PositionConstraint,
        header={"frame_id": "base_link"},
        link_name="tool0",
        constraint_region={
            "primitives": [jsonable(SolidPrimitive, type=2, dimensions=[0.01])],
            "primitive_poses": [jsonable(Pose, position={"x": x, "y": y, "z": z}, orientation={"w": 1.0})],
        },
        weight=1.0,
    )
    rotation = jsonable(
        OrientationConstraint,
        header={"frame_id": "base_link"},
        link_name="tool0",
        orientation=orientation,
        absolute_x_axis_tolerance=0.05,
        absolute_y_axis_tolerance=0.05,
        absolute_z_axis_tolerance=0.05,
        weight=1.0,
    )
    return move_group_goal(
        {"position_constraints": [position], "orientation_constraints": [rotation]}, **options
    )


def named_goal(state: dict[str, float]) -> dict[str, Any]:
    from moveit_msgs.msg import JointConstraint

    joints = [
        jsonable(
            JointConstraint,
            joint_name=joint,
            position=position,
            tolerance_above=1e-4,
            tolerance_below=1e-4,
            weight=1.0,
        )
        for joint, position in state.items()
    ]
    return move_group_goal({"joint_constraints": joints})


def expected_goals() -> dict[str, dict[str, Any]]:
    return {
        "move_arm_to_pose": pose_goal(0.45, -0.2, 0.3, FORWARD),
        "move_arm_to_named": named_goal(UR_HOME),
        "plan_arm_to_pose": pose_goal(0.5, 0.1, 0.25, TOP_DOWN, plan_only=True),
    }


def for_distro(goal: dict[str, Any], distro: str) -> dict[str, Any]:
    """``goal`` (built from the Kilted types) as ``distro``'s MotionPlanRequest names it."""
    if distro != "humble":
        return goal
    request = dict(goal["request"])
    request = {
        ("cartesian_speed_end_effector_link" if key == "cartesian_speed_limited_link" else key): value
        for key, value in request.items()
    }
    return {**goal, "request": request}


def error_words() -> dict[int, str]:
    import yaml

    preset = yaml.safe_load((PRESETS / "move_arm_to_pose.yaml").read_text(encoding="utf-8"))
    return {int(code): words for code, words in preset["error_codes"].items()}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def move_group(ros_env: dict[str, str]) -> Iterator[Callable[[str], ServerProcess]]:
    started: list[ServerProcess] = []

    def start(behaviour: str) -> ServerProcess:
        server = ServerProcess(behaviour, {**ros_env, "ROS_DISTRO": "kilted"}, script=SCRIPT)
        started.append(server)
        assert server.wait_for_line("ready", 30), server.output
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def node(ros_context: Any) -> Iterator[Any]:
    from rclpy.parameter import Parameter

    with spinning_node(ros_context, "moveit_test_client") as client:
        client.set_parameters([Parameter("use_sim_time", Parameter.Type.BOOL, True)])
        yield client


def robot_config(**tool_changes: Any) -> HarnessConfig:
    config = load_config(ROBOT)
    if not tool_changes:
        return config
    tools = [tool.model_copy(update=tool_changes) for tool in config.tools]
    return config.model_copy(update={"tools": tools})


def tools_of(node: Any, config: HarnessConfig, server: ServerProcess) -> dict[str, Any]:
    from harness_ros.ros.ros_tools import build_ros_tools

    tools = {tool.spec.name: tool for tool in build_ros_tools(node, config.tools)}
    for tool in tools.values():
        assert tool._client.wait_for_server(timeout_sec=DISCOVERY_S), server.output
    return tools


def goals_received(server: ServerProcess) -> list[dict[str, Any]]:
    prefix = "goal move_action "
    return [json.loads(line[len(prefix) :]) for line in list(server.lines) if line.startswith(prefix)]


def run(tool: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    return tool.execute(arguments, cancel=CancelToken())


# --------------------------------------------------------------------------- Kilted, in process


def test_each_tool_sends_the_whole_expected_goal_and_reads_success(node: Any, move_group: Any) -> None:
    server = move_group("succeed")
    tools = tools_of(node, robot_config(), server)
    expected = expected_goals()
    for count, (name, arguments) in enumerate(SAMPLES.items(), start=1):
        result = run(tools[name], arguments)
        assert result["success"] is True, result
        assert result["result"] == {"planning_time_s": 0.25}, result
        goals = goals_received(server)
        assert len(goals) == count, server.output
        assert goals[-1] == expected[name], name


def test_every_move_it_error_code_reads_as_the_presets_words(node: Any, move_group: Any) -> None:
    server = move_group("codes")
    codes_line = next(line for line in server.lines if line.startswith("codes "))
    codes = json.loads(codes_line[len("codes ") :])
    words = error_words()
    # The preset names every failure code of the installed MoveItErrorCodes.
    assert sorted(words) == codes
    tool = tools_of(node, robot_config(), server)["move_arm_to_pose"]
    for code in codes:
        result = run(tool, SAMPLES["move_arm_to_pose"])
        assert result["success"] is False, result
        assert result["error_code"] == code and result["error"] == words[code], result
        assert result["reason"] == (
            f"action server '/move_action' aborted the goal: {words[code]} (error code {code}): code {code}"
        ), result


def test_a_goal_past_its_timeout_is_cancelled_on_the_server(node: Any, move_group: Any) -> None:
    server = move_group("hang")
    tool = tools_of(node, robot_config(timeout_s=1.0), server)["move_arm_to_named"]
    result = run(tool, {"state": "stow"})
    assert result["success"] is False, result
    assert result["reason"] == "timed out after 1.0 s; goal cancelled", result
    assert result["last_feedback"] == {"state": "PLANNING"}
    assert server.wait_for_line("cancel requested", 5), server.output


def test_a_target_outside_the_workspace_is_refused_before_any_goal_is_sent(
    node: Any, move_group: Any
) -> None:
    from harness_ros.harness.factory import build_hooks

    server = move_group("succeed")
    config = robot_config()
    tools = tools_of(node, config, server)
    hooks = build_hooks(config, list(tools.values()), None, None)
    tool = tools["move_arm_to_pose"]

    def call(arguments: dict[str, Any]) -> dict[str, Any] | str:
        # What the harness does: the hook chain first, the tool only when nothing blocked.
        final, decisions = run_hooks(hooks, tool.spec, arguments, None)
        blocked = [d for d in decisions if d.action is HookAction.BLOCK]
        return blocked[0].reason if blocked else run(tool, final)

    reason = call({"x": 1.2, "y": 0.0, "z": 0.3})
    assert reason == (
        "target (1.200, 0.000, 0.300) m in base_link is outside the arm workspace (cylinder within "
        "0.85 m of the z axis outside 0.15 m, z [-0.1, 1] m): it is 1.200 m from the z axis, beyond "
        "the reach of 0.85 m; nothing was sent, choose a point inside it"
    )
    assert "z 1.500 m is outside [-0.1, 1] m" in str(call({"x": 0.3, "y": 0.0, "z": 1.5}))
    assert "inside the keep-out of 0.15 m" in str(call({"x": 0.05, "y": 0.05, "z": 0.3}))
    assert goals_received(server) == []
    inside = call({"x": 0.4, "y": 0.2, "z": 0.3})
    assert isinstance(inside, dict) and inside["success"] is True, inside
    assert len(goals_received(server)) == 1
    # A named state has no Cartesian target: the hook lets it through.
    assert run_hooks(hooks, tools["move_arm_to_named"].spec, {"state": "home"}, None)[1][-1].action is (
        HookAction.PASS
    )


def test_each_tool_definition_fits_250_tokens(node: Any, move_group: Any) -> None:
    server = move_group("succeed")
    tools = tools_of(node, robot_config(), server)
    tokens = {name: definition_tokens(model_definition(tool.spec)) for name, tool in tools.items()}
    assert sorted(tokens) == sorted(SAMPLES)
    assert all(count <= 250 for count in tokens.values()), tokens
    pose = tools["move_arm_to_pose"].spec.input_schema
    assert pose["properties"]["orientation"]["enum"] == ["top_down", "forward", "left", "right"]
    assert pose["required"] == ["x", "y", "z"]
    named = tools["move_arm_to_named"].spec.input_schema
    assert named["properties"]["state"]["enum"] == ["home", "ready", "stow"]


# --------------------------------------------------------------------------- per distribution


def run_client(distro: str, ros_env: dict[str, str], spec: dict[str, Any]) -> list[str]:
    proc = subprocess.run(
        [sys.executable, str(CLIENT), json.dumps(spec)],
        env=distro_env(distro, ros_env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0 and "done" in proc.stdout.splitlines(), proc.stdout + proc.stderr
    return proc.stdout.splitlines()


def parsed(lines: list[str], kind: str) -> dict[str, Any]:
    prefix = f"{kind} moveit "
    return {
        line[len(prefix) :].partition(" ")[0]: json.loads(line[len(prefix) :].partition(" ")[2])
        for line in lines
        if line.startswith(prefix)
    }


@pytest.mark.parametrize("distro", DISTROS)
def test_the_moveit_config_against_a_move_group_of_each_distro(distro: str, ros_env: dict[str, str]) -> None:
    problem = missing(distro)
    if problem is not None:
        pytest.fail(f"the {distro} stand-ins are missing: {problem}")
    spec = {
        "configs": {"moveit": str(ROBOT)},
        "samples": {"moveit": SAMPLES},
        "run": True,
        "sim_time_ns": SIM_NS,
    }
    expected = {name: for_distro(goal, distro) for name, goal in expected_goals().items()}
    words = error_words()

    server = ServerProcess("succeed", distro_env(distro, ros_env), script=SCRIPT)
    try:
        assert server.wait_for_line("ready", 30), server.output
        lines = run_client(distro, ros_env, spec)
    finally:
        server.stop()
    assert not [line for line in lines if line.startswith("error ")], "\n".join(lines)
    tools = parsed(lines, "tool")
    envelopes = parsed(lines, "envelope")
    assert sorted(envelopes) == sorted(SAMPLES), "\n".join(lines)
    for name, envelope in envelopes.items():
        assert envelope["success"] is True, (name, envelope)
        assert tools[name]["goal"] == expected[name], (distro, name)
        # Humble's MoveItErrorCodes has no message: the binding does not read one there.
        assert tools[name]["message_field"] == (None if distro == "humble" else "error_code.message")
    assert goals_received(server) == [expected[name] for name in SAMPLES], distro

    server = ServerProcess("codes", distro_env(distro, ros_env), script=SCRIPT)
    try:
        assert server.wait_for_line("ready", 30), server.output
        lines = run_client(distro, ros_env, spec)
    finally:
        server.stop()
    codes = json.loads(next(line for line in server.lines if line.startswith("codes "))[len("codes ") :])
    assert set(codes) <= set(words), codes  # every code of the distro's type has words
    envelopes = parsed(lines, "envelope")
    for index, name in enumerate(SAMPLES):
        code = codes[index]
        envelope = envelopes[name]
        assert (envelope["success"], envelope["error_code"], envelope["error"]) == (False, code, words[code])
        assert envelope["reason"].endswith(f"(error code {code})" if distro == "humble" else f": code {code}")


# --------------------------------------------------------------------------- no ROS needed


def workspace_config(workspace: dict[str, Any], **safety: Any) -> HarnessConfig:
    return config_from_dict(
        {
            "safety": {"arm_workspaces": {"base_link": workspace}, **safety},
            "tools": [{"preset": "move_arm_to_pose"}],
        },
        base_dir=REPO_ROOT / "config",
        origin="test",
    )


def test_config_caps_velocity_scaling_and_requires_a_workspace_for_the_frame() -> None:
    cylinder = {"shape": "cylinder", "radius_m": 0.8, "z_m": [0.0, 1.0]}
    capped = config_from_dict(
        {
            "safety": {"arm_workspaces": {"base_link": cylinder}, "max_arm_velocity_scaling": 0.05},
            "tools": [{"preset": "move_arm_to_pose"}],
        },
        base_dir=REPO_ROOT / "config",
        origin="test",
    )
    assert capped.tools[0].goal["request.max_velocity_scaling_factor"] == 0.05
    assert workspace_config(cylinder).tools[0].goal["request.max_velocity_scaling_factor"] == 0.1
    with pytest.raises(Exception, match=r"frame 'base_link', which has no safety.arm_workspaces entry"):
        config_from_dict(
            {"tools": [{"preset": "move_arm_to_pose"}]}, base_dir=REPO_ROOT / "config", origin="test"
        )
    with pytest.raises(Exception, match=r"must be a number"):
        config_from_dict(
            {
                "safety": {"arm_workspaces": {"base_link": cylinder}},
                "tools": [
                    {
                        "preset": "move_arm_to_pose",
                        "arguments": {"speed": {"description": "s", "minimum": 0, "maximum": 1}},
                        "goal": {"request.max_velocity_scaling_factor": {"arg": "speed"}},
                    }
                ],
            },
            base_dir=REPO_ROOT / "config",
            origin="test",
        )
    with pytest.raises(Exception, match=r"a box workspace takes x_m, y_m and z_m"):
        workspace_config({"shape": "box", "z_m": [0.0, 1.0]})
    with pytest.raises(Exception, match=r"z_m must be \[min, max\] with min < max"):
        workspace_config({"shape": "cylinder", "radius_m": 0.8, "z_m": [1.0, 0.0]})


_BOX = {"shape": "box", "x_m": [0.1, 0.7], "y_m": [-0.4, 0.4], "z_m": [0.0, 0.9]}
_CYLINDER = {"shape": "cylinder", "radius_m": 0.85, "min_radius_m": 0.15, "z_m": [-0.1, 1.0]}


def _inside(workspace: dict[str, Any], x: float, y: float, z: float) -> bool:
    if not all(math.isfinite(v) for v in (x, y, z)) or not workspace["z_m"][0] <= z <= workspace["z_m"][1]:
        return False
    if workspace["shape"] == "box":
        return (
            workspace["x_m"][0] <= x <= workspace["x_m"][1]
            and workspace["y_m"][0] <= y <= workspace["y_m"][1]
        )
    return workspace["min_radius_m"] <= math.hypot(x, y) <= workspace["radius_m"]


def test_no_target_outside_the_workspace_passes_the_hook_fuzzed() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from harness_ros.tools.contracts import ToolSpec
    from harness_ros.tools.moveit_goal import built_goal

    configs = {name: workspace_config(ws) for name, ws in (("box", _BOX), ("cylinder", _CYLINDER))}
    hooks = {name: ArmWorkspaceHook(c.safety, c.tools) for name, c in configs.items()}
    spec = ToolSpec(name="move_arm_to_pose", description="d", input_schema={"type": "object"})
    coordinate = st.one_of(
        st.floats(min_value=-1.5, max_value=1.5),
        st.floats(allow_nan=True, allow_infinity=True),
    )

    @settings(max_examples=400, deadline=None)
    @given(
        shape=st.sampled_from(["box", "cylinder"]),
        x=coordinate,
        y=coordinate,
        z=coordinate,
        orientation=st.sampled_from(["top_down", "forward", "left", "right"]),
    )
    def check(shape: str, x: float, y: float, z: float, orientation: str) -> None:
        arguments = {"x": x, "y": y, "z": z, "orientation": orientation}
        decision = hooks[shape].before_execution(spec, arguments, None)
        workspace = _BOX if shape == "box" else _CYLINDER
        assert (decision.action is HookAction.PASS) == _inside(workspace, x, y, z), (decision, arguments)
        if decision.action is HookAction.PASS:
            # What passed is exactly what the goal carries.
            goal = built_goal(configs[shape].tools[0], arguments)
            region = goal["request"]["goal_constraints"][0]["position_constraints"][0]["constraint_region"]
            assert region["primitive_poses"][0]["position"] == {"x": x, "y": y, "z": z}

    check()


def test_the_hook_fails_closed_on_a_frame_without_a_workspace_and_on_an_unreadable_target() -> None:
    from harness_ros.tools.contracts import ToolSpec

    config = workspace_config(_BOX)
    spec = ToolSpec(name="move_arm_to_pose", description="d", input_schema={"type": "object"})
    other_frame = config.tools[0].model_copy(
        update={
            "goal": {
                **config.tools[0].goal,
                "request.goal_constraints[0].position_constraints[0].header.frame_id": "odom",
            }
        }
    )
    decision = ArmWorkspaceHook(config.safety, [other_frame]).before_execution(
        spec, {"x": 0.3, "y": 0.0, "z": 0.3}, None
    )
    assert decision.action is HookAction.BLOCK
    assert (
        "in odom: no arm workspace is declared for that frame (safety.arm_workspaces: base_link)"
        in decision.reason
    )
    decision = ArmWorkspaceHook(config.safety, config.tools).before_execution(
        spec, {"x": "0.3", "y": 0.0, "z": 0.3}, None
    )
    assert decision.action is HookAction.BLOCK
    assert "cannot check the target" in decision.reason
