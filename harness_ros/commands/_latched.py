"""A short-lived CLI node that reads one of the harness node's latched request topics.

``harness-ros approve`` (approval requests) and ``harness-ros answer`` (questions) both
collect the recent messages of a transient-local topic keyed by an id, then reply on
another topic and wait for the node's status update. This is the shared part.

Only messages from the harness node's own publisher endpoint are shown or believed
(``harness_ros.ros.publisher_trust``): a request or question another participant
publishes, even under a real id, is kept apart and never listed. Where this rclpy's
message info has no publisher GID (Humble, Jazzy 7.1), the messages are believed by the
graph alone: only while the harness node is the only publisher on the topic.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from harness_ros.errors import AmbiguousPublisherError, HarnessError
from harness_ros.ros.compat import gid_key, ros_init
from harness_ros.terminal import terminal_safe

__all__ = ["LatchedTopicClient", "latched_session"]

_Client = TypeVar("_Client", bound="LatchedTopicClient")


@contextmanager
def latched_session(ros_args: list[str], make: Callable[[Any], _Client]) -> Iterator[_Client]:
    """A client built by ``make(context)`` in its own rclpy context, closed and shut down after."""
    from rclpy.context import Context

    context = Context()
    with ros_init(context=context, args=["harness-ros", *ros_args]):
        client = make(context)
        try:
            yield client
        finally:
            client.close()


QUIET_S = 1.0
"""After the last latched message arrives (or the publisher appears), how long to wait for
more before answering: latched samples can arrive well after discovery on a loaded host."""

UNHEARD_WAIT_S = 5.0
"""How long a listing waits for a publisher on the graph that has sent nothing yet (its
latched samples on their way from a slow participant, or none at all)."""


class LatchedTopicClient:
    """Collects ``{<key>: ..., "status": ...}`` messages from ``<harness_node>/<topic>``."""

    def __init__(
        self, context: Any, harness_node: str, timeout_s: float, *, topic: str, key: str, name: str
    ) -> None:
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        from std_msgs.msg import String

        from harness_ros.ros.compat import create_subscription_with_info
        from harness_ros.ros.publisher_trust import NodePublisher
        from harness_ros.ros.qos import OPERATOR_LATCHED_QOS

        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + timeout_s
        self.harness = harness_node
        self.node = Node(f"{name}_{os.getpid()}", context=context)
        self._executor = SingleThreadedExecutor(context=context)
        self._executor.add_node(self.node)
        self._key = key
        self._by_publisher: dict[bytes | None, dict[str, dict[str, Any]]] = {}
        """Messages by publisher GID, then id: latched samples can arrive before the graph
        says whose endpoint sent them, so they are sorted once the harness node's is known."""
        self._by_graph: dict[str, dict[str, Any]] = {}
        """Messages by id whose info has no publisher GID (Humble, Jazzy 7.1): the harness
        node's only while the graph shows it alone on the topic (``NodePublisher.graph_verdict``)."""
        self._last_message = 0.0
        self.topic = f"{harness_node}/{topic}"
        self.source = NodePublisher(self.node, self.topic, harness_node)
        create_subscription_with_info(self.node, String, self.topic, self._on_message, OPERATOR_LATCHED_QOS)

    @property
    def messages(self) -> dict[str, dict[str, Any]]:
        """The harness node's own messages by id (empty until its endpoint is known)."""
        if self.source.pinned is None:
            return {}
        if self._by_graph:
            return self._by_graph if self._graph_trusted() else {}
        return self._by_publisher.get(self.source.pinned, {})

    def _graph_trusted(self) -> bool:
        from harness_ros.ros.publisher_trust import Verdict

        return self.source.graph_verdict() is Verdict.TRUSTED

    def foreign_count(self) -> int:
        """Messages from any other publisher on the topic."""
        foreign = sum(len(by_id) for gid, by_id in self._by_publisher.items() if gid != self.source.pinned)
        if self._by_graph and not self._graph_trusted():
            foreign += len(self._by_graph)
        return foreign

    def close(self) -> None:
        self._executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()

    def _on_message(self, msg: Any, info: Any) -> None:
        from harness_ros.ros.compat import message_info_carries_gid
        from harness_ros.ros.publisher_trust import publisher_gid

        try:
            body = json.loads(msg.data)
        except (ValueError, RecursionError):
            return
        if isinstance(body, dict) and isinstance(body.get(self._key), str):
            if message_info_carries_gid(info):
                self._by_publisher.setdefault(publisher_gid(info), {})[body[self._key]] = body
            else:  # Humble, Jazzy 7.1: judged by the graph
                self._by_graph[body[self._key]] = body
            self._last_message = time.monotonic()

    def spin_until(self, done: Callable[[], bool], deadline: float | None = None) -> bool:
        end = self.deadline if deadline is None else deadline
        while not done():
            if time.monotonic() >= end:
                return False
            self._executor.spin_once(timeout_sec=0.05)
        return True

    def collect(self, hint: str) -> None:
        """Wait for the node's latched messages (bounded by the timeout).

        Raises ``AmbiguousPublisherError`` when several publishers claim the node's name.
        """
        if not self.spin_until(self.source.resolve):
            if self.source.claimants() and self.source.unnamed():
                raise AmbiguousPublisherError(self.source.unnamed_reason(self.timeout_s))
            raise HarnessError(
                f"no harness node publishes {self.topic!r} within {self.timeout_s:g} s ({hint})"
            )
        start = time.monotonic()

        def settled() -> bool:
            now = time.monotonic()
            if now - max(start, self._last_message) <= QUIET_S:
                return False
            # Every publisher the graph shows has had its latched samples delivered, or
            # UNHEARD_WAIT_S passed: one without any (nothing pending) must not hold the
            # listing up, but a slow participant's samples must not be missed either.
            # An endpoint without a node name yet may be a second claimant: wait for its name.
            endpoints = self.node.get_publishers_info_by_topic(self.topic)
            visible = {gid_key(info.endpoint_gid) for info in endpoints}
            if self._by_graph:  # no GIDs (Humble, Jazzy 7.1): any message heard, from one publisher
                heard = len(visible) == 1 and not self.source.unnamed()
            else:
                heard = visible <= set(self._by_publisher) and not self.source.unnamed()
            return heard or now - start > UNHEARD_WAIT_S

        self.spin_until(settled)
        # the pin may have come before discovery found a second endpoint claiming the name
        self.source.raise_if_ambiguous(recheck=True)
        if self.source.unnamed():
            raise AmbiguousPublisherError(self.source.unnamed_reason(time.monotonic() - start))
        foreign = self.foreign_count()
        # without GIDs, another node's publisher on the topic leaves nothing trusted: say why
        self.source.raise_if_ambiguous()
        if foreign:
            print(
                f"warning: ignored {foreign} message(s) on {self.topic} that did not come from "
                f"{self.harness}'s own publisher",
                file=sys.stderr,
            )
        if self._by_graph:
            self.source.judged_by_graph += len(self._by_graph)
            print(f"note: {self.source.describe_dropped()}", file=sys.stderr)

    def pending(self) -> list[dict[str, Any]]:
        return [body for body in self.messages.values() if body.get("status") == "pending"]

    def print_pending(self, hint: str, what: str, describe: Callable[[dict[str, Any]], str]) -> int:
        """``--list``: one line per pending message."""
        self.collect(hint)
        pending = self.pending()
        if not pending:
            print(f"no pending {what} on {self.harness}")
        for body in pending:
            print(terminal_safe(describe(body)))
        return 0

    def reply(self, topic: str, text: str, key_value: str) -> str:
        """Publish ``text`` on ``<harness_node>/<topic>`` and wait for the status update of
        ``key_value``; returns its new status."""
        from std_msgs.msg import String

        from harness_ros.ros.qos import OPERATOR_REPLY_QOS

        publisher = self.node.create_publisher(String, f"{self.harness}/{topic}", OPERATOR_REPLY_QOS)
        answer_deadline = time.monotonic() + self.timeout_s
        if not self.spin_until(lambda: publisher.get_subscription_count() > 0, answer_deadline):
            raise HarnessError(f"{self.harness} does not listen on {topic} (timed out)")
        publisher.publish(String(data=text))
        confirmed = self.spin_until(
            lambda: self.messages[key_value].get("status") != "pending", time.monotonic() + self.timeout_s
        )
        if not confirmed:
            raise HarnessError(f"sent, but {self.harness} did not confirm it in time")
        return str(self.messages[key_value].get("status"))
