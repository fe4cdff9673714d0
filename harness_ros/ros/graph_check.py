"""Start-up check of the ROS graph: are the configured topics, actions and services there?

Graph queries read the node's discovery cache and need no spinning, so the check works
whether or not the node's executor runs yet. It polls until everything is present or
``timeout_s`` passes (discovery between processes takes up to a few seconds).

Existence is judged on the far end only: a topic needs a publisher (the node's own
subscriptions do not count), an action or service needs a server (clients do not count).
A topic configured ``qos: reliable`` also needs its publishers to be reliable: DDS never
matches a reliable subscription with a best-effort publisher, so nothing would arrive.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rclpy._rclpy_pybind11 import NodeNameNonExistentError
from rclpy.action import get_action_server_names_and_types_by_node
from rclpy.qos import ReliabilityPolicy

from harness_ros.config import HarnessConfig

if TYPE_CHECKING:
    from rclpy.node import Node

__all__ = ["GraphReport", "QosMismatch", "TypeMismatch", "check_graph"]

_POLL_S = 0.1
_IMAGE = "sensor_msgs/msg/Image"
_COMPRESSED = "sensor_msgs/msg/CompressedImage"
_CAMERA_INFO = "sensor_msgs/msg/CameraInfo"


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
        lines = [f"{len(self.problems())} of {self.checked} configured endpoints are not usable:"]
        lines += [f"  {problem}" for problem in self.problems()]
        return "\n".join(lines)

    def problems(self) -> list[str]:
        out = [f"no publisher on topic {name!r}" for name in self.missing_topics]
        out += [_mismatch("topic", m) for m in self.wrong_type_topics]
        out += [f"no action server {name!r}" for name in self.missing_actions]
        out += [_mismatch("action", m) for m in self.wrong_type_actions]
        out += [f"no service server {name!r}" for name in self.missing_services]
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
        if obs.clearance.scan_topic is not None:
            topics[obs.clearance.scan_topic] = "sensor_msgs/msg/LaserScan"
        for topic in (obs.clearance.range_topics or {}).values():
            topics[topic] = "sensor_msgs/msg/Range"
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
        for topic in [clearance.scan_topic, *(clearance.range_topics or {}).values()]:
            if topic is not None:
                topics[topic] = "observations.clearance.qos"
    return topics


def check_graph(node: Node, config: HarnessConfig, *, timeout_s: float) -> GraphReport:
    """Wait up to ``timeout_s`` for every configured endpoint; report what is still missing."""
    topics = {node.resolve_topic_name(name): kind for name, kind in expected_topics(config).items()}
    reliable = {node.resolve_topic_name(name): key for name, key in reliable_topics(config).items()}
    actions: list[tuple[str, str]] = []
    services: list[tuple[str, str]] = []
    for binding in config.tools:
        if binding.action is not None:
            actions.append((node.resolve_topic_name(binding.action, only_expand=True), binding.type))
        elif binding.service is not None:
            services.append((node.resolve_service_name(binding.service, only_expand=True), binding.type))
    deadline = time.monotonic() + max(0.0, timeout_s)
    pause = threading.Event()  # never set: a bounded pause between graph polls
    while True:
        report = _snapshot(node, topics, actions, services, reliable)
        if report.ok or time.monotonic() >= deadline:
            return report
        pause.wait(min(_POLL_S, max(0.0, deadline - time.monotonic())))


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
