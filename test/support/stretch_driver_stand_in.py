"""A stand-in of Hello Robot's stretch_driver (stretch_ros2, stretch_core), as a separate
process, for the tests of tool prerequisites (mode switches) and of a gripper commanded
as a joint.

    python test/support/stretch_driver_stand_in.py BEHAVIOUR

serves what stretch_driver serves under the same names and types:
- ``/switch_to_navigation_mode``, ``/switch_to_position_mode``  std_srvs/srv/Trigger:
  each sets the mode and prints ``call <service> mode=<mode before>``;
- ``/stretch_controller/follow_joint_trajectory``  control_msgs/action/FollowJointTrajectory:
  prints ``goal <action> mode=<mode> <json>``; as upstream, a goal outside position mode
  is aborted (error code -100). A goal for ``gripper_aperture`` (metres) moves the
  gripper: it sends one feedback with the aperture reached; when the target is below the
  width of the object between the fingers (``OBJECT_M``), the fingers stop there and the
  goal is aborted as upstream aborts a goal point it cannot reach in time
  (PATH_TOLERANCE_VIOLATED, -4); else it succeeds;
- ``/navigate_to_pose``  nav2_msgs/action/NavigateToPose: prints ``goal ... mode=<mode>``
  and succeeds only in navigation mode (stretch_driver ignores cmd_vel otherwise).

The mode starts as ``position`` (stretch_driver's default ``mode`` parameter).

BEHAVIOUR ``modes``: as above; ``position_fails``: ``/switch_to_position_mode`` answers
success false (``runstopped``) and leaves the mode; ``object``: a 0.04 m object is
between the fingers (``empty``: nothing is).
"""

from __future__ import annotations

import json
import sys

import rclpy
from control_msgs.action import FollowJointTrajectory
from nav2_msgs.action import NavigateToPose
from rclpy.action import ActionServer
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from spinning_node import serve  # this folder is the script's sys.path[0]
from std_srvs.srv import Trigger

from harness_ros.ros.interfaces import message_to_jsonable

TRAJECTORY = "/stretch_controller/follow_joint_trajectory"
OBJECT_M = 0.04


def say(text: str) -> None:
    print(text, flush=True)


class StretchDriverStandIn(Node):
    def __init__(self, behaviour: str) -> None:
        super().__init__("stretch_driver")
        self.behaviour = behaviour
        self.mode = "position"
        group = MutuallyExclusiveCallbackGroup()  # one call at a time, in the order they came
        self.create_service(Trigger, "/switch_to_navigation_mode", self._navigation, callback_group=group)
        self.create_service(Trigger, "/switch_to_position_mode", self._position, callback_group=group)
        self._servers = [
            ActionServer(self, FollowJointTrajectory, TRAJECTORY, self._trajectory, callback_group=group),
            ActionServer(self, NavigateToPose, "/navigate_to_pose", self._navigate, callback_group=group),
        ]

    def _switch(self, service: str, mode: str, response: Trigger.Response) -> Trigger.Response:
        say(f"call {service} mode={self.mode}")
        if mode == "position" and self.behaviour == "position_fails":
            response.success = False
            response.message = "Cannot change mode while runstopped."
            return response
        self.mode = mode
        response.success = True
        response.message = f"Now in {mode} mode."
        return response

    def _navigation(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        return self._switch("/switch_to_navigation_mode", "navigation", response)

    def _position(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        return self._switch("/switch_to_position_mode", "position", response)

    def _trajectory(self, handle: object) -> FollowJointTrajectory.Result:
        goal = handle.request  # type: ignore[attr-defined]
        say(f"goal {TRAJECTORY} mode={self.mode} {json.dumps(message_to_jsonable(goal))}")
        result = FollowJointTrajectory.Result()
        if self.mode != "position":
            result.error_code = -100
            result.error_string = "Joint Trajectory Server only accepts goals in position or trajectory mode"
            handle.abort()  # type: ignore[attr-defined]
            return result
        names = list(goal.trajectory.joint_names)
        target = list(goal.trajectory.points[-1].positions)
        reached = list(target)
        blocked = False
        if "gripper_aperture" in names:
            index = names.index("gripper_aperture")
            if self.behaviour == "object" and target[index] < OBJECT_M:
                reached[index] = OBJECT_M
                blocked = True
        feedback = FollowJointTrajectory.Feedback()
        feedback.joint_names = names
        feedback.desired.positions = target
        feedback.actual.positions = reached
        feedback.error.positions = [t - r for t, r in zip(target, reached, strict=True)]
        handle.publish_feedback(feedback)  # type: ignore[attr-defined]
        if blocked:
            result.error_code = FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED
            result.error_string = "Time to execute the current goal point exceeded the default_goal_timeout"
            handle.abort()  # type: ignore[attr-defined]
            return result
        result.error_code = FollowJointTrajectory.Result.SUCCESSFUL
        result.error_string = "Achieved all target points."
        handle.succeed()  # type: ignore[attr-defined]
        return result

    def _navigate(self, handle: object) -> NavigateToPose.Result:
        say(f"goal /navigate_to_pose mode={self.mode}")
        if self.mode == "navigation":
            handle.succeed()  # type: ignore[attr-defined]
        else:
            handle.abort()  # type: ignore[attr-defined]
        return NavigateToPose.Result()


def main() -> int:
    behaviour = sys.argv[1] if len(sys.argv) > 1 else "modes"
    rclpy.init()
    return serve(StretchDriverStandIn(behaviour), MultiThreadedExecutor(), "ready")


if __name__ == "__main__":
    sys.exit(main())
