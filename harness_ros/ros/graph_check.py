"""Start-up check of the ROS graph: are the configured topics, actions and services there?

Graph queries read the node's discovery cache and need no spinning, so the check works
whether or not the node's executor runs yet. It polls until everything is present or
``timeout_s`` passes (discovery between processes takes up to a few seconds).

Existence is judged on the far end only: a topic needs a publisher (the node's own
subscriptions do not count), an action or service needs a server (clients do not count).
A topic configured ``qos: reliable`` also needs its publishers to be reliable: DDS never
matches a reliable subscription with a best-effort publisher, so nothing would arrive.

A missing name comes with the graph's near misses (``/scan`` for ``/scan_raw``). When
nothing configured is visible at all, the likeliest cause is that this process does not
discover the others (domain, discovery range or Fast DDS transports differ between the
processes), and the report says so with this process's values of those variables.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from rclpy._rclpy_pybind11 import NodeNameNonExistentError
from rclpy.action import get_action_server_names_and_types_by_node
from rclpy.qos import ReliabilityPolicy

from harness_ros.config import HarnessConfig

if TYPE_CHECKING:
    from rclpy.node import Node

__all__ = [
    "DISCOVERY_VARIABLES",
    "GraphReport",
    "QosMismatch",
    "TypeMismatch",
    "check_graph",
    "discovery_environment",
    "discovery_mismatch_hint",
    "names_not_discovery_hint",
    "near_misses",
    "other_nodes",
    "poll_graph",
    "silent_topic_hint",
    "silent_topics",
]

_POLL_S = 0.1
"""Seconds between two reads of the ROS graph while waiting for endpoints to appear."""

_Snapshot = TypeVar("_Snapshot")
_IMAGE = "sensor_msgs/msg/Image"
_COMPRESSED = "sensor_msgs/msg/CompressedImage"
_CAMERA_INFO = "sensor_msgs/msg/CameraInfo"

DISCOVERY_VARIABLES = (
    "ROS_DOMAIN_ID",
    "ROS_AUTOMATIC_DISCOVERY_RANGE",
    "ROS_LOCALHOST_ONLY",
    "ROS_STATIC_PEERS",
    "FASTDDS_BUILTIN_TRANSPORTS",
    "RMW_IMPLEMENTATION",
)
"""Variables that decide whether two processes discover and reach each other; every
process of the robot must agree on them (a one-sided LARGE_DATA or LOCALHOST discovery
range makes Fast DDS processes on the same machine invisible to each other)."""


def discovery_environment() -> str:
    """This process's values of ``DISCOVERY_VARIABLES``, e.g. ``ROS_DOMAIN_ID=7, ...``."""
    return ", ".join(
        f"{name}={os.environ[name]}" if name in os.environ else f"{name} unset"
        for name in DISCOVERY_VARIABLES
    )


def discovery_mismatch_hint() -> str:
    """The likely cause when this process sees none of the robot's endpoints."""
    return (
        "likely this process does not discover the robot's processes: they must all have the "
        "same ROS_DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE (or ROS_LOCALHOST_ONLY) and "
        "FASTDDS_BUILTIN_TRANSPORTS (LARGE_DATA on one side only matches nothing); this "
        f"process has {discovery_environment()} (docs/troubleshooting.md#the-node-sees-no-topics-"
        "or-harness-ros-task-finds-no-node)"
    )


def names_not_discovery_hint(others: tuple[str, ...]) -> str:
    """No configured endpoint is there although other nodes are: the names are wrong."""
    shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
    return (
        f"no configured endpoint is present, but {len(others)} other node(s) are visible "
        f"({shown}): check the names (namespace, remapping) against the robot's"
    )


def other_nodes(node: Node) -> tuple[str, ...]:
    """Fully qualified names of the graph's nodes outside this process (its own node and
    the ``<name>_sensors`` companion left out)."""
    own = node.get_fully_qualified_name()
    mine = {own, f"{own}_sensors"}
    names = {f"{namespace.rstrip('/')}/{name}" for name, namespace in node.get_node_names_and_namespaces()}
    return tuple(sorted(names - mine))


def near_misses(name: str, candidates: list[str] | set[str]) -> tuple[str, ...]:
    """Names in ``candidates`` close to ``name`` (a typo, a ``_raw`` suffix, another namespace)."""
    others = sorted(set(candidates) - {name})
    close = difflib.get_close_matches(name, others, n=3, cutoff=0.6)
    # a different namespace or suffix of the same last segment is a near miss too
    leaf = name.rsplit("/", 1)[-1]
    close += [other for other in others if leaf and leaf in other.rsplit("/", 1)[-1] and other not in close]
    return tuple(close[:3])


@dataclass(frozen=True)
class TypeMismatch:
    """A name that exists in the graph with other types than configured."""

    name: str
    expected: str
    found: tuple[str, ...]


@dataclass(frozen=True)
class QosMismatch:
    """A topic subscribed reliable whose publishers (named by node) only offer best effort."""

    name: str
    key: str
    """The config key that asks for ``reliable``."""
    publishers: tuple[str, ...]


@dataclass(frozen=True)
class GraphReport:
    missing_topics: tuple[str, ...] = ()
    wrong_type_topics: tuple[TypeMismatch, ...] = ()
    missing_actions: tuple[str, ...] = ()
    wrong_type_actions: tuple[TypeMismatch, ...] = ()
    missing_services: tuple[str, ...] = ()
    wrong_type_services: tuple[TypeMismatch, ...] = ()
    incompatible_qos: tuple[QosMismatch, ...] = ()
    checked: int = 0
    similar: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Missing name -> names in the graph that look like it."""
    other_nodes: tuple[str, ...] | None = None
    """Nodes of other processes in the graph (None: not looked at, all was present)."""

    @property
    def ok(self) -> bool:
        return not (
            self.missing_topics
            or self.wrong_type_topics
            or self.missing_actions
            or self.wrong_type_actions
            or self.missing_services
            or self.wrong_type_services
            or self.incompatible_qos
        )

    def describe(self) -> str:
        if self.ok:
            return f"all {self.checked} configured topics, actions and services are present"
        problems = self.problems()
        lines = [f"{len(problems)} of {self.checked} configured endpoints are not usable:"]
        lines += [f"  {problem}" for problem in problems]
        if self.nothing_visible:
            lines.append(f"  nothing is visible, not even another node: {discovery_mismatch_hint()}")
        elif self.all_missing and self.other_nodes:
            lines.append(f"  {names_not_discovery_hint(self.other_nodes)}")
        return "\n".join(lines)

    @property
    def all_missing(self) -> bool:
        missing = len(self.missing_topics) + len(self.missing_actions) + len(self.missing_services)
        return self.checked > 0 and missing == self.checked

    @property
    def nothing_visible(self) -> bool:
        """Every configured endpoint is missing and no other process's node is in the graph."""
        return self.all_missing and self.other_nodes == ()

    def _similar(self, name: str) -> str:
        close = self.similar.get(name, ())
        return f" (similar in the graph: {', '.join(repr(n) for n in close)})" if close else ""

    def problems(self) -> list[str]:
        out = [f"no publisher on topic {name!r}{self._similar(name)}" for name in self.missing_topics]
        out += [_mismatch("topic", m) for m in self.wrong_type_topics]
        out += [f"no action server {name!r}{self._similar(name)}" for name in self.missing_actions]
        out += [_mismatch("action", m) for m in self.wrong_type_actions]
        out += [f"no service server {name!r}{self._similar(name)}" for name in self.missing_services]
        out += [_mismatch("service", m) for m in self.wrong_type_services]
        out += [
            f"topic {m.name!r} is published best effort by {', '.join(m.publishers)}: {m.key} is "
            "'reliable', which never matches it, so nothing arrives (set it to 'sensor_data')"
            for m in self.incompatible_qos
        ]
        return out


def _mismatch(kind: str, m: TypeMismatch) -> str:
    return f"{kind} {m.name!r} has type {', '.join(m.found)}, expected {m.expected}"


def expected_topics(config: HarnessConfig) -> dict[str, str]:
    """Configured topic -> expected type (as written in the config, before resolution)."""
    obs = config.observations
    topics = {view.topic: _COMPRESSED if view.compressed else _IMAGE for view in obs.views.values()}
    if obs.depth is not None:
        topics[obs.depth.topic] = _COMPRESSED if obs.depth.compressed else _IMAGE
        if obs.depth.view is not None and obs.depth.camera_info is not None:
            # the registration's camera_info topics (config-checked: the view has one too)
            topics[obs.depth.camera_info] = _CAMERA_INFO
            topics[obs.views[obs.depth.view].camera_info or ""] = _CAMERA_INFO
    if obs.clearance is not None:
        for sensor in obs.clearance.sensors():
            kind = "LaserScan" if sensor.kind == "scan" else "Range"
            topics[sensor.topic] = f"sensor_msgs/msg/{kind}"
    return topics


def reliable_topics(config: HarnessConfig) -> dict[str, str]:
    """Topics subscribed with ``qos: reliable`` -> the config key that says so."""
    obs = config.observations
    topics = {
        view.topic: f"observations.views.{name}.qos"
        for name, view in obs.views.items()
        if view.qos == "reliable"
    }
    if obs.depth is not None and obs.depth.qos == "reliable":
        topics[obs.depth.topic] = "observations.depth.qos"
    clearance = obs.clearance
    if clearance is not None and clearance.qos == "reliable":
        for sensor in clearance.sensors():
            topics[sensor.topic] = "observations.clearance.qos"
    return topics


def poll_graph(
    snapshot: Callable[[], _Snapshot],
    done: Callable[[_Snapshot], bool],
    *,
    deadline: float,
    interval_s: float = _POLL_S,
    sleep: Callable[[float], None] = time.sleep,
) -> _Snapshot:
    """Read the graph (``snapshot``) every ``interval_s`` until ``done`` or the monotonic
    ``deadline``; the last snapshot either way (read at least once, never after the deadline).

    This polls because there is nothing to wait on: rclpy offers no notification when
    discovery changes the graph (its own ``wait_for_service``, ``wait_for_server`` and
    ``wait_for_node`` poll the same cache), and graph queries need no spinning, so the
    caller's thread simply reads again after a short pause.
    """
    while True:
        current = snapshot()
        left = deadline - time.monotonic()
        if done(current) or left <= 0:
            return current
        sleep(min(interval_s, left))


def check_graph(node: Node, config: HarnessConfig, *, timeout_s: float) -> GraphReport:
    """Wait up to ``timeout_s`` for every configured endpoint; report what is still missing."""
    topics = {node.resolve_topic_name(name): kind for name, kind in expected_topics(config).items()}
    reliable = {node.resolve_topic_name(name): key for name, key in reliable_topics(config).items()}
    # several tools may bind one server (drive_forward and back_up presets): check it once
    actions: dict[tuple[str, str], None] = {}
    services: dict[tuple[str, str], None] = {}
    for binding in config.tools:
        if binding.action is not None:
            actions[(node.resolve_topic_name(binding.action, only_expand=True), binding.type)] = None
        elif binding.service is not None:
            services[(node.resolve_service_name(binding.service, only_expand=True), binding.type)] = None
    report = poll_graph(
        lambda: _snapshot(node, topics, list(actions), list(services), reliable),
        lambda report: report.ok,
        deadline=time.monotonic() + max(0.0, timeout_s),
    )
    return report if report.ok else _with_near_misses(node, report)


def silent_topic_hint(topic: str, publishers: int, window_s: float) -> str:
    """Why ``publishers`` visible publishers of ``topic`` delivered nothing in ``window_s``."""
    return (
        f"{publishers} publisher(s) visible on {topic!r} but nothing received in {window_s:.1f} s: "
        "the publisher may not be publishing (a driver waiting for a trigger or a subscriber), "
        "the QoS may be incompatible, or its data cannot reach this process although discovery "
        "does (Fast DDS transports differ between the processes, or large best-effort frames "
        "dropped: set FASTDDS_BUILTIN_TRANSPORTS the same in every process); this process has "
        f"{discovery_environment()}"
    )


def silent_topics(node: Node, config: HarnessConfig, received: dict[str, int], window_s: float) -> list[str]:
    """For each configured topic with a publisher in the graph but no message in
    ``received`` (resolved topic -> count), the ``silent_topic_hint``."""
    out = []
    for name in expected_topics(config):
        topic = node.resolve_topic_name(name)
        publishers = node.count_publishers(topic)
        if publishers and received.get(topic) == 0:
            out.append(silent_topic_hint(topic, publishers, window_s))
    return out


def _with_near_misses(node: Node, report: GraphReport) -> GraphReport:
    """``report`` with the graph's names that look like each missing one."""
    published = [name for name, _ in node.get_topic_names_and_types() if node.count_publishers(name) > 0]
    action_servers, service_servers = _servers(node)
    similar: dict[str, tuple[str, ...]] = {}
    for names, candidates in (
        (report.missing_topics, published),
        (report.missing_actions, list(action_servers)),
        (report.missing_services, list(service_servers)),
    ):
        for name in names:
            if close := near_misses(name, candidates):
                similar[name] = close
    return dataclasses.replace(report, similar=similar, other_nodes=other_nodes(node))


def _servers(node: Node) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Action and service server names -> types, over every node in the graph.

    Only graph queries: creating and destroying probe clients here could race the
    node's spinning executor (rclpy frees an action client before unregistering it).
    """
    actions: dict[str, set[str]] = {}
    services: dict[str, set[str]] = {}
    for name, namespace in node.get_node_names_and_namespaces():
        try:
            action_list = get_action_server_names_and_types_by_node(node, name, namespace)
            service_list = node.get_service_names_and_types_by_node(name, namespace)
        except NodeNameNonExistentError:
            continue  # the node left the graph between listing and asking
        for server, types in action_list:
            actions.setdefault(server, set()).update(types)
        for server, types in service_list:
            services.setdefault(server, set()).update(types)
    return actions, services


def _compare(
    wanted: list[tuple[str, str]], present: dict[str, set[str]]
) -> tuple[tuple[str, ...], tuple[TypeMismatch, ...]]:
    missing = tuple(name for name, _ in wanted if name not in present)
    wrong = tuple(
        TypeMismatch(name, expected, tuple(sorted(present[name])))
        for name, expected in wanted
        if name in present and expected not in present[name]
    )
    return missing, wrong


def _best_effort(node: Node, reliable: dict[str, str]) -> tuple[QosMismatch, ...]:
    found: list[QosMismatch] = []
    for name, key in reliable.items():
        offending = sorted(
            f"{info.node_namespace.rstrip('/')}/{info.node_name}"
            for info in node.get_publishers_info_by_topic(name)
            if info.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
        )
        if offending:
            found.append(QosMismatch(name, key, tuple(offending)))
    return tuple(found)


def _snapshot(
    node: Node,
    topics: dict[str, str],
    actions: list[tuple[str, str]],
    services: list[tuple[str, str]],
    reliable: dict[str, str],
) -> GraphReport:
    publishers = {
        name: {info.topic_type for info in node.get_publishers_info_by_topic(name)} for name in topics
    }
    missing_topics, wrong_topics = _compare(list(topics.items()), {k: v for k, v in publishers.items() if v})
    action_servers, service_servers = _servers(node) if actions or services else ({}, {})
    missing_actions, wrong_actions = _compare(actions, action_servers)
    missing_services, wrong_services = _compare(services, service_servers)
    return GraphReport(
        missing_topics=missing_topics,
        wrong_type_topics=wrong_topics,
        missing_actions=missing_actions,
        wrong_type_actions=wrong_actions,
        missing_services=missing_services,
        wrong_type_services=wrong_services,
        incompatible_qos=_best_effort(node, reliable),
        checked=len(topics) + len(actions) + len(services),
    )
