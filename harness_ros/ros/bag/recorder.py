"""Record the harness node's sensor topics, events and instructions to a rosbag2.

Subscriptions are raw (serialized CDR, nothing decoded in callbacks); events come
from ``HarnessNode.event_listeners``. Callbacks only enqueue into a bounded queue;
one writer thread owns the ``rosbags`` Writer, so a slow disk drops messages (counted
and logged) instead of blocking the executor or the task thread. Timestamps come
from the node clock, so a ``use_sim_time`` node records sim time.

The result is a standard rosbag2 (metadata.yaml with type hashes) that
``ros2 bag info``, Foxglove and ``harness-ros replay`` open.
"""

from __future__ import annotations

import importlib
import logging
import os
import queue
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rclpy.qos import QoSProfile, qos_profile_sensor_data
from rclpy.serialization import serialize_message
from rosbags.rosbag2 import StoragePlugin, Writer, WriterError
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from std_msgs.msg import String

from harness_ros.errors import BagError, ConfigError
from harness_ros.events import HarnessEvent
from harness_ros.retention import mark_recording, prune_recordings
from harness_ros.ros.graph_check import expected_topics

if TYPE_CHECKING:
    from rclpy.node import Node
    from rosbags.interfaces import Connection
    from rosbags.typesys.store import Typestore

    from harness_ros.config import HarnessConfig

__all__ = ["IMAGE_TYPES", "BagRecorder", "attach_recorder", "import_message_type", "recorded_topics"]

logger = logging.getLogger(__name__)

IMAGE_TYPES = frozenset({"sensor_msgs/msg/Image", "sensor_msgs/msg/CompressedImage"})
"""Types throttled to ``image_max_hz`` (frames are large; the model sees a few per second)."""

_STORAGE = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
_STOP = object()


def import_message_type(type_string: str) -> Any:
    """``pkg/msg/Name`` -> the rclpy message class (ConfigError naming it when absent)."""
    parts = type_string.split("/")
    if len(parts) != 3 or not all(parts):
        raise ConfigError(f"message type must look like pkg/msg/Name, got {type_string!r}")
    package, kind, name = parts
    try:
        return getattr(importlib.import_module(f"{package}.{kind}"), name)
    except (ImportError, AttributeError):
        msg = f"message type {type_string!r} is not installed (pip install ros-{package.replace('_', '-')})"
        raise ConfigError(msg) from None


def _share_dirs() -> list[Path]:
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    return [Path(p) / "share" for p in [*prefixes, sys.prefix]]


def _register_type(typestore: Typestore, type_string: str, depth: int = 0) -> None:
    """Teach the typestore a type it lacks (custom robot messages) from its installed .msg."""
    if type_string in typestore.fielddefs:
        return
    package, kind, name = type_string.split("/")
    for share in _share_dirs():
        msg_file = share / package / kind / f"{name}.msg"
        if msg_file.is_file():
            types = get_types_from_msg(msg_file.read_text(encoding="utf-8"), type_string)
            for _, fields in types.values():
                for _, (_, spec) in fields:
                    for ref in _referenced_types(spec):
                        if depth < 20:
                            _register_type(typestore, ref, depth + 1)
            typestore.register(types)
            return
    raise ConfigError(f"cannot record message type {type_string!r}: no {name}.msg found under share/")


def _referenced_types(spec: Any) -> list[str]:
    """Type names a rosbags field spec refers to (nested, arrays, sequences)."""
    out: list[str] = []
    if isinstance(spec, tuple):
        for item in spec:
            out.extend(_referenced_types(item))
    elif isinstance(spec, str) and spec.count("/") == 2:
        out.append(spec)
    return out


def recorded_topics(config: HarnessConfig) -> dict[str, str]:
    """Sensor topic -> type string for the configured observations: the topics the
    start-up graph check expects."""
    return expected_topics(config)


class _Throttle:
    """Keeps at most ``max_hz`` messages per second by node-clock time."""

    def __init__(self, max_hz: float) -> None:
        self._period_ns = int(1e9 / max_hz)
        self._last_ns: int | None = None

    def admit(self, now_ns: int) -> bool:
        # A clock jump backwards (sim reset, bag loop) restarts the throttle.
        if self._last_ns is not None and 0 <= now_ns - self._last_ns < self._period_ns:
            return False
        self._last_ns = now_ns
        return True


class BagRecorder:
    """Records ``topics`` plus the node's ``~/events`` and ``~/instruction`` until ``close()``."""

    def __init__(
        self,
        node: Node,
        path: str | Path,
        *,
        topics: dict[str, str],
        storage: str = "mcap",
        image_max_hz: float = 2.0,
        throttle_hz: dict[str, float] | None = None,
        queue_size: int = 1000,
    ) -> None:
        if storage not in _STORAGE:
            raise ConfigError(f"record.storage must be one of {sorted(_STORAGE)!r}, got {storage!r}")
        self.path = Path(path)
        self.dropped = 0
        self.written = 0
        self._node = node
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self._closed = False
        self._close_lock = threading.Lock()
        base = node.get_fully_qualified_name().rstrip("/")
        self.events_topic = f"{base}/events"
        self.instruction_topic = f"{base}/instruction"
        typestore = get_typestore(Stores.ROS2_KILTED)
        all_topics = {**topics, self.events_topic: "std_msgs/msg/String"}
        all_topics[self.instruction_topic] = "std_msgs/msg/String"
        msg_classes = {topic: import_message_type(type_string) for topic, type_string in all_topics.items()}
        for type_string in set(all_topics.values()):
            _register_type(typestore, type_string)
        self._writer = Writer(self.path, version=9, storage_plugin=_STORAGE[storage])
        try:
            self._writer.open()
            mark_recording(self.path)  # retention (record.keep) prunes only marked recordings
            self._connections: dict[str, Connection] = {
                topic: self._writer.add_connection(topic, type_string, typestore=typestore)
                for topic, type_string in all_topics.items()
            }
        except WriterError as err:
            raise BagError(f"cannot record to {str(self.path)!r}: {err}") from None
        self._subscriptions = []
        for topic, type_string in all_topics.items():
            if topic == self.events_topic:
                continue
            rate = (throttle_hz or {}).get(topic, image_max_hz if type_string in IMAGE_TYPES else None)
            throttle = _Throttle(rate) if rate is not None else None
            qos: QoSProfile = qos_profile_sensor_data if topic in topics else QoSProfile(depth=10)
            self._subscriptions.append(
                node.create_subscription(
                    msg_classes[topic], topic, self._raw_callback(topic, throttle), qos, raw=True
                )
            )
        self._thread = threading.Thread(target=self._write_loop, name="bag-recorder", daemon=True)
        self._thread.start()
        # the HarnessNode's listener list: typing ``node`` as HarnessNode would make this module
        # and ros.node import each other (test/test_import_direction.py refuses that cycle)
        node.event_listeners.append(self._on_event)  # type: ignore[attr-defined]
        logger.info("recording %d topics to %s", len(all_topics), self.path)

    # ------------------------------------------------------------------ callbacks (never block)
    def _now_ns(self) -> int:
        return self._node.get_clock().now().nanoseconds

    def _enqueue(self, topic: str, data: bytes) -> None:
        if self._closed:
            return
        try:
            self._queue.put_nowait((topic, self._now_ns(), data))
        except queue.Full:
            self.dropped += 1
            if self.dropped in {1, 10, 100} or self.dropped % 1000 == 0:
                logger.warning("bag %s: writer is behind, %d messages dropped", self.path, self.dropped)

    def _raw_callback(self, topic: str, throttle: _Throttle | None) -> Callable[[bytes], None]:
        def callback(data: bytes) -> None:
            if throttle is not None and not throttle.admit(self._now_ns()):
                return
            self._enqueue(topic, data)

        return callback

    def _on_event(self, event: HarnessEvent) -> None:
        # The same JSON the node publishes on ~/events, as a std_msgs/String CDR.
        self._enqueue(self.events_topic, serialize_message(String(data=event.to_json())))

    # ------------------------------------------------------------------ writer thread
    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            topic, timestamp, data = item
            try:
                self._writer.write(self._connections[topic], timestamp, data)
                self.written += 1
            except (WriterError, OSError) as err:
                self.dropped += 1
                logger.error("bag %s: cannot write a %s message: %s", self.path, topic, err)

    # ------------------------------------------------------------------ lifecycle
    def close(self, timeout_s: float = 10.0) -> None:
        """Stop recording, flush what is queued and finalise metadata.yaml (idempotent)."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        listeners = self._node.event_listeners  # type: ignore[attr-defined]  # as in __init__
        if self._on_event in listeners:
            listeners.remove(self._on_event)
        for subscription in self._subscriptions:
            self._node.destroy_subscription(subscription)
        self._subscriptions = []
        self._queue.put(_STOP)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            logger.error("bag %s: writer did not finish within %.1f s", self.path, timeout_s)
        try:
            self._writer.close()
        except WriterError as err:
            raise BagError(f"cannot finalise {str(self.path)!r}: {err}") from None
        if self.dropped:
            logger.warning("bag %s: %d messages dropped", self.path, self.dropped)


def attach_recorder(node: Node, config: HarnessConfig) -> BagRecorder | None:
    """A recorder for ``config.record`` (None when ``record.path`` is unset).

    A path that already exists gets a time-stamped sibling folder, so a restarted node
    never refuses to start or overwrites an earlier recording.
    """
    record = config.record
    if record.path is None:
        return None
    path = record.path
    if path.exists():
        stamp = node.get_clock().now().nanoseconds // 1_000_000
        path = path.with_name(f"{path.name}_{stamp}")
    if record.keep:  # retention: the new recording plus the newest keep - 1 earlier ones
        prune_recordings(record.path, record.keep - 1)
    return BagRecorder(
        node,
        path,
        topics=recorded_topics(config),
        storage=record.storage,
        image_max_hz=record.image_max_hz,
        throttle_hz=record.throttle_hz,
    )
