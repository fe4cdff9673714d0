"""The console's client of one harness node: what it reads and writes over ROS.

A client like ``harness-ros task``, ``approve`` and ``answer``: one node in its own rclpy
Context, spun in a background thread. It reads

- ``~/events`` (the task's events), ``~/approval_requests``, ``~/questions`` and
  ``~/notices`` (latched), and every ``~/model_view/<view>/compressed`` (``sensor_msgs/CompressedImage``,
  found on the graph as the node creates them);

and writes only on the node's own task API topics: ``~/instruction``, ``~/revise``,
``~/cancel_task`` (addressed by task id), ``~/approval_decisions`` and ``~/answers``.

**An instruction is sent again** until the node answers it, as ``TaskClient`` does: DDS
drops a volatile message sent before both sides matched, so an instruction with no
``task_started`` or ``task_rejected`` under its id within ``ANSWER_WAIT_S`` is published
again (the same task id: the node starts it once), ``SEND_ATTEMPTS`` times in all; then
the operator is told. The web request does not wait for this.

**Only the harness node's own publisher is believed** (``publisher_trust``), per topic:
a message is held until the graph can say whose endpoint sent it, then shown if it was
the node's and dropped (with a line for the operator) if not. A node restarted under the
same name is pinned again once its old endpoint left the graph.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness_ros.console.contracts import ConsoleRefusal, ConsoleState
from harness_ros.errors import AmbiguousPublisherError
from harness_ros.ros.publisher_trust import NodePublisher, Verdict
from harness_ros.ros.task_client import ANSWER_WAIT_S, SEND_ATTEMPTS
from harness_ros.task_api import cancel_message, instruction_message

if TYPE_CHECKING:
    from rclpy.node import Node

__all__ = ["ConsoleRosClient"]

_SPIN_S = 0.05
_GRAPH_S = 0.5
_MAX_HELD = 500
MODEL_VIEW_TYPE = "sensor_msgs/msg/CompressedImage"
_ANSWERS = ("task_started", "task_rejected", "done")
"""Events under an instruction's task id that show the node has it."""


class _Unanswered:
    """An instruction sent and not yet answered by the node."""

    def __init__(self, message: Any, now: float) -> None:
        self.message = message
        self.sent = 1
        self.last = now


class _TrustedTopic:
    """Messages on one topic, passed on only once judged the harness node's own."""

    def __init__(
        self, node: Node, topic: str, harness_node: str, state: ConsoleState, take: Callable[[Any], None]
    ) -> None:
        self._node, self._topic, self._harness = node, topic, harness_node
        self._state = state
        self._take = take
        self.source = NodePublisher(node, topic, harness_node)
        self._held: list[tuple[float, Any, Any]] = []
        self._warned_foreign = False
        self._lock = threading.Lock()

    def hold(self, payload: Any, info: Any) -> None:
        with self._lock:
            if len(self._held) < _MAX_HELD:
                self._held.append((time.monotonic(), payload, info))

    def pump(self) -> None:
        with self._lock:
            held = list(self._held)
        if not held:
            return
        if self.source.pinned is None or self.source.pinned not in self.source.claimants():
            if self.source.pinned is not None and self.source.claimants():  # restarted: pin again
                self.source = NodePublisher(self._node, self._topic, self._harness)
            if not self.source.resolve():
                return
        done = 0
        try:
            for received, payload, info in held:
                verdict = self.source.judge(info, waited_s=time.monotonic() - received)
                if verdict is Verdict.UNDECIDED:
                    break
                done += 1
                if verdict is Verdict.TRUSTED:
                    self._take(payload)
                elif not self._warned_foreign:
                    self._warned_foreign = True
                    self._state.warn(
                        f"ignored a message on {self._topic} that did not come from "
                        f"{self._harness}'s own publisher"
                    )
        except AmbiguousPublisherError as err:
            done = len(held)
            self._state.warn(str(err))
        with self._lock:
            del self._held[:done]


class ConsoleRosClient:
    """The ROS side of the console for the node ``harness_node`` (a ``ConsoleBackend``)."""

    def __init__(
        self,
        state: ConsoleState,
        harness_node: str = "/harness",
        *,
        ros_args: list[str] | None = None,
        domain_id: int | None = None,
    ) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions
        from std_msgs.msg import String

        from harness_ros.ros.approval import DECISIONS_TOPIC, REQUESTS_TOPIC
        from harness_ros.ros.compat import create_subscription_with_info
        from harness_ros.ros.node import EVENTS_QOS
        from harness_ros.ros.operator import ANSWERS_TOPIC, NOTICES_TOPIC, QUESTIONS_TOPIC
        from harness_ros.ros.qos import OPERATOR_LATCHED_QOS, OPERATOR_REPLY_QOS

        self.state = state
        self.harness_node = "/" + harness_node.strip("/")
        self._base = self.harness_node.rstrip("/")
        self._context = Context()
        rclpy.init(
            args=["harness_console", *(ros_args or [])],
            context=self._context,
            domain_id=domain_id,
            signal_handler_options=SignalHandlerOptions.NO,
        )
        try:
            self.node = rclpy.create_node(f"harness_console_{uuid.uuid4().hex[:6]}", context=self._context)
            self._executor = SingleThreadedExecutor(context=self._context)
            self._executor.add_node(self.node)
            self._string = String
            base = self._base
            self._instructions = self.node.create_publisher(String, f"{base}/instruction", 10)
            self._revisions = self.node.create_publisher(String, f"{base}/revise", 10)
            self._cancels = self.node.create_publisher(String, f"{base}/cancel_task", 10)
            self._decisions = self.node.create_publisher(
                String, f"{base}/{DECISIONS_TOPIC}", OPERATOR_REPLY_QOS
            )
            self._answers = self.node.create_publisher(String, f"{base}/{ANSWERS_TOPIC}", OPERATOR_REPLY_QOS)
            self._topics: dict[str, _TrustedTopic] = {}
            for name, take, qos in (
                ("events", self._take_event, EVENTS_QOS),
                (REQUESTS_TOPIC, self._take_approval, OPERATOR_LATCHED_QOS),
                (QUESTIONS_TOPIC, self._take_question, OPERATOR_LATCHED_QOS),
                (NOTICES_TOPIC, self._take_notice, OPERATOR_LATCHED_QOS),
            ):
                topic = f"{base}/{name}"
                trusted = self._topics[topic] = _TrustedTopic(
                    self.node, topic, self.harness_node, state, take
                )
                create_subscription_with_info(self.node, String, topic, self._json_holder(trusted), qos)
        except BaseException:
            self._context.try_shutdown()
            raise
        self._unanswered: dict[str, _Unanswered] = {}
        self._unanswered_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name="console-ros", daemon=True)
        self._last_graph = 0.0

    # ------------------------------------------------------------------ lifetime
    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5.0)
        self._executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        self._context.try_shutdown()

    def _spin(self) -> None:
        while not self._stop.is_set() and self._context.ok():
            try:
                self._executor.spin_once(timeout_sec=_SPIN_S)
                for trusted in list(self._topics.values()):
                    trusted.pump()
                self._send_again()
                now = time.monotonic()
                if now - self._last_graph > _GRAPH_S:
                    self._last_graph = now
                    self._look_at_graph()
            except Exception as err:  # noqa: BLE001  the console keeps serving; the operator is told
                if self._stop.is_set() or not self._context.ok():
                    return
                self.state.warn(f"ROS client error: {type(err).__name__}: {err}")
                time.sleep(_SPIN_S)

    def _look_at_graph(self) -> None:
        """Whether the node listens (connected), and subscriptions for new model views."""
        self.state.set_connected(self._instructions.get_subscription_count() > 0)
        from harness_ros.ros.model_view import TRANSPORT

        prefix, suffix = f"{self._base}/model_view/", f"/{TRANSPORT}"
        for topic, types in self.node.get_topic_names_and_types():
            if (
                topic.startswith(prefix)
                and topic.endswith(suffix)
                and len(topic) > len(prefix) + len(suffix)
                and topic not in self._topics
                and MODEL_VIEW_TYPE in types
            ):
                self._subscribe_view(topic, topic[len(prefix) : -len(suffix)])

    def _subscribe_view(self, topic: str, view: str) -> None:
        from sensor_msgs.msg import CompressedImage

        from harness_ros.ros.compat import create_subscription_with_info
        from harness_ros.ros.model_view import MODEL_VIEW_QOS

        def take(msg: Any) -> None:
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            self.state.set_view(view, bytes(msg.data), stamp or None)

        trusted = self._topics[topic] = _TrustedTopic(self.node, topic, self.harness_node, self.state, take)
        create_subscription_with_info(self.node, CompressedImage, topic, trusted.hold, MODEL_VIEW_QOS)

    # ------------------------------------------------------------------ reading
    @staticmethod
    def _json_holder(trusted: _TrustedTopic) -> Callable[[Any, Any], None]:
        def on_message(msg: Any, info: Any) -> None:
            try:
                body = json.loads(msg.data)
            except (ValueError, RecursionError):
                return
            if isinstance(body, dict):
                trusted.hold(body, info)

        return on_message

    def _take_event(self, body: dict[str, Any]) -> None:
        if body.get("type") in _ANSWERS:
            with self._unanswered_lock:
                self._unanswered.pop(str(body.get("task_id")), None)
        self.state.add_event(body)

    def _send_again(self) -> None:
        """Publish each unanswered instruction again after ``ANSWER_WAIT_S`` (see the module doc)."""
        now = time.monotonic()
        resend: list[Any] = []
        given_up: list[str] = []
        with self._unanswered_lock:
            for task_id, sent in list(self._unanswered.items()):
                if sent.message is None or now - sent.last < ANSWER_WAIT_S:
                    continue
                if sent.sent >= SEND_ATTEMPTS:
                    del self._unanswered[task_id]
                    given_up.append(task_id)
                else:
                    sent.sent += 1
                    sent.last = now
                    resend.append(sent.message)
        for message in resend:
            self._instructions.publish(message)
        for task_id in given_up:
            self.state.warn(
                f"{self.harness_node} did not answer instruction {task_id} "
                f"(sent {SEND_ATTEMPTS} times, {ANSWER_WAIT_S:g} s apart): is it running and active?"
            )

    def _take_approval(self, body: dict[str, Any]) -> None:
        if isinstance(body.get("request_id"), str):
            self.state.set_approval(body)

    def _take_question(self, body: dict[str, Any]) -> None:
        if isinstance(body.get("question_id"), str):
            self.state.set_question(body)

    def _take_notice(self, body: dict[str, Any]) -> None:
        self.state.add_notice(body)

    # ------------------------------------------------------------------ writing (ConsoleBackend)
    def _publish(self, publisher: Any, text: str, what: str) -> Any:
        if publisher.get_subscription_count() == 0:
            raise ConsoleRefusal(
                f"{self.harness_node} does not listen on {what} (is it running and active?)", 503
            )
        message = self._string(data=text)
        publisher.publish(message)
        return message

    def send_instruction(self, text: str) -> str:
        task_id = f"task-{uuid.uuid4().hex[:12]}"
        with self._unanswered_lock:  # before publishing: the answer may come at once
            self._unanswered[task_id] = _Unanswered(None, time.monotonic())
        try:
            message = self._publish(self._instructions, instruction_message(text, task_id), "~/instruction")
        except BaseException:
            with self._unanswered_lock:
                self._unanswered.pop(task_id, None)
            raise
        with self._unanswered_lock:
            unanswered = self._unanswered.get(task_id)
            if unanswered is not None:
                unanswered.message = message
        return task_id

    def revise(self, task_id: str, text: str) -> None:
        self._publish(self._revisions, json.dumps({"task_id": task_id, "instruction": text}), "~/revise")

    def cancel(self, task_id: str, reason: str) -> None:
        self._publish(self._cancels, cancel_message(task_id, reason), "~/cancel_task")

    def decide(self, request_id: str, approved: bool) -> None:
        from harness_ros.ros.approval import decision_json

        self._publish(self._decisions, decision_json(request_id, approved), "~/approval_decisions")

    def answer(self, question_id: str, text: str) -> None:
        from harness_ros.ros.operator import answer_json

        self._publish(self._answers, answer_json(question_id, text), "~/answers")
