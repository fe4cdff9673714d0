"""The servers config/robot_nav2.yaml binds, as a separate process, for the preset tests.

    python test/support/preset_servers.py BEHAVIOUR

serves (types from the nav2_msgs / control_msgs test stand-ins of the distribution
whose stand-ins the process imports, test/support/ros_distros.py, and std_srvs):
- ``/navigate_to_pose``  nav2_msgs/action/NavigateToPose (one feedback, then the result)
- ``/drive_on_heading``, ``/backup``, ``/spin``  Nav2 behaviour actions
- ``/arm_controller/follow_joint_trajectory``  control_msgs/action/FollowJointTrajectory
- ``/gripper_controller/gripper_cmd``  control_msgs/action/GripperCommand on Humble and
  Jazzy (``$ROS_DISTRO``), else ParallelGripperCommand (Kilted removed the
  GripperActionController), as config/robot_nav2.yaml picks its gripper preset
- ``/arm_driver/reset_faults`` std_srvs/srv/Trigger, ``/arm_driver/enable_motors`` std_srvs/srv/SetBool
and publishes ``/clock`` at 1000.25 s of sim time, so a client with use_sim_time reads it.
Result fields the distribution's types lack (Humble's empty NavigateToPose result, its
behaviours' missing error codes) are simply not set.

BEHAVIOUR ``succeed``: every goal succeeds with error code 0; ``fail``: actions abort
with their type's error code (navigation: 208 no valid path; trajectories: -5 goal
tolerance violated; the gripper stalls short of its goal and aborts, as a controller
without allow_stalling does), services answer success false; ``recovered``: as
``succeed``, but navigation SUCCEEDS with a non-zero error code (703, a failed spin on
the way), as Nav2 from Kilted on reports a goal reached after a failed recovery.

Each goal or request is printed as one line ``goal <server> <json>`` (the message as
harness_ros.ros.interfaces.message_to_jsonable gives it), so a test can compare it.
"""

from __future__ import annotations

import json
import os
import sys

import rclpy
from builtin_interfaces.msg import Duration, Time
from control_msgs.action import FollowJointTrajectory, GripperCommand, ParallelGripperCommand
from nav2_msgs.action import BackUp, DriveOnHeading, NavigateToPose, Spin
from rclpy.action import ActionServer
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from spinning_node import serve  # this folder is the script's sys.path[0]
from std_srvs.srv import SetBool, Trigger

from harness_ros.ros.interfaces import message_to_jsonable

SIM_TIME = Time(sec=1000, nanosec=250_000_000)
PARALLEL_GRIPPER = os.environ.get("ROS_DISTRO", "") not in ("humble", "jazzy")


def result_of(action: type, **fields: object) -> object:
    """``action.Result`` with those of ``fields`` this distribution's type has."""
    known = action.Result.get_fields_and_field_types()  # type: ignore[attr-defined]
    return action.Result(**{k: v for k, v in fields.items() if k in known})  # type: ignore[attr-defined]


def say(text: str) -> None:
    print(text, flush=True)


class PresetServers(Node):
    def __init__(self, behaviour: str) -> None:
        super().__init__("preset_servers")
        self.fail = behaviour == "fail"
        self.recovered = behaviour == "recovered"
        group = ReentrantCallbackGroup()
        self._servers = [
            ActionServer(self, NavigateToPose, "/navigate_to_pose", self._navigate, callback_group=group),
            ActionServer(
                self, DriveOnHeading, "/drive_on_heading", self._behaviour(723), callback_group=group
            ),
            ActionServer(self, BackUp, "/backup", self._behaviour(714), callback_group=group),
            ActionServer(self, Spin, "/spin", self._behaviour(703), callback_group=group),
            ActionServer(
                self,
                FollowJointTrajectory,
                "/arm_controller/follow_joint_trajectory",
                self._trajectory,
                callback_group=group,
            ),
            ActionServer(
                self,
                ParallelGripperCommand if PARALLEL_GRIPPER else GripperCommand,
                "/gripper_controller/gripper_cmd",
                self._parallel_gripper if PARALLEL_GRIPPER else self._gripper,
                callback_group=group,
            ),
        ]
        self.create_service(Trigger, "/arm_driver/reset_faults", self._trigger, callback_group=group)
        self.create_service(SetBool, "/arm_driver/enable_motors", self._set_bool, callback_group=group)
        self._clock_pub = self.create_publisher(Clock, "/clock", 10)
        self.create_timer(0.05, lambda: self._clock_pub.publish(Clock(clock=SIM_TIME)), callback_group=group)

    def _log(self, server: str, request: object) -> None:
        say(f"goal {server} {json.dumps(message_to_jsonable(request), sort_keys=True)}")

    def _navigate(self, handle: object) -> NavigateToPose.Result:
        self._log("navigate_to_pose", handle.request)  # type: ignore[attr-defined]
        feedback = NavigateToPose.Feedback(
            distance_remaining=1.5,
            navigation_time=Duration(sec=2, nanosec=500_000_000),
            number_of_recoveries=1,
        )
        handle.publish_feedback(feedback)  # type: ignore[attr-defined]
        if self.fail:
            handle.abort()  # type: ignore[attr-defined]
            return result_of(NavigateToPose, error_code=208, error_msg="no path around the sofa")
        handle.succeed()  # type: ignore[attr-defined]
        if self.recovered:
            return result_of(NavigateToPose, error_code=703, error_msg="spin failed: collision ahead")
        return result_of(NavigateToPose, error_code=0)

    def _behaviour(self, fail_code: int) -> object:
        def run(handle: object) -> object:
            goal = handle.request  # type: ignore[attr-defined]
            action = {DriveOnHeading.Goal: DriveOnHeading, BackUp.Goal: BackUp, Spin.Goal: Spin}[type(goal)]
            self._log(action.__name__, goal)
            elapsed = Duration(sec=3, nanosec=0)
            if self.fail:
                handle.abort()  # type: ignore[attr-defined]
                return result_of(
                    action, total_elapsed_time=elapsed, error_code=fail_code, error_msg="obstacle in the way"
                )
            handle.succeed()  # type: ignore[attr-defined]
            return result_of(action, total_elapsed_time=elapsed)

        return run

    def _trajectory(self, handle: object) -> FollowJointTrajectory.Result:
        goal = handle.request  # type: ignore[attr-defined]
        self._log("follow_joint_trajectory", goal)
        if self.fail:
            handle.abort()  # type: ignore[attr-defined]
            return FollowJointTrajectory.Result(error_code=-5, error_string="wrist_1_joint off by 0.2 rad")
        handle.succeed()  # type: ignore[attr-defined]
        return FollowJointTrajectory.Result(error_code=0)

    def _gripper(self, handle: object) -> GripperCommand.Result:
        goal = handle.request  # type: ignore[attr-defined]
        self._log("gripper_cmd", goal)
        if self.fail:  # closed on an object: stalled, aborted (allow_stalling false)
            handle.abort()  # type: ignore[attr-defined]
            return GripperCommand.Result(position=0.031, effort=40.0, stalled=True, reached_goal=False)
        handle.succeed()  # type: ignore[attr-defined]
        return GripperCommand.Result(
            position=goal.command.position, effort=2.0, stalled=False, reached_goal=True
        )

    def _parallel_gripper(self, handle: object) -> ParallelGripperCommand.Result:
        goal = handle.request  # type: ignore[attr-defined]
        self._log("gripper_cmd", goal)
        result = ParallelGripperCommand.Result()
        if self.fail:  # closed on an object: stalled, aborted (allow_stalling false)
            result.state.position = [0.031]
            result.state.effort = [40.0]
            result.stalled = True
            handle.abort()  # type: ignore[attr-defined]
            return result
        result.state.position = list(goal.command.position)
        result.state.effort = [2.0]
        result.reached_goal = True
        handle.succeed()  # type: ignore[attr-defined]
        return result

    def _trigger(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self._log("reset_faults", request)
        response.success = not self.fail
        response.message = "driver refused: e-stop pressed" if self.fail else "faults cleared"
        return response

    def _set_bool(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        self._log("enable_motors", request)
        response.success = not self.fail
        response.message = "e-stop pressed" if self.fail else f"motors {'on' if request.data else 'off'}"
        return response


def main() -> int:
    behaviour = sys.argv[1] if len(sys.argv) > 1 else "succeed"
    rclpy.init()
    return serve(PresetServers(behaviour), MultiThreadedExecutor(), "ready")


if __name__ == "__main__":
    sys.exit(main())
