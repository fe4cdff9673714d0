"""The one client of a harness node's task API: ``harness-ros task``, the demo and the eval.

Shaped like nav2_simple_commander's ``BasicNavigator``: send a task, ask whether it is
done, read its result, cancel it, follow its events. The client owns one node in its
own rclpy Context and spins it in the calling thread while it waits (no executor thread
outlives the context, and a Ctrl-C reaches the caller as ``KeyboardInterrupt``).

What every user gets the same way:

- **A lost first instruction is sent again.** DDS matching is asymmetric: this side can
  see the node's subscription before the node has matched this publisher, and a
  volatile message sent then is lost. ``send_task`` publishes the instruction again
  until the node answers for the task's id (``task_started`` or ``task_rejected``). A
  duplicate of a task that already started is rejected by the node under a fresh id,
  which this client ignores.
- **Only the harness node's own publisher is believed** (``publisher_trust``): an event
  another participant publishes on ``~/events`` under the task's id is never recorded,
  never followed, never an outcome. The endpoint is pinned again for every task, so a
  harness node restarted between tasks (the eval does that) is followed, and several
  endpoints claiming the node's name raise ``AmbiguousPublisherError``. An event whose
  sender the graph cannot name yet is held, with every later one, until it can. Where
  this rclpy's message info has no publisher GID (Humble, Jazzy 7.1), events are
  believed by the graph alone, only while the node is the only publisher on ``~/events``
  (``describe_dropped`` says so).
- **Cancel is addressed** (``~/cancel_task`` with the task's id): it never stops a task
  another client started since.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from harness_ros.errors import HarnessError
from harness_ros.ros.compat import create_subscription_with_info
from harness_ros.ros.publisher_trust import NodePublisher, Verdict
from harness_ros.task_api import TaskResult, cancel_message, instruction_message

__all__ = ["TaskClient", "TaskResult"]

EventCallback = Callable[[dict[str, Any]], None]
Gone = Callable[[], "str | None"]
"""Why waiting is pointless (the node's process exited), or None to go on waiting."""

SEND_ATTEMPTS = 5
ANSWER_WAIT_S = 3.0
"""How long to wait for the node to start (or reject) the task before sending it again."""
_SPIN_S = 0.05


class TaskClient:
    """A client of the harness node ``harness_node``'s task API (one task at a time)."""

    def __init__(
        self,
        harness_node: str = "/harness",
        *,
        ros_args: list[str] | None = None,
        domain_id: int | None = None,
        name: str = "harness_task",
    ) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions
        from std_msgs.msg import String

        from harness_ros.ros.node import EVENTS_QOS

        self.harness_node = "/" + harness_node.strip("/")
        self._events_topic = f"{self.harness_node.rstrip('/')}/events"
        self._context = Context()
        # Python's own SIGINT handling, not rclpy's: rclpy's would shut the context down at
        # Ctrl-C, and cancelling the task (and the clean-up) would then fail with RCLError.
        rclpy.init(
            args=[name, *(ros_args or [])],
            context=self._context,
            domain_id=domain_id,
            signal_handler_options=SignalHandlerOptions.NO,
        )
        try:
            self.node = rclpy.create_node(f"{name}_{uuid.uuid4().hex[:6]}", context=self._context)
            self._executor = SingleThreadedExecutor(context=self._context)
            self._executor.add_node(self.node)
            base = self.harness_node.rstrip("/")
            self._instructions = self.node.create_publisher(String, f"{base}/instruction", 10)
            self._cancels = self.node.create_publisher(String, f"{base}/cancel_task", 10)
            create_subscription_with_info(self.node, String, self._events_topic, self._on_event, EVENTS_QOS)
        except BaseException:
            self._context.try_shutdown()
            raise
        self._string = String
        self._source = NodePublisher(self.node, self._events_topic, self.harness_node)
        self._task_id: str | None = None
        self._events: list[dict[str, Any]] = []
        self._held: list[tuple[float, dict[str, Any], Any]] = []
        """This task's events the graph could not judge yet (when received, event, info)."""
        self._started = False
        self._end: dict[str, Any] | None = None
        self._on_task_event: EventCallback | None = None

    # -------------------------------------------------------------- lifetime
    def close(self) -> None:
        self._executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        self._context.try_shutdown()

    def __enter__(self) -> TaskClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- waiting
    def wait_for(self, condition: Callable[[], bool], timeout_s: float, *, gone: Gone | None = None) -> bool:
        """Spin this client until ``condition()``; False after ``timeout_s``. Raises
        ``HarnessError`` with ``gone()``'s reason when that says the wait is pointless."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            reason = gone() if gone is not None else None
            if reason is not None:
                raise HarnessError(reason)
            if time.monotonic() > deadline:
                return False
            # A real wait: it returns as soon as a message or graph change is to be handled.
            self._spin_once()
        return True

    def _spin_once(self) -> None:
        self._executor.spin_once(timeout_sec=_SPIN_S)
        self._judge_held()
        self._source.raise_if_ambiguous()

    # -------------------------------------------------------------- the graph
    def count_publishers(self, topic: str) -> int:
        return self.node.count_publishers(topic)

    def node_on_graph(self) -> bool:
        """Whether any harness node endpoint of the task API is on the graph (an old one too)."""
        return (
            self._instructions.get_subscription_count() > 0
            or self._cancels.get_subscription_count() > 0
            or bool(self._source.claimants())
        )

    def is_connected(self) -> bool:
        """Whether the harness node takes instructions and cancels and its events publisher
        is pinned. Raises ``AmbiguousPublisherError`` when several endpoints claim its name."""
        return (
            self._instructions.get_subscription_count() > 0
            and self._cancels.get_subscription_count() > 0
            and self._source.resolve()
        )

    def wait_until_connected(self, timeout_s: float, *, gone: Gone | None = None) -> None:
        # A fresh pin: the node may have been restarted since the last task (a new endpoint).
        self._source = NodePublisher(self.node, self._events_topic, self.harness_node)
        if not self.wait_for(self.is_connected, timeout_s, gone=gone):
            if self._source.claimants() and self._source.unnamed():
                raise HarnessError(
                    f"the harness node {self.harness_node!r} is on the graph, but "
                    f"{self._source.unnamed_reason(timeout_s)}"
                )
            raise HarnessError(
                f"no active harness node at {self.harness_node!r} after {timeout_s:g} s "
                "(is it running and active, on the same ROS_DOMAIN_ID?)"
            )

    # -------------------------------------------------------------- events
    def _on_event(self, msg: Any, info: Any) -> None:
        if self._task_id is None:
            return
        try:
            event = json.loads(msg.data)
        except (ValueError, RecursionError):
            return
        if not isinstance(event, dict) or event.get("task_id") != self._task_id:
            return
        # Judged after the spin, in the order received: the graph may not name the
        # sender's node yet, and then this event waits with every later one.
        self._held.append((time.monotonic(), event, info))

    def _judge_held(self) -> None:
        """Follow the held events the graph can judge now, in order; stop at the first it
        cannot. Raises ``AmbiguousPublisherError`` as ``NodePublisher.judge`` does."""
        while self._held:
            received, event, info = self._held[0]
            verdict = self._source.judge(info, waited_s=time.monotonic() - received)
            if verdict is Verdict.UNDECIDED:
                return
            del self._held[0]
            if verdict is Verdict.TRUSTED:
                self._follow(event)
            # FOREIGN: not the harness node's own publisher: never an outcome, never followed

    def _follow(self, event: dict[str, Any]) -> None:
        if self._end is not None:
            return
        kind = event.get("type")
        if kind == "task_rejected" and self._started:
            return  # our task runs: a rejection under its id is about someone else's request
        self._events.append(event)
        if kind == "task_started":
            self._started = True
        elif kind == "done":
            self._end = dict(event.get("data") or {})
        elif kind == "task_rejected":
            self._end = {"status": "rejected", **(event.get("data") or {})}
        if self._on_task_event is not None:
            self._on_task_event(event)

    # -------------------------------------------------------------- one task
    @property
    def task_id(self) -> str | None:
        return self._task_id

    def send_task(
        self,
        instruction: str,
        *,
        task_id: str | None = None,
        new_session: bool = False,
        on_event: EventCallback | None = None,
        connect_timeout_s: float = 15.0,
        gone: Gone | None = None,
    ) -> bool:
        """Start a task; True once the node started it, False when it was rejected or
        never answered (``get_result`` says which). ``on_event`` sees each of its events."""
        self.wait_until_connected(connect_timeout_s, gone=gone)
        self._task_id = task_id or f"task-{uuid.uuid4().hex[:12]}"
        self._events, self._held, self._started, self._end = [], [], False, None
        self._on_task_event = on_event
        message = self._string(data=instruction_message(instruction, self._task_id, new_session=new_session))
        for _ in range(SEND_ATTEMPTS):
            self._instructions.publish(message)
            if self.wait_for(lambda: self._started or self._end is not None, ANSWER_WAIT_S, gone=gone):
                break
        return self._started

    def is_task_started(self) -> bool:
        return self._started

    def is_task_complete(self) -> bool:
        """Spin once; True when the task ended (``done``) or was rejected."""
        if self._end is None:
            self._spin_once()
        return self._end is not None

    def wait_until_complete(self, timeout_s: float, *, gone: Gone | None = None) -> bool:
        return self.wait_for(lambda: self._end is not None, timeout_s, gone=gone)

    def get_result(self) -> TaskResult:
        """The task's end so far: the ``done`` data, or ``{}`` while it has not ended."""
        return TaskResult(self._task_id or "", dict(self._end or {}), tuple(self._events))

    def cancel_task(self, reason: str, *, wait_s: float = 10.0, gone: Gone | None = None) -> bool:
        """Ask the node to cancel this task; True when its ``done`` came within ``wait_s``."""
        if self._task_id is None or self._end is not None:
            return self._end is not None
        self._cancels.publish(self._string(data=cancel_message(self._task_id, reason)))
        return self.wait_until_complete(wait_s, gone=gone)

    def run_task(
        self,
        instruction: str,
        *,
        timeout_s: float,
        new_session: bool = False,
        on_event: EventCallback | None = None,
        connect_timeout_s: float = 15.0,
        cancel_wait_s: float = 10.0,
        gone: Gone | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> TaskResult:
        """Send a task and follow it to its end; after ``timeout_s`` it is cancelled, and
        without a ``done`` within ``cancel_wait_s`` the result's status is ``timeout``."""
        self.send_task(
            instruction,
            new_session=new_session,
            on_event=on_event,
            connect_timeout_s=connect_timeout_s,
            gone=gone,
        )
        if not self.wait_until_complete(timeout_s, gone=gone):
            if warn is not None:
                warn(f"timed out after {timeout_s:g} s; cancelling the task")
            note = f"timed out after {timeout_s:g} s and cancelled"
            if self.cancel_task(
                f"the task client timed out after {timeout_s:g} s", wait_s=cancel_wait_s, gone=gone
            ):
                end = dict(self._end or {})
                end["reason"] = f"{note}; {end['reason']}" if end.get("reason") else note
            else:
                end = {"status": "timeout", "reason": note}
            self._end = end
        return self.get_result()

    def describe_dropped(self) -> str | None:
        """One line about events dropped because another publisher sent them, and about
        trust by the graph alone (no publisher GIDs: Humble, Jazzy 7.1), or None."""
        return self._source.describe_dropped()
