"""Real action and service servers for the ROS tool tests, run as a separate process.

    python test/support/action_servers.py BEHAVIOUR

serves, in the process's ROS domain:
- ``/fibonacci``  test_msgs/action/Fibonacci (feedback: the sequence so far)
- ``/nested``     test_msgs/action/NestedMessage (success flag: nested_field.bool_value)
- ``/basic``      test_msgs/srv/BasicTypes (success flag: bool_value, message: string_value)

BEHAVIOUR:
- succeed: goals succeed (Fibonacci of ``order``, with feedback per step); the service
  echoes the request with bool_value true and string_value "ok: <request string>";
- fail:    goals end SUCCEEDED but report failure (nested bool_value false; Fibonacci is
  aborted as it has no flag); the service answers bool_value false, "gripper jammed";
- abort:   goals are aborted;
- slow:    goals publish one feedback and then run until cancelled (up to 60 s); the
  service does not answer for 60 s;
- reject:  goals are rejected.

Prints one line per event (``goal``, ``cancel requested``, ``canceled``...) so a test
can check what the server saw.
"""

from __future__ import annotations

import sys
import threading

import rclpy
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from test_msgs.action import Fibonacci, NestedMessage
from test_msgs.srv import BasicTypes

BEHAVIOURS = ("succeed", "fail", "abort", "slow", "reject")
_SLOW_LIMIT_S = 60.0
_STEP_S = 0.02


def say(text: str) -> None:
    print(text, flush=True)


class TestServers(Node):
    def __init__(self, behaviour: str) -> None:
        super().__init__("test_action_servers")
        self.behaviour = behaviour
        self._stop = threading.Event()
        group = ReentrantCallbackGroup()
        common = {
            "callback_group": group,
            "goal_callback": self._on_goal,
            "cancel_callback": self._on_cancel,
        }
        self._fibonacci = ActionServer(self, Fibonacci, "/fibonacci", self._run_fibonacci, **common)
        self._nested = ActionServer(self, NestedMessage, "/nested", self._run_nested, **common)
        self._basic = self.create_service(BasicTypes, "/basic", self._on_basic, callback_group=group)

    def stop(self) -> None:
        self._stop.set()

    def _on_goal(self, _goal: object) -> GoalResponse:
        say(f"goal {'rejected' if self.behaviour == 'reject' else 'accepted'}")
        return GoalResponse.REJECT if self.behaviour == "reject" else GoalResponse.ACCEPT

    def _on_cancel(self, _goal_handle: object) -> CancelResponse:
        say("cancel requested")
        return CancelResponse.ACCEPT

    def _run_until_cancelled(self, goal_handle: object, result: object) -> object:
        # A long-running goal: ends only when a client cancels it (or at the limit).
        waited = 0.0
        while not goal_handle.is_cancel_requested and waited < _SLOW_LIMIT_S:  # type: ignore[attr-defined]
            if self._stop.wait(_STEP_S):
                break
            waited += _STEP_S
        if goal_handle.is_cancel_requested:  # type: ignore[attr-defined]
            goal_handle.canceled()  # type: ignore[attr-defined]
            say("canceled")
        else:
            goal_handle.abort()  # type: ignore[attr-defined]
            say("aborted (slow limit)")
        return result

    def _run_fibonacci(self, goal_handle: object) -> Fibonacci.Result:
        order = goal_handle.request.order  # type: ignore[attr-defined]
        result = Fibonacci.Result()
        sequence = [0, 1]
        feedback = Fibonacci.Feedback(sequence=sequence)
        goal_handle.publish_feedback(feedback)  # type: ignore[attr-defined]
        if self.behaviour == "slow":
            return self._run_until_cancelled(goal_handle, result)  # type: ignore[return-value]
        if self.behaviour in ("abort", "fail"):
            goal_handle.abort()  # type: ignore[attr-defined]
            say("aborted")
            return result
        for _ in range(1, order):
            sequence.append(sequence[-1] + sequence[-2])
            goal_handle.publish_feedback(Fibonacci.Feedback(sequence=sequence))  # type: ignore[attr-defined]
            self._stop.wait(_STEP_S)  # paced like a real server, so feedback precedes the result
        result.sequence = sequence[: order + 1]
        goal_handle.succeed()  # type: ignore[attr-defined]
        say("succeeded")
        return result

    def _run_nested(self, goal_handle: object) -> NestedMessage.Result:
        result = NestedMessage.Result()
        result.nested_field = goal_handle.request.nested_field  # type: ignore[attr-defined]
        if self.behaviour == "slow":
            return self._run_until_cancelled(goal_handle, result)  # type: ignore[return-value]
        if self.behaviour == "abort":
            goal_handle.abort()  # type: ignore[attr-defined]
            say("aborted")
            return result
        result.nested_field.bool_value = self.behaviour != "fail"
        goal_handle.succeed()  # type: ignore[attr-defined]
        say("succeeded")
        return result

    def _on_basic(self, request: BasicTypes.Request, response: BasicTypes.Response) -> BasicTypes.Response:
        say("call")
        if self.behaviour == "slow":
            self._stop.wait(_SLOW_LIMIT_S)
        for name in request.get_fields_and_field_types():
            setattr(response, name, getattr(request, name))
        if self.behaviour in ("fail", "abort"):
            response.bool_value = False
            response.string_value = "gripper jammed"
        else:
            response.bool_value = True
            response.string_value = f"ok: {request.string_value}"
        return response


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in BEHAVIOURS:
        print(f"usage: action_servers.py {{{'|'.join(BEHAVIOURS)}}}", file=sys.stderr)
        return 2
    rclpy.init()
    node = TestServers(argv[0])
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    say(f"serving ({argv[0]})")
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.stop()
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
