"""Observations from ROS topics: cameras, a depth image and base clearance.

Subscription callbacks only keep the newest message of each topic (and count
it) under one lock; all decoding, resizing and JPEG encoding happens when the
harness asks, in its own thread. Freshness comes from header stamps against the
node's clock, so ``use_sim_time`` and bag replay work; an old frame is labelled
stale with its age, never passed off as current.

Clearance sensors sit where ``observations.clearance.scan_mount`` / ``range_mounts`` /
``sources[i].mount`` put them; several sources are merged per direction (the nearest
obstacle wins, a stale source counts for nothing). When ``tf2_msgs`` is importable (a
ROS install; the pip wheels lack it), ``/tf_static`` from the base frame to each
reading's ``frame_id`` is used instead, and a mismatch with the config is logged once,
as soon as both are known.

With ``observations.raw_subscriptions`` the camera and depth subscriptions take the
serialized CDR bytes (rclpy ``raw=True``): a frame that is replaced before the next
decision is never turned into a Python message, and the newest one is deserialized
when the harness asks. Its header stamp is read from the first bytes of the CDR
payload, so freshness waits need no deserialization either.
"""

from __future__ import annotations

import itertools
import math
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rclpy.callback_groups import CallbackGroup
from rclpy.exceptions import NameValidationException
from rclpy.node import Node
from rclpy.subscription import Subscription
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, JointState, LaserScan, Range

from harness_ros.config import (
    ClearanceConfig,
    ClearanceSensor,
    DepthConfig,
    ObservationConfig,
    SensorMountConfig,
    ViewDepthConfig,
    ViewJointConfig,
    ViewTopic,
)
from harness_ros.errors import ConfigError
from harness_ros.observation.contracts import (
    CameraAim,
    Clearance,
    DepthSummary,
    Observation,
    ViewImage,
    sensor_text,
)
from harness_ros.observation.geometry import Footprint, SensorMount, inside_returns, resolve_mount
from harness_ros.observation.pipeline import (
    FrameDecodeError,
    Intrinsics,
    clearance_from_range,
    clearance_from_ranges,
    clearance_from_scan,
    decode_image,
    depth_to_metres,
    depth_to_millimetres,
    encode_jpeg,
    fit_to_budget,
    merge_clearance,
    registered_grid,
    render_depth_preview,
    rotate_image,
    rotate_regions,
    summarize_depth_mm,
)
from harness_ros.ros.qos import JOINT_STATES_DEPTH, qos_for
from harness_ros.startup import select_views

__all__ = ["RosObservationSource", "configured_mounts", "stamp_to_seconds"]

_LOG_THROTTLE_S = 5.0


def stamp_to_seconds(stamp: Any) -> float:
    """A builtin_interfaces/Time (anything with ``sec`` and ``nanosec``) as float seconds."""
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


_CDR_LITTLE_ENDIAN = {b"\x00\x01": "<", b"\x00\x07": "<", b"\x00\x00": ">", b"\x00\x06": ">"}
"""Encapsulation ids of plain CDR / XCDR2 (final types carry no delimiter header) -> byte order."""


def cdr_header_stamp(data: bytes) -> float | None:
    """The ``header.stamp`` of a serialized message that starts with a std_msgs/Header
    (Image, CompressedImage, CameraInfo, LaserScan, Range), or None when the encapsulation
    is not one this reads. Header.stamp is the first field: int32 sec, uint32 nanosec right
    after the 4-byte encapsulation header."""
    order = _CDR_LITTLE_ENDIAN.get(bytes(data[:2]))
    if order is None or len(data) < 12:
        return None
    sec, nanosec = struct.unpack_from(f"{order}iI", data, 4)
    return float(sec) + float(nanosec) * 1e-9


_STAMPS_KEPT = 64


@dataclass
class _Slot:
    """Newest message of one topic and how many arrived. Guarded by the source's lock.

    A raw slot (``msg_type`` set) keeps the serialized bytes in ``msg`` and their header
    stamp in ``raw_stamp``; ``_message()`` deserializes them when a decision reads them."""

    topic: str
    msg: Any = None
    count: int = 0
    msg_type: type | None = None
    raw_stamp: float | None = None
    stamps: deque[float] = field(default_factory=lambda: deque(maxlen=_STAMPS_KEPT))
    """Header stamps of the latest messages, in arrival order (``stamp_periods``)."""

    def stamp(self) -> float | None:
        if self.msg is None:
            return None
        if self.msg_type is not None:
            return self.raw_stamp
        return stamp_to_seconds(self.msg.header.stamp)


def _header_stamp(msg: Any) -> float | None:
    header = getattr(msg, "header", None)
    return None if header is None else stamp_to_seconds(header.stamp)


def _message(slot_msg: Any, msg_type: type | None) -> Any:
    """A slot's message as a ROS message (deserialized when the slot is raw)."""
    if slot_msg is None or msg_type is None:
        return slot_msg
    from rclpy.serialization import deserialize_message

    return deserialize_message(slot_msg, msg_type)


@dataclass(frozen=True)
class _Freshness:
    stamp: float
    age_s: float
    stale: bool


FUTURE_STAMP_TOLERANCE_S = 0.05
"""Clock skew between processes forgiven in a stamp from the future; beyond it the reading is stale."""


def _freshness(label: str, stamp: float, now: float, max_age_s: float, notes: list[str]) -> _Freshness:
    age = now - stamp
    if stamp == 0.0:
        notes.append(f"{label}: header stamp is zero (the driver does not stamp its messages)")
    if age < -FUTURE_STAMP_TOLERANCE_S:
        # A stamp from the future (sim time vs wall time, an unsynchronised clock) cannot be
        # trusted: clamping it to age 0 kept a reading "fresh" for up to twice max_age_s.
        notes.append(
            f"{label}: STALE, stamp is {-age:.2f} s ahead of the node clock "
            f"(more than the {FUTURE_STAMP_TOLERANCE_S:.2f} s tolerance; check use_sim_time and clock sync)"
        )
        return _Freshness(stamp, 0.0, stale=True)
    age = max(age, 0.0)  # skew within the tolerance: never a negative age
    return _Freshness(stamp, age, stale=age > max_age_s)


_NOTE_MAX_CHARS = 300
"""Longest error text from a decoder quoted in a note (it may quote what a sensor sent)."""


def _bounded(err: Exception) -> str:
    """An error's text as a note may quote it: printable ASCII, at most ``_NOTE_MAX_CHARS``."""
    return sensor_text(str(err), _NOTE_MAX_CHARS, quote=False)


def _joint_degrees(position_rad: float, joint: ViewJointConfig) -> float:
    """A pan/tilt joint's position as degrees to the left (pan) or up (tilt) of straight ahead."""
    degrees = math.degrees(position_rad) - joint.zero_deg
    return degrees if joint.positive in ("left", "up") else -degrees


def _mount(config: SensorMountConfig, default_yaw_rad: float) -> SensorMount:
    yaw = default_yaw_rad if config.yaw_rad is None else config.yaw_rad
    return SensorMount(config.x_m, config.y_m, yaw, upside_down=config.upside_down)


def _sensor_mount(sensor: ClearanceSensor) -> SensorMount:
    mount = _mount(sensor.mount, sensor.default_yaw_rad)
    # a scan's angle offset is the robot's forward in the scan frame: a further yaw of minus that
    yaw = mount.yaw_rad - sensor.angle_offset_rad
    return SensorMount(mount.x_m, mount.y_m, yaw, upside_down=mount.upside_down)


def configured_mounts(clearance: ClearanceConfig) -> dict[str, SensorMount]:
    """Each clearance sensor's mount from the config, by sensor name (``scan``, the four
    range directions, each source's name)."""
    return {sensor.name: _sensor_mount(sensor) for sensor in clearance.sensors()}


class RosObservationSource:
    """ObservationSource over ROS topics; one subscription per view, depth and clearance topic."""

    def __init__(
        self,
        node: Node,
        config: ObservationConfig,
        *,
        footprint: Footprint | None = None,
        footprint_radius_m: float | None = None,
        views: Sequence[str] | None = None,
        callback_group: CallbackGroup | None = None,
        subscriber: Node | None = None,
    ) -> None:
        """``footprint`` (``Footprint.from_config(config.safety)``), or a circle of
        ``footprint_radius_m``. ``subscriber``: the node that owns the subscriptions when it
        is not ``node`` (a ``SensorNode``'s, spun by its own executor); topic names are then
        resolved by ``node``, whose clock and logger the source uses either way."""
        if (footprint is None) == (footprint_radius_m is None):
            raise ValueError("give exactly one of footprint or footprint_radius_m")
        self._node = node
        self._subscriber = node if subscriber is None else subscriber
        self._config = config
        self._footprint = (
            footprint if footprint is not None else Footprint.circle(float(footprint_radius_m or 0))
        )
        clearance = config.clearance
        self._mounts = {} if clearance is None else configured_mounts(clearance)
        self._clearance_sensors = [] if clearance is None else clearance.sensors()
        self._started = time.monotonic()
        """When the subscriptions were made: "nothing received ... since start-up N s ago"."""
        self._tf_static: dict[str, Any] | None = None  # child frame -> TransformStamped
        self._tf_version = 0
        self._mount_cache: dict[tuple[str, str], SensorMount] = {}
        self._mount_reports: dict[tuple[str, str], str] = {}
        self._cond = threading.Condition()
        self._subscriptions: list[Subscription[Any]] = []
        self._callback_group = callback_group
        self._subscribed_at = time.monotonic()
        """When the subscriptions were made: the first-frame wait counts from here."""

        keys = select_views(config, views)  # the check `harness-ros check` runs too
        self._views: dict[str, ViewTopic] = {name: config.views[key] for name, key in keys.items()}
        self._view_slots: dict[str, _Slot] = {}
        self._depth_slot: _Slot | None = None
        self._info_slots: dict[str, _Slot] = {}  # "depth" and "view": camera_info for depth.view
        self._view_depth_slots: dict[str, _Slot] = {}  # view name -> its own depth camera's images
        self._view_depth_info: dict[str, dict[str, _Slot]] = {}  # view -> "depth"/"view" camera_info
        self._joint_slots: dict[str, _Slot] = {}  # JointState topic -> count (positions in _joints)
        self._joints: dict[tuple[str, str], tuple[float, float]] = {}
        """(configured topic, joint) -> (position, header stamp) of each pan/tilt joint."""
        self._clearance_slots: dict[str, _Slot] = {}  # sensor name -> its newest reading
        try:
            self._create_subscriptions(keys)
        except BaseException:
            self.destroy()  # no half-built source keeps subscriptions alive
            raise

    # ------------------------------------------------------------------ subscriptions
    def _create_subscriptions(self, view_keys: dict[str, str]) -> None:
        raw = self._config.raw_subscriptions
        for name, view in self._views.items():
            msg_type = CompressedImage if view.compressed else Image
            key = f"observations.views.{view_keys[name]}.topic"
            self._view_slots[name] = self._subscribe(msg_type, view.topic, view.qos, key, raw=raw)
            if view.depth is not None:
                self._subscribe_view_depth(name, view_keys[name], view, view.depth, raw=raw)
            for axis, joint in (("pan", view.pan), ("tilt", view.tilt)):
                if joint is not None and joint.topic not in self._joint_slots:
                    key = f"observations.views.{view_keys[name]}.{axis}.topic"
                    wanted = frozenset(
                        j.joint
                        for v in self._views.values()
                        for j in (v.pan, v.tilt)
                        if j is not None and j.topic == joint.topic
                    )
                    self._joint_slots[joint.topic] = self._subscribe_joints(joint.topic, key, wanted)
        depth = self._config.depth
        if depth is not None:
            depth_type = CompressedImage if depth.compressed else Image
            key = "observations.depth.topic"
            self._depth_slot = self._subscribe(depth_type, depth.topic, depth.qos, key, raw=raw)
            if depth.view is not None and depth.camera_info is not None:
                view = self._config.views[depth.view]
                assert view.camera_info is not None  # checked by the config
                key = "observations.depth.camera_info"
                self._info_slots["depth"] = self._subscribe(CameraInfo, depth.camera_info, depth.qos, key)
                key = f"observations.views.{depth.view}.camera_info"
                self._info_slots["view"] = self._subscribe(CameraInfo, view.camera_info, view.qos, key)
        clearance = self._config.clearance
        for sensor in self._clearance_sensors:
            assert clearance is not None
            msg_type = LaserScan if sensor.kind == "scan" else Range
            slot = self._subscribe(msg_type, sensor.topic, clearance.qos, sensor.topic_key)
            self._clearance_slots[sensor.name] = slot
        if clearance is not None:
            self._subscribe_tf_static()

    def _subscribe_view_depth(
        self, name: str, key: str, view: ViewTopic, depth: ViewDepthConfig, *, raw: bool
    ) -> None:
        depth_type = CompressedImage if depth.compressed else Image
        prefix = f"observations.views.{key}"
        self._view_depth_slots[name] = self._subscribe(
            depth_type, depth.topic, depth.qos, f"{prefix}.depth.topic", raw=raw
        )
        if view.camera_info is not None and depth.camera_info is not None:
            self._view_depth_info[name] = {
                "depth": self._subscribe(
                    CameraInfo, depth.camera_info, depth.qos, f"{prefix}.depth.camera_info"
                ),
                "view": self._subscribe(CameraInfo, view.camera_info, view.qos, f"{prefix}.camera_info"),
            }

    def _subscribe_joints(self, topic: str, key: str, wanted: frozenset[str]) -> _Slot:
        """A JointState subscription that keeps the newest position of each joint in ``wanted``
        (a robot may publish its joints in several messages on one topic)."""
        slot = _Slot(topic)
        try:
            subscription = self._subscriber.create_subscription(
                JointState,
                self._resolve(topic, key),
                lambda msg: self._store_joints(topic, slot, wanted, msg),
                qos_for("sensor_data", depth=JOINT_STATES_DEPTH),  # split messages: keep them all
                callback_group=self._group(),
            )
        except NameValidationException as err:
            raise ConfigError(f"{key}: invalid topic name {topic!r}: {err}") from None
        slot.topic = subscription.topic_name
        self._subscriptions.append(subscription)
        return slot

    def _store_joints(self, topic: str, slot: _Slot, wanted: frozenset[str], msg: Any) -> None:
        stamp = stamp_to_seconds(msg.header.stamp)
        found = [
            (str(name), float(position))
            for name, position in zip(msg.name, msg.position, strict=False)
            if name in wanted
        ]
        with self._cond:
            for name, position in found:
                self._joints[(topic, name)] = (position, stamp)
            slot.count += 1
            slot.stamps.append(stamp)
            slot.msg = msg if found else slot.msg
            self._cond.notify_all()

    def _subscribe_tf_static(self) -> None:
        try:
            from tf2_msgs.msg import TFMessage
        except ImportError:
            return  # the pip install has no tf2_msgs: the config's mounts are used
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

        # /tf_static is latched: every publisher's last message reaches a late subscriber
        qos = QoSProfile(
            depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
        )
        self._tf_static = {}

        def store(msg: Any) -> None:
            with self._cond:
                assert self._tf_static is not None
                for transform in msg.transforms:
                    self._tf_static[str(transform.child_frame_id).lstrip("/")] = transform
                self._tf_version += 1
                self._mount_cache.clear()
            self.check_mounts()

        topic = self._resolve("/tf_static", "observations.clearance")
        self._subscriptions.append(
            self._subscriber.create_subscription(TFMessage, topic, store, qos, callback_group=self._group())
        )

    def _group(self) -> CallbackGroup | None:
        """The callback group given for ``node``; a companion subscriber uses its default."""
        return self._callback_group if self._subscriber is self._node else None

    def _resolve(self, topic: str, key: str) -> str:
        """``topic`` as the main node resolves it (namespace, ``~``, remaps) when a companion
        node subscribes; unchanged otherwise (the subscribing node resolves it itself)."""
        if self._subscriber is self._node:
            return topic
        try:
            return self._node.resolve_topic_name(topic)
        except RuntimeError as err:  # rclpy's RCLError: not a valid topic name
            raise ConfigError(f"{key}: invalid topic name {topic!r}: {err}") from None

    def _subscribe(self, msg_type: type, topic: str, qos: str, key: str, *, raw: bool = False) -> _Slot:
        slot = _Slot(topic, msg_type=msg_type if raw else None)
        try:
            subscription = self._subscriber.create_subscription(
                msg_type,
                self._resolve(topic, key),
                self._storer(slot),
                qos_for(qos),
                callback_group=self._group(),
                raw=raw,
            )
        except NameValidationException as err:  # also InvalidTopicNameException
            raise ConfigError(f"{key}: invalid topic name {topic!r}: {err}") from None
        slot.topic = subscription.topic_name  # resolved: namespace and remapping applied
        self._subscriptions.append(subscription)
        return slot

    def _storer(self, slot: _Slot) -> Callable[[Any], None]:
        raw = slot.msg_type is not None

        def store(msg: Any) -> None:
            # keep only the newest message; decoding happens at decision time
            stamp = cdr_header_stamp(msg) if raw else None
            if raw and stamp is None:  # an encapsulation cdr_header_stamp does not read
                stamp = stamp_to_seconds(_message(msg, slot.msg_type).header.stamp)
            header_stamp = stamp if raw else _header_stamp(msg)
            with self._cond:
                slot.msg = msg
                slot.raw_stamp = stamp
                slot.count += 1
                if header_stamp is not None:
                    slot.stamps.append(header_stamp)
                first = slot.count == 1
                self._cond.notify_all()
            if first and any(slot is other for other in self._clearance_slots.values()):
                self.check_mounts()  # report a mount mismatch at start-up, not at the first move

        return store

    def _all_slots(self) -> list[_Slot]:
        slots = [*self._view_slots.values(), *self._clearance_slots.values(), *self._info_slots.values()]
        slots += [slot for slot in (self._depth_slot,) if slot is not None]
        slots += [*self._view_depth_slots.values(), *self._joint_slots.values()]
        slots += [slot for pair in self._view_depth_info.values() for slot in pair.values()]
        return slots

    def destroy(self) -> None:
        """Destroy the subscriptions (the node stays)."""
        for subscription in self._subscriptions:
            self._subscriber.destroy_subscription(subscription)
        self._subscriptions.clear()

    # ------------------------------------------------------------------ ObservationSource
    @property
    def view_names(self) -> tuple[str, ...]:
        return tuple(self._views)

    def now(self) -> float:
        return self._node.get_clock().now().nanoseconds * 1e-9

    def observe(self) -> Observation:
        # One snapshot of every slot, and the clock read after it: a reading that arrives
        # while the views are encoded is newer than ``now`` and would look like a stamp
        # from the future (stale) if it were read later.
        with self._cond:
            view_msgs = {name: (slot.msg, slot.msg_type) for name, slot in self._view_slots.items()}
            depth_msg = (
                None if self._depth_slot is None else (self._depth_slot.msg, self._depth_slot.msg_type)
            )
            view_depth_msgs = {
                name: (slot.msg, slot.msg_type) for name, slot in self._view_depth_slots.items()
            }
            joints = dict(self._joints)
            clearance_msgs = self._clearance_msgs()
        now = self.now()
        # raw slots are deserialized here, outside the lock the callbacks take
        view_msgs = {name: _message(*pair) for name, pair in view_msgs.items()}
        depth_msg = None if depth_msg is None else _message(*depth_msg)
        view_depth = {name: _message(*pair) for name, pair in view_depth_msgs.items()}
        notes: list[str] = []
        views = tuple(self._view_image(name, view_msgs[name], now, notes, joints) for name in self._views)
        depth = None if self._depth_slot is None else self._depth_summary(depth_msg, now, notes)
        view_depths = tuple(
            self._view_depth_summary(name, view_depth[name], now, notes) for name in self._view_depth_slots
        )
        clearance = self._clearance_at(now, notes, clearance_msgs)
        return Observation(
            time=now,
            views=views,
            depth=depth,
            clearance=clearance,
            notes=tuple(notes),
            view_depths=view_depths,
        )

    def observe_after(self, after: float, timeout_s: float) -> Observation:
        slots = [*self._view_slots.values(), *self._view_depth_slots.values()]
        if self._depth_slot is not None:
            slots.append(self._depth_slot)

        def all_newer() -> bool:
            return all((stamp := slot.stamp()) is not None and stamp > after for slot in slots)

        with self._cond:
            self._cond.wait_for(all_newer, timeout=max(0.0, timeout_s))
        return self.observe()

    def clearance(self) -> Clearance | None:
        with self._cond:
            msgs = self._clearance_msgs()
        return self._clearance_at(self.now(), [], msgs)

    def _clearance_msgs(self) -> dict[str, Any]:
        """The newest message of each clearance sensor; call with ``self._cond`` held."""
        return {name: slot.msg for name, slot in self._clearance_slots.items()}

    def wait_for_first_frames(self, timeout_s: float) -> bool:
        """Block until every view and depth topic delivered a first frame and every pan/tilt
        joint a first position, at most until ``timeout_s`` after the subscriptions were made
        (a task long after start-up does not wait again for a camera that never started);
        False when one is still missing."""
        slots = [*self._view_slots.values(), *([self._depth_slot] if self._depth_slot is not None else [])]
        slots += self._view_depth_slots.values()
        joints = [
            (joint.topic, joint.joint)
            for view in self._views.values()
            for joint in (view.pan, view.tilt)
            if joint is not None
        ]
        remaining = self._subscribed_at + timeout_s - time.monotonic()
        with self._cond:
            return self._cond.wait_for(
                lambda: all(slot.count > 0 for slot in slots) and all(key in self._joints for key in joints),
                timeout=max(0.0, remaining),
            )

    # ------------------------------------------------------------------ extras
    def wait_for_messages(self, timeout_s: float, topics: Sequence[str] | None = None) -> bool:
        """Block until every subscribed topic (or each of the resolved ``topics``) delivered at
        least one message; False at the deadline."""
        slots = [slot for slot in self._all_slots() if topics is None or slot.topic in topics]
        with self._cond:
            return self._cond.wait_for(
                lambda: all(slot.count > 0 for slot in slots), timeout=max(0.0, timeout_s)
            )

    def check_mounts(self) -> list[str]:
        """Compare the configured mounts with the readings' frames (and /tf_static when
        available); each mismatch is logged once. Returns every mismatch found so far."""
        with self._cond:
            sensors = [(name, slot.msg) for name, slot in self._clearance_slots.items()]
        for sensor, msg in sensors:
            if msg is not None:
                self._mount_of(sensor, str(msg.header.frame_id))
        with self._cond:
            return list(self._mount_reports.values())

    def _mount_of(self, sensor: str, frame_id: str) -> SensorMount:
        """The mount ``sensor``'s reading in ``frame_id`` is placed with (see ``resolve_mount``);
        a mismatch between the frames and the config is logged once."""
        clearance = self._config.clearance
        assert clearance is not None
        frame = frame_id.lstrip("/")
        with self._cond:
            cached = self._mount_cache.get((sensor, frame))
            if cached is not None:
                return cached
            transforms = None if self._tf_static is None else list(self._tf_static.values())
            version = self._tf_version
        check = resolve_mount(
            self._mounts[sensor], frame_id=frame, base_frame=clearance.base_frame, transforms=transforms
        )
        if check.mismatch:
            assert check.found is not None
            key = next(s.mount_key for s in self._clearance_sensors if s.name == sensor)
            used = "using /tf_static" if check.mount is check.found else "using the config"
            text = (
                f"clearance: the {sensor} sensor is at {check.found.describe()} according to "
                f"{check.source}, but {key} places it at "
                f"{check.configured.describe()}; {used}"
            )
            with self._cond:
                report = self._mount_reports.get((sensor, frame)) != text
                self._mount_reports[(sensor, frame)] = text
            if report:
                self._node.get_logger().warning(text)
        with self._cond:
            if check.final and version == self._tf_version:
                self._mount_cache[(sensor, frame)] = check.mount  # cleared when /tf_static changes
        return check.mount

    def inside_footprint(self) -> list[tuple[tuple[str, ...], str]]:
        """Per clearance sensor whose newest reading has returns that end inside the footprint:
        the directions they make read 0 m, and a sentence saying how many and where."""
        with self._cond:
            msgs = self._clearance_msgs()
        found: list[tuple[tuple[str, ...], str]] = []
        for sensor in self._clearance_sensors:
            msg = msgs[sensor.name]
            if msg is None:
                continue
            mount = self._mount_of(sensor.name, str(msg.header.frame_id))
            if sensor.kind == "scan":
                values = np.asarray(msg.ranges, dtype=np.float64)
                angles = mount.base_angle(msg.angle_min + msg.angle_increment * np.arange(values.size))
                low, high = float(msg.range_min), float(msg.range_max)
            else:
                values = np.array([float(msg.range)])
                angles = np.array([mount.base_angle(0.0)])
                low, high = float(msg.min_range), float(msg.max_range)
            with np.errstate(invalid="ignore"):
                usable = np.isfinite(values) & (values >= low) & (values <= high)
            distance = np.where(usable, values, np.where(values == -np.inf, 1e-6, np.nan))
            inside = inside_returns(
                self._footprint, origin_x=mount.x_m, origin_y=mount.y_m, angle=angles, distance=distance
            )
            if inside is None:
                continue
            what = "reading ends" if inside.count == 1 else "readings end"
            span = f"{inside.nearest_m:.2f}" + (
                "" if inside.farthest_m - inside.nearest_m < 0.005 else f"-{inside.farthest_m:.2f}"
            )
            topic = self._clearance_slots[sensor.name].topic
            text = (
                f"{inside.count} {what} inside the footprint on {topic!r}, "
                f"{span} m from the base centre: {', '.join(inside.directions)} read 0.00 m (the robot's "
                "own body seen by the sensor, such as a mast, or something touching the base)"
            )
            found.append((inside.directions, text))
        return found

    def stamp_periods(self) -> dict[str, float | None]:
        """Per resolved topic, the publisher's period as the header stamps show it, or None with
        fewer than three messages: the lower quartile of the intervals between the stamps of
        messages received one after the other (equal stamps, under 1 ms apart, say nothing).
        A timer's late tick and the quick one after it do not move a quartile; when messages
        are lost, those that still arrive in a row keep it near the period."""
        with self._cond:
            stamps = {slot.topic: list(slot.stamps) for slot in self._all_slots()}
        periods: dict[str, float | None] = {}
        for topic, values in stamps.items():
            gaps = sorted(b - a for a, b in itertools.pairwise(values) if b - a >= 1e-3)
            periods[topic] = gaps[len(gaps) // 4] if len(values) >= 3 and gaps else None
        return periods

    def stats(self) -> dict[str, int]:
        """Messages received per resolved topic name (for benchmarks and diagnostics)."""
        with self._cond:
            return {slot.topic: slot.count for slot in self._all_slots()}

    # ------------------------------------------------------------------ building
    def _warn(self, text: str) -> None:
        self._node.get_logger().warning(text, throttle_duration_sec=_LOG_THROTTLE_S)

    def _view_image(
        self,
        name: str,
        msg: Any,
        now: float,
        notes: list[str],
        joints: dict[tuple[str, str], tuple[float, float]],
    ) -> ViewImage:
        view = self._views[name]
        aim = self._aim(name, view, now, joints)
        if msg is None:
            since = time.monotonic() - self._subscribed_at
            notes.append(
                f"{name}: not started: no frame received on {self._view_slots[name].topic!r} "
                f"in the {since:.1f} s since the harness subscribed"
            )
            return ViewImage(name, b"", 0, 0, stamp=None, age_s=None, stale=True, missing=True, aim=aim)
        fresh = _freshness(name, stamp_to_seconds(msg.header.stamp), now, view.max_age_s, notes)
        try:
            # turned upright first: the pixel budget applies to the picture the model sees
            upright = rotate_image(decode_image(msg, max_pixels=self._config.max_decode_pixels), view.rotate)
            image = fit_to_budget(upright, view.pixel_budget)
            jpeg = encode_jpeg(image, self._config.jpeg_quality)
        except FrameDecodeError as err:
            text = f"{name}: frame on {self._view_slots[name].topic!r} unusable: {_bounded(err)}"
            notes.append(text)
            self._warn(text)
            return ViewImage(name, b"", 0, 0, fresh.stamp, fresh.age_s, stale=True, missing=True, aim=aim)
        height, width = image.shape[:2]
        return ViewImage(name, jpeg, width, height, fresh.stamp, fresh.age_s, fresh.stale, aim=aim)

    def _aim(
        self, name: str, view: ViewTopic, now: float, joints: dict[tuple[str, str], tuple[float, float]]
    ) -> CameraAim | None:
        """Where the view's camera looks, from its pan and tilt joints (None: neither is configured)."""
        if view.pan is None and view.tilt is None:
            return None
        angles: dict[str, float | None] = {}
        problems: list[str] = []
        ages: list[float] = []
        stale = False
        for axis, joint in (("pan", view.pan), ("tilt", view.tilt)):
            if joint is None:
                angles[axis] = None
                continue
            reading = joints.get((joint.topic, joint.joint))
            if reading is None:
                angles[axis] = None
                topic = self._joint_slots[joint.topic].topic
                problems.append(f"{axis} unknown (no {joint.joint!r} on {topic!r} yet)")
                continue
            position, stamp = reading
            angles[axis] = _joint_degrees(position, joint)
            fresh = _freshness(f"{name} {axis}", stamp, now, view.max_age_s, [])
            ages.append(fresh.age_s)
            stale = stale or fresh.stale
        age = max(ages) if ages else None
        if stale and age is not None:
            problems.append(f"STALE, age {age:.2f} s")
        return CameraAim(
            angles["pan"],
            angles["tilt"],
            age_s=age,
            stale=stale or not ages,
            problem="; ".join(problems) or None,
        )

    def _depth_summary(self, msg: Any, now: float, notes: list[str]) -> DepthSummary:
        depth = self._config.depth
        assert depth is not None and self._depth_slot is not None
        rotate = 0 if depth.view is None else self._config.views[depth.view].rotate
        info = self._info_slots or None
        return self._summarise_depth(
            msg,
            now,
            notes,
            label="depth",
            depth=depth,
            slot=self._depth_slot,
            info=info,
            rotate=rotate,
            view=None,
        )

    def _view_depth_summary(self, name: str, msg: Any, now: float, notes: list[str]) -> DepthSummary:
        view = self._views[name]
        assert view.depth is not None
        slot, info = self._view_depth_slots[name], self._view_depth_info.get(name)
        return self._summarise_depth(
            msg,
            now,
            notes,
            label=f"{name} depth",
            depth=view.depth,
            slot=slot,
            info=info,
            rotate=view.rotate,
            view=name,
        )

    def _summarise_depth(
        self,
        msg: Any,
        now: float,
        notes: list[str],
        *,
        label: str,
        depth: DepthConfig | ViewDepthConfig,
        slot: _Slot,
        info: dict[str, _Slot] | None,
        rotate: int,
        view: str | None,
    ) -> DepthSummary:
        """The 3x3 summary of one depth image, registered to its view when both camera_infos are
        known, turned with its view (``rotate``) so that its regions are the upright view's."""
        if msg is None:
            since = time.monotonic() - self._subscribed_at
            notes.append(
                f"{label}: not started: no frame received on {slot.topic!r} "
                f"in the {since:.1f} s since the harness subscribed"
            )
            return DepthSummary(regions=(), stamp=None, age_s=None, stale=True, view=view)
        fresh = _freshness(label, stamp_to_seconds(msg.header.stamp), now, depth.max_age_s, notes)
        try:
            # whole millimetres: the summary is exact at its 1 mm precision and 3x faster
            millimetres = depth_to_millimetres(msg)
            grid = self._depth_grid(millimetres.shape, notes, label, info)
            regions = rotate_regions(summarize_depth_mm(millimetres, grid=grid), rotate)
            metres = rotate_image(depth_to_metres(msg), rotate) if depth.render_preview else None
        except FrameDecodeError as err:
            text = f"{label}: frame on {slot.topic!r} unusable: {_bounded(err)}"
            notes.append(text)
            self._warn(text)
            return DepthSummary(regions=(), stamp=fresh.stamp, age_s=fresh.age_s, stale=True, view=view)
        preview = b"" if metres is None else render_depth_preview(metres, quality=self._config.jpeg_quality)
        return DepthSummary(regions, fresh.stamp, fresh.age_s, fresh.stale, preview, view=view)

    def _depth_grid(
        self, shape: tuple[int, ...], notes: list[str], label: str, info: dict[str, _Slot] | None
    ) -> tuple[Any, Any] | None:
        """The view's 3x3 grid in depth pixels (``registered_grid``), or None (thirds of the
        depth image) with a note saying why."""
        if not info:
            return None
        with self._cond:
            depth_info, view_info = info["depth"].msg, info["view"].msg
        missing = [
            info[name].topic for name, msg in (("depth", depth_info), ("view", view_info)) if msg is None
        ]
        if missing:
            notes.append(f"{label}: no camera_info yet on {missing}: regions are thirds of the depth image")
            return None
        try:
            view_k, depth_k = Intrinsics.from_camera_info(view_info), Intrinsics.from_camera_info(depth_info)
        except ValueError as err:
            notes.append(f"{label}: {_bounded(err)}: regions are thirds of the depth image")
            return None
        if (depth_k.height, depth_k.width) != tuple(shape):
            notes.append(
                f"{label}: camera_info is {depth_k.width}x{depth_k.height} but the depth image is "
                f"{shape[1]}x{shape[0]}: regions are thirds of the depth image"
            )
            return None
        return registered_grid(view_k, depth_k)

    def _clearance_at(self, now: float, notes: list[str], msgs: dict[str, Any]) -> Clearance | None:
        """Clearance from ``msgs`` (a snapshot taken before ``now`` was read)."""
        clearance = self._config.clearance
        if clearance is None:
            return None
        since = time.monotonic() - self._started
        problems: list[str] = []  # sources that give nothing usable, for notes and the safety filter
        readings: list[tuple[str, dict[str, float | None], float]] = []  # (source, values, stamp)
        for sensor in self._clearance_sensors:
            if msgs[sensor.name] is None:
                topic = self._clearance_slots[sensor.name].topic
                problems.append(f"nothing received on {topic!r} (since start-up {since:.1f} s ago)")
        for sensor in self._clearance_sensors:
            msg = msgs[sensor.name]
            if msg is None or sensor.group is not None:
                continue
            mount = self._mount_of(sensor.name, str(msg.header.frame_id))
            if sensor.kind == "scan":
                values = clearance_from_scan(
                    msg.ranges,
                    msg.angle_min,
                    msg.angle_increment,
                    msg.range_min,
                    msg.range_max,
                    footprint=self._footprint,
                    mount=mount,
                    min_valid_fraction=clearance.min_valid_fraction,
                    min_valid_beams=clearance.min_valid_beams,
                )
            else:
                values = clearance_from_range(
                    msg,
                    footprint=self._footprint,
                    mount=mount,
                    min_valid_fraction=clearance.min_valid_fraction,
                )
            readings.append((sensor.name, values, stamp_to_seconds(msg.header.stamp)))
        grouped = [s for s in self._clearance_sensors if s.group is not None and msgs[s.name] is not None]
        if grouped:
            # the four range_topics are one source, as before several sources existed: the
            # oldest reading decides, one stale sensor makes the group stale
            present = {s.name: msgs[s.name] for s in grouped}
            mounts = {d: self._mount_of(d, str(msg.header.frame_id)) for d, msg in present.items()}
            values = clearance_from_ranges(
                present,
                footprint=self._footprint,
                mounts=mounts,
                min_valid_fraction=clearance.min_valid_fraction,
            )
            stamp = min(stamp_to_seconds(msg.header.stamp) for msg in present.values())
            readings.append(("range_topics", values, stamp))
        notes.extend(f"clearance: {problem}" for problem in problems)
        if not readings:
            return Clearance(
                None, None, None, None, stamp=None, age_s=None, stale=True, note="; ".join(problems)
            )
        single = len(readings) == 1 and len(problems) == 0
        checked = []
        for name, values, stamp in readings:
            label = "clearance" if single else f"clearance {name}"
            fresh = _freshness(label, stamp, now, clearance.max_age_s, notes)
            if fresh.stale and not single:
                problems.append(f"{name} is stale ({fresh.age_s:.2f} s old)")
                notes.append(f"{label}: STALE ({fresh.age_s:.2f} s old): its directions count as unknown")
            checked.append((values, fresh))
        usable = [(values, fresh) for values, fresh in checked if not fresh.stale]
        chosen = usable or checked  # all stale: shown, but the reading is stale
        merged = merge_clearance([values for values, _ in chosen])
        return Clearance(
            **merged,
            stamp=min(fresh.stamp for _, fresh in chosen),
            age_s=max(fresh.age_s for _, fresh in chosen),
            stale=not usable,
            note="; ".join(problems) or None,
        )
