"""The stretch3_physics node (Stretch 3 in MuJoCo) in its own process, over DDS, through
stretch_ros2's names and types: the cameras, depth, scan, joint states and odometry
arrive; a FollowJointTrajectory goal moves the lift; the pick action lifts the cup by
physics; NavigateToPose refuses outside navigation mode and aborts with a reason when
the base drives into the table; Nav2's backup, spin and drive_on_heading move the base
(and refuse outside navigation mode)."""

from __future__ import annotations

import math
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from support.physics_robot import physics_node, run_goal
from support.waiting import wait_for

pytest.importorskip("mujoco", reason="pip install -r requirements.txt -c constraints.txt")
pytest.importorskip("harness_sim_msgs", reason="build it first: scripts/build_interfaces.sh .venv")
pytest.importorskip("nav2_msgs", reason="the test stand-ins: make test-interfaces")
pytest.importorskip("control_msgs", reason="the test stand-ins: make test-interfaces")

pytestmark = [pytest.mark.ros, pytest.mark.serial]

WAIT_S = 30.0
TOPICS = (
    "/camera/color/image_raw",
    "/camera/aligned_depth_to_color/image_raw",
    "/camera/color/camera_info",
    "/gripper_camera/color/image_rect_raw",
    "/scan",
    "/joint_states",
    "/odom",
)


@pytest.fixture
def physics_process(ros_env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    with physics_node(ros_env, width=160, height=120, rate_hz=2.0) as process:
        yield process


def _run_goal(client: Any, goal: Any) -> tuple[int, Any]:
    return run_goal(client, goal, WAIT_S)


def test_physics_robot_over_dds(ros_context: Any, physics_process: subprocess.Popen[str]) -> None:
    from action_msgs.msg import GoalStatus
    from control_msgs.action import FollowJointTrajectory
    from harness_sim_msgs.action import PickObject
    from nav2_msgs.action import BackUp, DriveOnHeading, NavigateToPose, Spin
    from nav_msgs.msg import Odometry
    from rclpy.action import ActionClient
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.node import Node
    from sensor_msgs.msg import CameraInfo, Image, JointState, LaserScan
    from std_srvs.srv import Trigger

    node = Node("physics_test_client", context=ros_context)
    got: dict[str, Any] = {}
    types = {
        "/scan": LaserScan,
        "/joint_states": JointState,
        "/odom": Odometry,
        "/camera/color/camera_info": CameraInfo,
    }
    for topic in TOPICS:
        node.create_subscription(types.get(topic, Image), topic, lambda m, t=topic: got.__setitem__(t, m), 1)
    trajectory = ActionClient(node, FollowJointTrajectory, "/stretch_controller/follow_joint_trajectory")
    pick = ActionClient(node, PickObject, "/sim/pick_object")
    navigate = ActionClient(node, NavigateToPose, "/navigate_to_pose")
    spin = ActionClient(node, Spin, "/spin")
    drive = ActionClient(node, DriveOnHeading, "/drive_on_heading")
    backup = ActionClient(node, BackUp, "/backup")
    to_navigation = node.create_client(Trigger, "/switch_to_navigation_mode")
    executor = MultiThreadedExecutor(num_threads=2, context=ros_context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        if not trajectory.wait_for_server(timeout_sec=WAIT_S):
            physics_process.terminate()
            pytest.fail(f"the physics node did not come up:\n{physics_process.communicate()[0]}")
        assert wait_for(lambda: len(got) == len(TOPICS), WAIT_S), f"got only {sorted(got)}"
        head = got["/camera/color/image_raw"]
        assert (head.width, head.height, head.encoding) == (160, 120, "rgb8")
        assert head.header.frame_id == "camera_color_optical_frame"
        assert got["/camera/aligned_depth_to_color/image_raw"].encoding == "16UC1"
        assert got["/scan"].header.frame_id == "laser" and len(got["/scan"].ranges) == 360
        assert "joint_lift" in got["/joint_states"].name

        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = ["joint_lift"]
        goal.trajectory.points = [_point(0.6, 2)]
        status, result = _run_goal(trajectory, goal)
        assert status == GoalStatus.STATUS_SUCCEEDED, result.error_string

        def lift() -> float:
            states = got["/joint_states"]
            return float(states.position[list(states.name).index("joint_lift")])

        assert wait_for(lambda: abs(lift() - 0.6) < 0.02, WAIT_S)

        status, picked = _run_goal(pick, PickObject.Goal(object_id="red_cup"))
        assert status == GoalStatus.STATUS_SUCCEEDED and picked.success, picked.message
        assert picked.held_object_id == "red_cup"

        into_table = NavigateToPose.Goal()
        into_table.pose.header.frame_id = "map"
        into_table.pose.pose.position.y = -1.5
        into_table.pose.pose.orientation.w = 1.0
        status, _ = _run_goal(navigate, into_table)
        assert status == GoalStatus.STATUS_ABORTED  # position mode: stretch_driver ignores navigation
        assert to_navigation.wait_for_service(timeout_sec=WAIT_S)
        done = to_navigation.call_async(Trigger.Request())
        assert wait_for(done.done, WAIT_S) and done.result().success
        status, result = _run_goal(navigate, into_table)
        assert status == GoalStatus.STATUS_ABORTED
        assert "stalled" in result.error_msg and "dining_table" in result.error_msg

        # Nav2's behaviour servers, as the Stretch config's spin and drive_forward call them.
        def yaw() -> float:
            q = got["/odom"].pose.pose.orientation
            return 2 * math.atan2(q.z, q.w)

        backup_goal = BackUp.Goal()
        backup_goal.target.x, backup_goal.speed = 0.2, 0.1
        status, result = _run_goal(backup, backup_goal)
        assert status == GoalStatus.STATUS_SUCCEEDED, result.error_msg
        before = yaw()
        status, result = _run_goal(spin, Spin.Goal(target_yaw=math.pi / 2))
        assert status == GoalStatus.STATUS_SUCCEEDED, result.error_msg
        assert wait_for(lambda: abs(_wrap(yaw() - before - math.pi / 2)) < 0.05, WAIT_S)
        drive_goal = DriveOnHeading.Goal()
        drive_goal.target.x, drive_goal.speed = 0.2, 0.15
        x0 = got["/odom"].pose.pose.position.x
        status, result = _run_goal(drive, drive_goal)
        assert status == GoalStatus.STATUS_SUCCEEDED, result.error_msg
        assert wait_for(lambda: abs(got["/odom"].pose.pose.position.x - x0 - 0.2) < 0.03, WAIT_S)
        to_position = node.create_client(Trigger, "/switch_to_position_mode")
        assert to_position.wait_for_service(timeout_sec=WAIT_S)
        done = to_position.call_async(Trigger.Request())
        assert wait_for(done.done, WAIT_S) and done.result().success
        status, result = _run_goal(spin, Spin.Goal(target_yaw=1.0))
        assert status == GoalStatus.STATUS_ABORTED and "navigation_mode" in result.error_msg
    finally:
        executor.shutdown(timeout_sec=5)
        node.destroy_node()


def _wrap(angle: float) -> float:
    return (angle + math.pi) % (2 * math.pi) - math.pi


def _point(position: float, seconds: int) -> Any:
    from trajectory_msgs.msg import JointTrajectoryPoint

    point = JointTrajectoryPoint()
    point.positions = [position]
    point.time_from_start.sec = seconds
    return point
