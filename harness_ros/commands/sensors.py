"""``harness-ros sensors --config FILE [--window S] [--once [--out DIR]]``: what the sensors give.

For every topic the config names (camera views, their camera_info, depth, clearance
sources) it prints the type, the publishers with their QoS (reliability, durability,
history depth) and the rate measured over ``--window`` seconds by subscriptions like the
node's. A topic without a publisher comes with the graph's near-miss names; one whose
publishers are visible but deliver nothing comes with the likely causes and this
process's discovery variables (a pip venv has no ``ros2 topic list/hz``: this replaces
them). With ``--once`` it also writes what the model would get from one observation:
one JPEG per Model-Visible View, the depth preview, and ``observation.txt`` (the text of
the observation message: views, clearance, depth regions, notes) into ``--out``.

Exits 0 when every topic has a publisher of the right type and delivered a message in
the window; 1 otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rclpy.node import Node

    from harness_ros.config import HarnessConfig

__all__ = ["SensorTopic", "image_file_name", "rate_hint", "register", "sensor_topics"]

_CAMERA_INFO = "sensor_msgs/msg/CameraInfo"
_IMAGE = "sensor_msgs/msg/Image"
_COMPRESSED = "sensor_msgs/msg/CompressedImage"
_JOINT_STATE = "sensor_msgs/msg/JointState"
_UNUSED = " (unused: only depth.view's is read)"


@dataclass(frozen=True)
class SensorTopic:
    """One topic the config names: what it is for, its expected type and the QoS key."""

    role: str
    topic: str
    expected_type: str
    qos: str
    qos_key: str


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "sensors",
        help="list the configured sensor topics with publishers, QoS and measured rate; "
        "--once writes the images and depth summary the model would get",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", type=Path, required=True, metavar="FILE", help="harness config YAML")
    parser.add_argument(
        "--window", type=float, default=2.0, metavar="S", help="seconds the rate is measured over (default 2)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        metavar="S",
        help="wait this long for the publishers to be discovered (default 5)",
    )
    parser.add_argument(
        "--once", action="store_true", help="also write one observation as the model would get it"
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="folder for --once (default: sensors-YYYYmmdd-HHMMSS in the current folder)",
    )
    parser.set_defaults(handler=run_sensors)


def sensor_topics(config: HarnessConfig) -> list[SensorTopic]:
    """The topics the config names, in the order views, camera_info, depth, clearance."""
    from harness_ros.ros.graph_check import expected_topics

    types = expected_topics(config)
    obs = config.observations
    out: list[SensorTopic] = []
    for name, view in obs.views.items():
        key = f"observations.views.{name}.qos"
        out.append(SensorTopic(f"view {name}", view.topic, types[view.topic], view.qos, key))
        own = view.depth
        if view.camera_info:
            registers = obs.depth is not None and obs.depth.view == name and obs.depth.camera_info is not None
            registers = registers or (own is not None and own.camera_info is not None)
            role = f"view {name} camera_info" + ("" if registers else _UNUSED)
            out.append(SensorTopic(role, view.camera_info, _CAMERA_INFO, view.qos, key))
        if own is not None:
            key = f"observations.views.{name}.depth.qos"
            depth_type = _COMPRESSED if own.compressed else _IMAGE
            out.append(SensorTopic(f"view {name} depth", own.topic, depth_type, own.qos, key))
            if own.camera_info:
                role = f"view {name} depth camera_info" + ("" if view.camera_info else _UNUSED)
                out.append(SensorTopic(role, own.camera_info, _CAMERA_INFO, own.qos, key))
        for axis, joint in (("pan", view.pan), ("tilt", view.tilt)):
            if joint is not None:
                role = f"view {name} {axis} ({joint.joint})"
                out.append(
                    SensorTopic(role, joint.topic, _JOINT_STATE, "sensor_data", f"observations.views.{name}")
                )
    if obs.depth is not None:
        key = "observations.depth.qos"
        out.append(SensorTopic("depth", obs.depth.topic, types[obs.depth.topic], obs.depth.qos, key))
        if obs.depth.camera_info:
            out.append(
                SensorTopic("depth camera_info", obs.depth.camera_info, _CAMERA_INFO, obs.depth.qos, key)
            )
    if obs.clearance is not None:
        for source in obs.clearance.sensors():
            out.append(
                SensorTopic(
                    f"clearance {source.name}",
                    source.topic,
                    types[source.topic],
                    obs.clearance.qos,
                    "observations.clearance.qos",
                )
            )
    # a topic named twice (a camera_info shared by two views) is listed once, under a role
    # the node reads it for when it has one
    unique: dict[str, SensorTopic] = {}
    for entry in out:
        kept = unique.get(entry.topic)
        if kept is None or (_UNUSED in kept.role and _UNUSED not in entry.role):
            unique[entry.topic] = entry
    return list(unique.values())


def _policy(value: Any) -> str:
    name = getattr(value, "name", str(value))
    return name.lower()


def _publisher_lines(infos: list[Any]) -> list[str]:
    lines = []
    for info in infos:
        qos = info.qos_profile
        node = f"{info.node_namespace.rstrip('/')}/{info.node_name}"
        # DDS discovery carries reliability and durability; a remote publisher's history
        # and depth are not announced (rclpy reports them as unknown / 0)
        history = _policy(qos.history)
        queue = "history not announced" if history == "unknown" else f"{history} depth {qos.depth}"
        lines.append(
            f"    publisher {node}: {info.topic_type}, {_policy(qos.reliability)}, "
            f"{_policy(qos.durability)}, {queue}"
        )
    return lines


def _topic_problems(
    entry: SensorTopic,
    resolved: str,
    infos: list[Any],
    *,
    received: int,
    window_s: float,
    published: dict[str, list[str]],
) -> list[str]:
    from rclpy.qos import ReliabilityPolicy

    from harness_ros.ros.graph_check import near_misses, silent_topic_hint

    if not infos:
        # Near misses of the expected type first: an image topic is no near miss of a scan.
        same_type = [name for name, types in published.items() if entry.expected_type in types]
        close = near_misses(resolved, same_type) or near_misses(resolved, list(published))
        similar = f" (similar in the graph: {', '.join(repr(n) for n in close)})" if close else ""
        return [f"{entry.role}: no publisher on {resolved!r}{similar}"]
    types = sorted({info.topic_type for info in infos})
    if entry.expected_type not in types:
        return [f"{entry.role}: {resolved!r} has type {', '.join(types)}, expected {entry.expected_type}"]
    best_effort = [info for info in infos if info.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT]
    if entry.qos == "reliable" and best_effort:
        return [
            f"{entry.role}: {resolved!r} is published best effort: {entry.qos_key} is 'reliable', "
            "which never matches it, so nothing arrives (set it to 'sensor_data')"
        ]
    if received == 0:
        return [f"{entry.role}: {silent_topic_hint(resolved, len(infos), window_s)}"]
    return []


def _count_unused_camera_info(
    node: Node,
    topics: list[SensorTopic],
    resolved: dict[str, str],
    subscribed: set[str],
    counts: dict[str, int],
) -> None:
    """Count the listed camera_info topics the observation source does not subscribe to
    (only depth.view's registers the depth regions) in ``counts``, by resolved name."""
    from sensor_msgs.msg import CameraInfo

    from harness_ros.ros.qos import qos_for

    for entry in topics:
        name = resolved[entry.topic]
        if entry.expected_type != _CAMERA_INFO or name in subscribed:
            continue
        counts[name] = 0

        def count(_msg: Any, name: str = name) -> None:
            counts[name] += 1

        node.create_subscription(CameraInfo, name, count, qos_for(entry.qos))


def _nothing_visible(node: Node) -> str:
    """Why no configured topic has a publisher: other nodes visible (names) or none (discovery)."""
    from harness_ros.ros.graph_check import discovery_mismatch_hint, names_not_discovery_hint, other_nodes

    others = other_nodes(node)
    if others:
        return names_not_discovery_hint(others)
    return f"nothing is visible, not even another node: {discovery_mismatch_hint()}"


_UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


def image_file_name(name: str) -> str:
    """``<name>.jpg`` for an image named by the config (a view), safe as one file name in
    ``--out``: anything but letters, digits, '_' and '-' becomes '_' (no '/', no '..'), and
    the name is cut to 64 characters."""
    return f"{_UNSAFE_FILE_CHARS.sub('_', name)[:64] or 'view'}.jpg"


class _OnceWriter:
    """Writes one observation as the model gets it: the JPEGs and the text of the message.
    Made before the rate window, so its imports and the profile are loaded by then."""

    def __init__(self, config: HarnessConfig) -> None:
        from harness_ros.context.observation import observation_images, observation_message
        from harness_ros.profile import load_embodiment_profile_document_from_config

        self._images = observation_images
        self._message = observation_message
        profile = load_embodiment_profile_document_from_config(config)
        self._visible = None if profile is None else {view.casefold() for view in profile.model_visible_views}

    def write(self, source: Any, out_dir: Path) -> list[Path]:
        observation = source.observe()
        if self._visible is not None:
            views = tuple(view for view in observation.views if view.name.casefold() in self._visible)
            observation = dataclasses.replace(observation, views=views)
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for name, jpeg in self._images(observation):
            path = out_dir / image_file_name(name)
            path.write_bytes(jpeg)
            written.append(path)
        message = self._message(observation)
        text = next(part["text"] for part in message["content"] if part["type"] == "text")
        path = out_dir / "observation.txt"
        path.write_text(text + "\n", encoding="utf-8")
        written.append(path)
        return written


def _spin(executor: Any, node: Node, stop: threading.Event) -> None:
    from rclpy.executors import ExternalShutdownException

    while not stop.is_set() and node.context.ok():
        try:
            executor.spin_once(timeout_sec=0.05)
        except ExternalShutdownException:
            return


RATE_HINT_SHARE = 0.5
"""A topic received at less than this share of the rate its stamps show gets a hint."""


def rate_hint(received_hz: float, stamp_period_s: float | None) -> str | None:
    """A hint when messages arrive far below the publisher's rate: the shortest interval
    between consecutive received header stamps is the publisher's period (or a multiple),
    so receiving much less than its inverse means messages are lost on the way."""
    if stamp_period_s is None or stamp_period_s <= 0 or received_hz <= 0:
        return None
    published_hz = 1.0 / stamp_period_s
    if received_hz >= RATE_HINT_SHARE * published_hz:
        return None
    return (
        f"received {received_hz:.1f} Hz, but consecutive header stamps are {stamp_period_s:.3f} s apart: "
        f"the publisher sends about {published_hz:.0f} Hz and most messages are lost on the way (a "
        "best-effort topic over a busy or wireless link, large images without the large-data "
        "transport, or a subscriber that cannot keep up; see docs/troubleshooting.md)"
    )


def run_sensors(args: argparse.Namespace) -> int:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from harness_ros.config import load_config
    from harness_ros.errors import HarnessError
    from harness_ros.observation.geometry import Footprint
    from harness_ros.ros.observations import RosObservationSource

    config = load_config(args.config)
    if args.window <= 0 or args.timeout < 0:
        raise HarnessError("--window must be positive and --timeout not negative")
    topics = sensor_topics(config)
    if not topics:
        raise HarnessError(
            f"{args.config}: no sensor topic configured (observations.views, depth, clearance)"
        )
    from harness_ros.ros.compat import ros_init  # `with rclpy.init` needs Kilted

    with ros_init(args=["harness_sensors", *(getattr(args, "ros_args", None) or [])]):
        node: Node = rclpy.create_node("harness_sensors")
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        # subscribes exactly like the node (QoS, raw subscriptions), to every configured view
        source = RosObservationSource(
            node, config.observations, footprint=Footprint.from_config(config.safety), views=None
        )
        # Spun in its own thread the whole time, as the node's sensor executor is: messages
        # keep arriving while this thread queries the graph, prints and loads what --once
        # needs, so the observation's ages are measured as the node measures them (spinning
        # only during the window aged every reading by everything done after it: 0.5-1.3 s).
        stop = threading.Event()
        spinner = threading.Thread(target=_spin, args=(executor, node, stop), daemon=True)

        def wait_until(condition: Any, deadline: float) -> bool:
            while not condition():
                if time.monotonic() > deadline:
                    return False
                stop.wait(0.02)
            return True

        extra: dict[str, int] = {}  # a view's camera_info the node does not subscribe to: counted here
        try:
            resolved = {entry.topic: node.resolve_topic_name(entry.topic) for entry in topics}
            _count_unused_camera_info(node, topics, resolved, set(source.stats()), extra)
            spinner.start()
            once = _OnceWriter(config) if args.once else None  # its imports and profile: before the window
            wait_until(
                lambda: all(node.count_publishers(name) > 0 for name in resolved.values()),
                time.monotonic() + args.timeout,
            )
            before = {**source.stats(), **extra}
            start = time.monotonic()
            wait_until(lambda: False, start + args.window)
            window = time.monotonic() - start
            after = {**source.stats(), **extra}
            periods = source.stamp_periods()
            published = {
                name: list(types)
                for name, types in node.get_topic_names_and_types()
                if node.count_publishers(name) > 0
            }
            lines = [f"sensors of {args.config} (rates over {window:.1f} s):"]
            problems: list[str] = []
            for entry in topics:
                name = resolved[entry.topic]
                infos = list(node.get_publishers_info_by_topic(name))
                count = after.get(name, 0) - before.get(name, 0)
                total = after.get(name, 0)
                count_text = "publisher" if len(infos) == 1 else "publishers"
                lines.append(
                    f"{entry.role}: {name}  {entry.expected_type}  {len(infos)} {count_text}  "
                    f"{count / window:.1f} Hz ({total} received, subscribed {entry.qos})"
                )
                lines += _publisher_lines(infos)
                hint = rate_hint(count / window, periods.get(name))
                if hint:
                    lines.append(f"    hint: {hint}")
                problems += _topic_problems(
                    entry, name, infos, received=total, window_s=window, published=published
                )
            print("\n".join(lines))
            if problems and all(node.count_publishers(resolved[entry.topic]) == 0 for entry in topics):
                problems.append(_nothing_visible(node))
            if problems:
                print("problems:\n" + "\n".join(f"  {problem}" for problem in problems))
            if once is not None:
                out_dir = args.out or Path(time.strftime("sensors-%Y%m%d-%H%M%S"))
                for path in once.write(source, out_dir):
                    print(f"wrote {path}")
            sys.stdout.flush()
            return 1 if problems else 0
        except KeyboardInterrupt:
            return 130
        finally:
            stop.set()
            if spinner.is_alive():
                spinner.join(timeout=2.0)
            source.destroy()
            executor.shutdown(timeout_sec=1.0)
            node.destroy_node()
