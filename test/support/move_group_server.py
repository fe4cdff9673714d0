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
"""

from __future__ import annotations

import json
import sys
import threading

import rclpy
from builtin_interfaces.msg import Time
from moveit_msgs.action import MoveGroup
from moveit_msgs.msg import MoveItErrorCodes
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rosgraph_msgs.msg import Clock

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
    def __init__(self, behaviour: str) -> None:
        super().__init__("move_group")
        self.behaviour = behaviour
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
        handle.succeed()  # type: ignore[attr-defined]
        return self._result(MoveItErrorCodes.SUCCESS)


def main() -> int:
    behaviour = sys.argv[1] if len(sys.argv) > 1 else "succeed"
    rclpy.init()
    node = MoveGroupServer(behaviour)
    executor = MultiThreadedExecutor()
    executor.add_node(node)
    say(f"codes {json.dumps(CODES)}")
    say("ready")
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
