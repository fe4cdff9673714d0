"""A fake MoveIt 2 move_group: the ``/move_action`` server (moveit_msgs/action/MoveGroup),
as a separate process, for test/test_moveit.py.

    python test/support/move_group_server.py BEHAVIOUR

Types from the moveit_msgs test stand-ins of the distribution the process imports
(test/support/ros_distros.py). It publishes ``/clock`` at 1000.25 s of sim time, prints
``ready``, then for each goal one line ``goal move_action <json>`` (the goal as
harness_ros.ros.interfaces.message_to_jsonable gives it) and one feedback (state
``PLANNING``).

BEHAVIOUR ``succeed``: every goal SUCCEEDS with error code SUCCESS (1) and planning time
0.25 s. ``codes``: the n-th goal is ABORTED with the n-th error code of the installed
MoveItErrorCodes (its constants other than SUCCESS and UNDEFINED, in ascending order;
``codes <list>`` is printed first) and, where the type has one (not Humble), the message
``code N``. ``hang``: goals never finish; a cancel request is accepted (``cancel
requested`` is printed) and the goal ends CANCELED with PREEMPTED.

``--pose-topic TOPIC``: also publish the end effector's pose (geometry_msgs/PoseStamped,
stamped on the system clock) at 20 Hz, as a robot's pose publisher does: first at a home
pose, then, from each goal on, at the goal's target (its first position constraint's
region centre and orientation constraint's orientation) before the goal finishes.
``--pose-offset M`` puts it M metres beyond the target along x (an arm that stopped short
while move_group reports success); ``--pose-frame FRAME`` stamps it in FRAME instead of
the goal's frame; ``--pose-stops`` stops publishing when a goal arrives (a pose publisher
that died: its last pose predates the move).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading

import rclpy
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped
from moveit_msgs.action import MoveGroup
from moveit_msgs.msg import MoveItErrorCodes
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from spinning_node import serve  # this folder is the script's sys.path[0]

from harness_ros.ros.distros import constants_of
from harness_ros.ros.interfaces import message_to_jsonable

SIM_TIME = Time(sec=1000, nanosec=250_000_000)
CODES = sorted(
    value
    for name, value in constants_of(MoveItErrorCodes).items()
    if isinstance(value, int) and name not in ("SUCCESS", "UNDEFINED")
)
HAS_MESSAGE = "message" in MoveItErrorCodes.get_fields_and_field_types()


def say(text: str) -> None:
    print(text, flush=True)


class MoveGroupServer(Node):
    def __init__(self, behaviour: str, pose: argparse.Namespace | None = None) -> None:
        super().__init__("move_group")
        self.behaviour = behaviour
        self._pose_options = pose
        self._pose = PoseStamped()
        self._pose.header.frame_id = "base_link"
        self._pose.pose.position.x, self._pose.pose.position.z = 0.3, 0.5
        self._publishing = True
        self._served = 0
        self._lock = threading.Lock()
        group = ReentrantCallbackGroup()
        self._server = ActionServer(
            self,
            MoveGroup,
            "/move_action",
            self._execute,
            cancel_callback=self._cancel,
            callback_group=group,
        )
        self._clock_pub = self.create_publisher(Clock, "/clock", 10)
        self.create_timer(0.05, lambda: self._clock_pub.publish(Clock(clock=SIM_TIME)), callback_group=group)
        if pose is not None and pose.pose_topic:
            self._pose_pub = self.create_publisher(PoseStamped, pose.pose_topic, 10)
            self.create_timer(0.05, self._publish_pose, callback_group=group)

    def _publish_pose(self) -> None:
        with self._lock:
            if not self._publishing:
                return
            self._pose.header.stamp = self.get_clock().now().to_msg()
            self._pose_pub.publish(self._pose)

    def _move_to(self, goal: MoveGroup.Goal) -> None:
        """The arm 'moves': the published pose becomes the goal's target (and offset)."""
        options = self._pose_options
        if options is None or not options.pose_topic:
            return
        with self._lock:
            if options.pose_stops:
                self._publishing = False
                return
            constraints = goal.request.goal_constraints[0]
            position = constraints.position_constraints[0]
            target = position.constraint_region.primitive_poses[0].position
            self._pose.header.frame_id = options.pose_frame or position.header.frame_id
            self._pose.pose.position.x = target.x + options.pose_offset
            self._pose.pose.position.y = target.y
            self._pose.pose.position.z = target.z
            if constraints.orientation_constraints:
                self._pose.pose.orientation = constraints.orientation_constraints[0].orientation
        self._publish_pose()

    def _cancel(self, handle: object) -> CancelResponse:
        say("cancel requested")
        return CancelResponse.ACCEPT

    def _result(self, code: int, message: str = "") -> MoveGroup.Result:
        result = MoveGroup.Result(planning_time=0.25)
        result.error_code.val = code
        if HAS_MESSAGE and message:
            result.error_code.message = message
        return result

    def _execute(self, handle: object) -> MoveGroup.Result:
        goal = handle.request  # type: ignore[attr-defined]
        say(f"goal move_action {json.dumps(message_to_jsonable(goal), sort_keys=True)}")
        handle.publish_feedback(MoveGroup.Feedback(state="PLANNING"))  # type: ignore[attr-defined]
        if self.behaviour == "hang":
            stop = threading.Event()
            while not handle.is_cancel_requested:  # type: ignore[attr-defined]
                stop.wait(0.02)
            handle.canceled()  # type: ignore[attr-defined]
            return self._result(MoveItErrorCodes.PREEMPTED)
        if self.behaviour == "codes":
            with self._lock:
                code = CODES[self._served % len(CODES)]
                self._served += 1
            handle.abort()  # type: ignore[attr-defined]
            return self._result(code, f"code {code}")
        self._move_to(goal)
        handle.succeed()  # type: ignore[attr-defined]
        return self._result(MoveItErrorCodes.SUCCESS)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("behaviour", nargs="?", default="succeed")
    parser.add_argument("--pose-topic")
    parser.add_argument("--pose-offset", type=float, default=0.0)
    parser.add_argument("--pose-frame")
    parser.add_argument("--pose-stops", action="store_true")
    options = parser.parse_args()
    rclpy.init()
    node = MoveGroupServer(options.behaviour, options)
    return serve(node, MultiThreadedExecutor(), f"codes {json.dumps(CODES)}", "ready")


if __name__ == "__main__":
    sys.exit(main())
