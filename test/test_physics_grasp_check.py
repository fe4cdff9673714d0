"""The grasp check on the physics robot (issue 45), over DDS, with no model anywhere.

The stretch3_physics node (Stretch 3 in MuJoCo) runs in its own process; this test reads
its /joint_states through the harness's own state subscription (``RosRobotState``) with
config/robots/stretch3_physics.yaml's evaluator, and judges through the harness's
``EvaluationGate`` with ``evaluator.kind: checks`` (no model, no image). A real pick of the
cup is confirmed by the finger joint; a close on an empty spot (the real robot's
close_joint_gripper goal) and a pick out of reach are not; a place is confirmed empty.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.physics_robot import physics_node, run_goal
from support.waiting import wait_for

pytest.importorskip("mujoco", reason="pip install -r requirements.txt -c constraints.txt")
pytest.importorskip("harness_sim_msgs", reason="build it first: scripts/build_interfaces.sh .venv")
pytest.importorskip("control_msgs", reason="the test stand-ins: make test-interfaces")

from harness_ros.config import load_config
from harness_ros.evaluation import ChecksEvaluator, EvaluationGate, Verdict, VerdictStatus
from harness_ros.observation.contracts import Observation
from harness_ros.tools import ToolSpec

pytestmark = [pytest.mark.ros, pytest.mark.serial]

CONFIG = Path(__file__).resolve().parents[1] / "config" / "robots" / "stretch3_physics.yaml"
WAIT_S = 30.0


@pytest.fixture
def physics_process(ros_env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    with physics_node(ros_env, width=80, height=60, rate_hz=1.0) as process:
        yield process


def _run_goal(client: Any, goal: Any) -> Any:
    return run_goal(client, goal, WAIT_S)[1]


def test_the_grasp_check_confirms_a_real_pick_and_not_a_pick_of_nothing(
    ros_context: Any, physics_process: subprocess.Popen[str]
) -> None:
    from control_msgs.action import FollowJointTrajectory
    from harness_sim_msgs.action import PickObject, PlaceObject
    from rclpy.action import ActionClient
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.node import Node
    from trajectory_msgs.msg import JointTrajectoryPoint

    from harness_ros.ros.robot_state import RosRobotState

    config = load_config(CONFIG).evaluator
    node = Node("grasp_check_test", context=ros_context)
    state = RosRobotState(node, config.state)
    gate = EvaluationGate(ChecksEvaluator(), max_segments=1, evidence=config.evidence, state=state)
    trajectory = ActionClient(node, FollowJointTrajectory, "/stretch_controller/follow_joint_trajectory")
    pick = ActionClient(node, PickObject, "/sim/pick_object")
    place = ActionClient(node, PlaceObject, "/sim/place_object")
    executor = MultiThreadedExecutor(num_threads=2, context=ros_context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()

    def judge(tool: str) -> Verdict:
        spec = ToolSpec(
            name=tool, description=tool, input_schema={}, evaluated=True, post_condition="as configured"
        )
        return gate.judge(spec, f"{tool}-run", Observation(time=time.time()), ended_at=time.monotonic())

    try:
        if not (trajectory.wait_for_server(timeout_sec=WAIT_S) and pick.wait_for_server(timeout_sec=WAIT_S)):
            physics_process.terminate()
            pytest.fail(f"the physics node did not come up:\n{physics_process.communicate()[0]}")
        assert wait_for(lambda: not state.read_state(["arm"])[0].missing, WAIT_S)

        # An empty spot: close_joint_gripper's goal (gripper_aperture -0.02 m) on nothing.
        close = FollowJointTrajectory.Goal()
        close.trajectory.joint_names = ["gripper_aperture"]
        point = JointTrajectoryPoint()
        point.positions = [-0.02]
        point.time_from_start.sec = 1
        close.trajectory.points = [point]
        _run_goal(trajectory, close)
        nothing = judge("pick_object")
        assert nothing.status is VerdictStatus.FAILURE, nothing
        assert "not holding: joint_gripper_finger_left at -0." in (nothing.failure_reason or ""), nothing
        assert "closed at or below 0" in (nothing.failure_reason or "")

        # A real pick of the cup: the fingers stop on it.
        picked = _run_goal(pick, PickObject.Goal(object_id="red_cup"))
        assert picked.success, picked.message
        held = judge("pick_object")
        assert held.status is VerdictStatus.SUCCESS, held
        assert held.evidence.startswith("grasp check: holding: joint_gripper_finger_left at 0.1"), held

        # Put it down: the open fingers let go.
        placed = _run_goal(place, PlaceObject.Goal(surface_id="dining_table"))
        assert placed.success, placed.message
        released = judge("place_object")
        assert released.status is VerdictStatus.SUCCESS, released
        assert "the fingers are open: released" in released.evidence, released

        # A pick out of reach (the bottle on the counter, 1.4 m along): nothing is held.
        far = _run_goal(pick, PickObject.Goal(object_id="blue_bottle"))
        assert not far.success and far.message.startswith("out of reach"), far.message
        missed = judge("pick_object")
        assert missed.status is VerdictStatus.FAILURE and "not holding" in (missed.failure_reason or ""), (
            missed
        )
        for verdict in (nothing, held, released, missed):
            print(verdict.status.value, verdict.evidence)
    finally:
        executor.shutdown(timeout_sec=5)
        state.destroy()
        node.destroy_node()
