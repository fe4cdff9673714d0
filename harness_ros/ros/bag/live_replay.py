"""Publish a recorded bag back into a ROS graph at recorded timing.

Sensor topics go out as the recorded CDR bytes (a generic publisher: nothing is
decoded, so header stamps are exactly the recorded ones), ``/clock`` follows the
bag's timeline so a ``use_sim_time`` harness node sees consistent stamps, and the
recorded instructions are re-sent on the harness instruction topic at their place
in the timeline. Events are never re-published: the node under test makes its own.
A recorded instruction that is not a valid CDR ``std_msgs/String`` is skipped and
reported (``on_skip``), never sent; sensor messages go out as recorded, undecoded.

Bounded and interruptible: the loop ends with the bag, waits are on a stop event,
and ``stop()`` (or Ctrl-C in the CLI) ends it between two messages.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosbags.typesys import Stores, get_typestore
from rosgraph_msgs.msg import Clock

from harness_ros.errors import BagError, ConfigError
from harness_ros.ros.bag.reader import EVENTS_TYPE, BagContents, BagMessage, SkippedMessage, iter_messages
from harness_ros.ros.bag.recorder import import_message_type

if TYPE_CHECKING:
    from rclpy.node import Node
    from rclpy.publisher import Publisher

__all__ = ["LiveReplayer", "ReplayStats", "default_replay_topics"]

logger = logging.getLogger(__name__)

_NEVER_REPLAYED = ("/rosout", "/parameter_events", "/clock")

# Reliable so both best-effort and reliable subscribers match; a short history so
# a subscriber that matched a little late still receives the first frames.
_SENSOR_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=10,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)
_CLOCK_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE)


def default_replay_topics(bag: BagContents) -> list[str]:
    """Recorded sensor topics: everything except events, instructions and ROS internals."""
    return [
        name
        for name in bag.topics
        if name not in _NEVER_REPLAYED
        and not name.endswith(("/events", "/instruction", "/_service_event", "/events/write_split"))
    ]


def _instruction_topics(bag: BagContents) -> list[str]:
    return [
        t.name
        for t in bag.topics.values()
        if t.name.endswith("/instruction") and t.msgtype == "std_msgs/msg/String"
    ]


@dataclass
class ReplayStats:
    published: dict[str, int] = field(default_factory=dict)
    instructions: int = 0
    clock_ticks: int = 0
    stopped: bool = False
    skipped: list[SkippedMessage] = field(default_factory=list)


class LiveReplayer:
    """Publishes ``topics`` of ``bag`` on ``node`` at ``rate`` x recorded speed."""

    def __init__(
        self,
        node: Node,
        bag: BagContents,
        *,
        rate: float = 1.0,
        topics: Iterable[str] | None = None,
        instruction_topic: str | None = None,
        send_instructions: bool = True,
        publish_clock: bool = True,
        clock_period_s: float = 0.05,
    ) -> None:
        if not rate > 0:
            raise ConfigError(f"--rate must be > 0, got {rate!r}")
        self.bag = bag
        self.rate = rate
        self._node = node
        self._stop = threading.Event()
        self._clock_period_s = clock_period_s
        chosen = list(topics) if topics is not None else default_replay_topics(bag)
        if unknown := [t for t in chosen if t not in bag.topics]:
            raise BagError(f"{str(bag.path)!r}: no topic(s) {unknown!r}; topics: {bag.describe_topics()}")
        # message classes are generated at run time (no stubs): Any
        self._publishers: dict[str, Publisher[Any]] = {}
        self._instructions: dict[str, Publisher[Any]] = {}
        self._clock: Publisher[Any] | None = None
        problems: list[str] = []
        for topic in chosen:
            type_string = bag.topics[topic].msgtype
            try:
                msg_class = import_message_type(type_string)
            except ConfigError as err:
                problems.append(f"{topic}: {err}")
                continue
            self._publishers[topic] = node.create_publisher(msg_class, topic, _SENSOR_QOS)
        if problems:
            self.destroy()
            msg = (
                f"{str(bag.path)!r}: unknown message types, cannot publish: {'; '.join(problems)} "
                "(install them, or choose topics with --topics)"
            )
            raise BagError(msg)
        # Recorded instruction topic -> where the harness under test listens.
        if send_instructions:
            from std_msgs.msg import String

            for recorded in _instruction_topics(bag):
                target = instruction_topic or recorded
                self._instructions[recorded] = node.create_publisher(String, target, 10)
        self._clock = node.create_publisher(Clock, "/clock", _CLOCK_QOS) if publish_clock else None
        self._typestore = get_typestore(Stores.ROS2_KILTED)

    # ------------------------------------------------------------------ control
    def stop(self) -> None:
        self._stop.set()

    def wait_for_subscribers(self, timeout_s: float) -> list[str]:
        """Wait (bounded) until every replayed topic is matched; returns the unmatched ones."""
        publishers = {**self._publishers, **{f"instruction:{k}": v for k, v in self._instructions.items()}}
        deadline = time.monotonic() + timeout_s
        while True:
            missing = [t for t, pub in publishers.items() if pub.get_subscription_count() == 0]
            if not missing or time.monotonic() >= deadline or self._stop.wait(0.02):
                return missing

    # ------------------------------------------------------------------ replay
    def run(
        self,
        progress: Callable[[int], None] | None = None,
        on_skip: Callable[[SkippedMessage], None] | None = None,
    ) -> ReplayStats:
        """Publish the bag's timeline once; returns what was sent and what was skipped."""
        stats = ReplayStats(published=dict.fromkeys(self._publishers, 0))
        topics = [*self._publishers, *self._instructions]
        start_wall = time.monotonic()
        first_ns: int | None = None
        seen: dict[str, int] = {}
        for message in iter_messages(self.bag, topics):
            index = seen[message.topic] = seen.get(message.topic, -1) + 1
            if first_ns is None:
                first_ns = message.timestamp_ns
            if not self._wait_until(message.timestamp_ns, first_ns, start_wall, stats):
                stats.stopped = True
                break
            why = self._unusable_instruction(message)
            if why is not None:
                skipped = SkippedMessage(message.topic, index, message.timestamp_ns, why)
                stats.skipped.append(skipped)
                if on_skip is not None:
                    on_skip(skipped)
                else:
                    logger.warning("%s", skipped.describe())
            else:
                self._publish(message, stats)
            if progress is not None:
                progress(1)
        self._flush()
        return stats

    def _unusable_instruction(self, message: BagMessage) -> str | None:
        """Why a recorded instruction cannot be re-sent (None for sensor topics and good ones)."""
        if message.topic not in self._instructions:
            return None
        try:
            self._typestore.deserialize_cdr(message.data, EVENTS_TYPE)
        except Exception as err:  # noqa: BLE001 - recorded bytes are untrusted: any decode failure is corruption
            return f"not a CDR {EVENTS_TYPE} ({type(err).__name__}: {err})"
        return None

    def _wait_until(self, stamp_ns: int, first_ns: int, start_wall: float, stats: ReplayStats) -> bool:
        """Sleep until the message's scaled time, ticking /clock meanwhile; False if stopped."""
        target = start_wall + (stamp_ns - first_ns) / 1e9 / self.rate
        while True:
            remaining = target - time.monotonic()
            if remaining <= 0:
                return not self._stop.is_set()
            if self._stop.wait(min(remaining, self._clock_period_s)):
                return False
            elapsed_bag_ns = int((time.monotonic() - start_wall) * self.rate * 1e9)
            self._tick_clock(min(first_ns + elapsed_bag_ns, stamp_ns), stats)

    def _tick_clock(self, stamp_ns: int, stats: ReplayStats) -> None:
        if self._clock is None:
            return
        clock = Clock()
        clock.clock.sec, clock.clock.nanosec = divmod(stamp_ns, 1_000_000_000)
        self._clock.publish(clock)
        stats.clock_ticks += 1

    def _publish(self, message: BagMessage, stats: ReplayStats) -> None:
        self._tick_clock(message.timestamp_ns, stats)
        if message.topic in self._instructions:
            self._instructions[message.topic].publish(message.data)
            stats.instructions += 1
            logger.info("re-sent a recorded instruction from %s", message.topic)
            return
        self._publishers[message.topic].publish(message.data)
        stats.published[message.topic] += 1

    def _flush(self, timeout_s: float = 2.0) -> None:
        """Give reliable subscribers a bounded chance to acknowledge the last messages."""
        from rclpy.duration import Duration

        for publisher in [*self._publishers.values(), *self._instructions.values()]:
            publisher.wait_for_all_acked(Duration(seconds=timeout_s))

    def destroy(self) -> None:
        for publisher in [*self._publishers.values(), *self._instructions.values()]:
            self._node.destroy_publisher(publisher)
        if self._clock is not None:
            self._node.destroy_publisher(self._clock)
        self._publishers = {}
        self._instructions = {}
        self._clock = None
