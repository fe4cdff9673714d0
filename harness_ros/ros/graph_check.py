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

Names and type names are not enough: a server built against another distribution's
nav2_msgs has the same names and type names as this node's, yet DDS never matches a
client of one definition with a server of another, so every call would fail at run time
as "not available". From Iron on each endpoint carries the hash of its type's definition
(REP 2011, ``RIHS01_...``), and this node's own hashes are in the type description files
installed next to its interface packages (``share/<pkg>/<kind>/<Name>.json``). So for
each server (and topic publisher) whose name and type name fit, the hashes its endpoints
carry on the wire (an action's send_goal and get_result requests and replies and its
feedback topic, a service's request and reply, a topic's publishers) are compared with
this node's:

- another hash: a ``WireMismatch``, a problem like a wrong type name (the node warns, and
  refuses to start with ``strict_graph``), with the fix: build this node against the
  robot's interfaces;
- no hash on one side (a ROS 2 Humble peer or node: Humble's endpoints carry none, read
  as version 0), or endpoints whose type information this middleware does not list: an
  ``Unverified`` note, never a problem: the types may or may not match, and the report
  says so plainly.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib.util
import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

# a C extension: rclpy ships its stub as rclpy/impl/_rclpy_pybind11.pyi, which mypy does not map here
from rclpy._rclpy_pybind11 import NodeNameNonExistentError  # type: ignore[import-not-found]
from rclpy.action.graph import get_action_server_names_and_types_by_node
from rclpy.qos import ReliabilityPolicy

from harness_ros.config import HarnessConfig
from harness_ros.ros.distros import installed_distro

if TYPE_CHECKING:
    from rclpy.node import Node

__all__ = [
    "DISCOVERY_VARIABLES",
    "GraphReport",
    "QosMismatch",
    "TypeMismatch",
    "Unverified",
    "WireMismatch",
    "check_graph",
    "discovery_environment",
    "discovery_mismatch_hint",
    "names_not_discovery_hint",
    "near_misses",
    "other_nodes",
    "own_type_hashes",
    "poll_graph",
    "silent_topic_hint",
    "silent_topics",
    "wire_verdict",
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


ROBOT_DOC = "docs/robot.md#one-route-per-distribution"
"""Where the routes to a robot of another distribution are described."""


@dataclass(frozen=True)
class WireMismatch:
    """A server (or topic publisher) whose endpoints carry another type hash than this
    node's: the same type name with another definition, so DDS never matches them."""

    kind: str
    """``topic``, ``action`` or ``service``."""
    name: str
    type: str
    part: str
    """The endpoint that differs (``get_result reply``, ``feedback``, ``request``...)."""
    nodes: tuple[str, ...]
    """The peer nodes whose endpoint differs."""
    theirs: str
    ours: str
    tools: tuple[str, ...] = ()
    """The tools bound to the server (empty for a topic)."""


@dataclass(frozen=True)
class Unverified:
    """An endpoint whose type cannot be compared by hash; ``why`` says why."""

    kind: str
    name: str
    type: str
    why: str
    tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class GraphReport:
    missing_topics: tuple[str, ...] = ()
    wrong_type_topics: tuple[TypeMismatch, ...] = ()
    missing_actions: tuple[str, ...] = ()
    wrong_type_actions: tuple[TypeMismatch, ...] = ()
    missing_services: tuple[str, ...] = ()
    wrong_type_services: tuple[TypeMismatch, ...] = ()
    incompatible_qos: tuple[QosMismatch, ...] = ()
    wire_mismatches: tuple[WireMismatch, ...] = ()
    unverified: tuple[Unverified, ...] = ()
    """Endpoints whose types cannot be verified by hash: a note, not a problem."""
    pending: int = 0
    """Servers seen with only part of their endpoints discovered yet (worth a re-read)."""
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
            or self.wire_mismatches
        )

    def describe(self) -> str:
        if self.ok:
            text = f"all {self.checked} configured topics, actions and services are present"
            return "\n".join([text, *(f"  {note}" for note in self.notes())])
        problems = self.problems()
        lines = [f"{len(problems)} of {self.checked} configured endpoints are not usable:"]
        lines += [f"  {problem}" for problem in problems]
        if self.nothing_visible:
            lines.append(f"  nothing is visible, not even another node: {discovery_mismatch_hint()}")
        elif self.all_missing and self.other_nodes:
            lines.append(f"  {names_not_discovery_hint(self.other_nodes)}")
        lines += [f"  {note}" for note in self.notes()]
        return "\n".join(lines)

    def notes(self) -> list[str]:
        """What could not be verified (no type hash on one side), one line per reason."""
        by_reason: dict[str, list[str]] = {}
        for item in self.unverified:
            tools = f" (tool {', '.join(item.tools)})" if item.tools else ""
            by_reason.setdefault(item.why, []).append(f"{item.kind} {item.name!r}{tools}")
        return [
            f"the types of {', '.join(endpoints)} cannot be verified: {why}"
            for why, endpoints in by_reason.items()
        ]

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
        out += [_wire_mismatch(m) for m in self.wire_mismatches]
        return out


def _mismatch(kind: str, m: TypeMismatch) -> str:
    return f"{kind} {m.name!r} has type {', '.join(m.found)}, expected {m.expected}"


def _wire_mismatch(m: WireMismatch) -> str:
    what = "the server at" if m.kind != "topic" else "the publisher(s) of topic"
    tools = f" (tool {', '.join(m.tools)})" if m.tools else ""
    package = m.type.split("/", 1)[0]
    looks = installed_distro(package)
    ours = f"; this node's {package} looks like ROS 2 {looks}" if looks else ""
    return (
        f"{what} {m.name!r}{tools} speaks {m.type} of another definition than this node's: "
        f"its {m.part} has type hash {m.theirs} ({', '.join(m.nodes)}), this node's {m.ours}"
        f"{ours}. The robot runs another ROS distribution's (or another release's) "
        f"interfaces, and DDS never matches the two, so every call would fail as not "
        f"available: build this node against the robot's {package} "
        f"({ROBOT_DOC})"
    )


def expected_topics(config: HarnessConfig) -> dict[str, str]:
    """Configured topic -> expected type (as written in the config, before resolution)."""
    obs = config.observations
    topics = {view.topic: _COMPRESSED if view.compressed else _IMAGE for view in obs.views.values()}
    for view in obs.views.values():
        if view.depth is not None:
            topics[view.depth.topic] = _COMPRESSED if view.depth.compressed else _IMAGE
            if view.camera_info is not None and view.depth.camera_info is not None:
                topics[view.depth.camera_info] = _CAMERA_INFO
                topics[view.camera_info] = _CAMERA_INFO
        for joint in (view.pan, view.tilt):
            if joint is not None:
                topics[joint.topic] = "sensor_msgs/msg/JointState"
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
    for name, view in obs.views.items():
        if view.depth is not None and view.depth.qos == "reliable":
            topics[view.depth.topic] = f"observations.views.{name}.depth.qos"
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
    """Wait up to ``timeout_s`` for every configured endpoint, of this node's types; report
    what is still missing or of another definition, and what cannot be verified."""
    topics = {node.resolve_topic_name(name): kind for name, kind in expected_topics(config).items()}
    reliable = {node.resolve_topic_name(name): key for name, key in reliable_topics(config).items()}
    # several tools may bind one server (drive_forward and back_up presets): check it once
    actions: dict[tuple[str, str], list[str]] = {}
    services: dict[tuple[str, str], list[str]] = {}
    for binding in config.tools:
        if binding.action is not None:
            key = (node.resolve_topic_name(binding.action, only_expand=True), binding.type)
            actions.setdefault(key, []).append(binding.name)
        elif binding.service is not None:
            key = (node.resolve_service_name(binding.service, only_expand=True), binding.type)
            services.setdefault(key, []).append(binding.name)
    tools = {name: tuple(names) for (name, _), names in [*actions.items(), *services.items()]}
    report = poll_graph(
        lambda: _snapshot(node, topics, list(actions), list(services), reliable, tools=tools),
        lambda report: report.ok and not report.pending,
        deadline=time.monotonic() + max(0.0, timeout_s),
    )
    return report if report.ok else _with_near_misses(node, report)


# ------------------------------------------------------------------ the types on the wire

_PENDING = "only part of the server's endpoints were discovered within the check's wait"
_PEER_NO_HASH = (
    "the peer's endpoints carry no type hash (ROS 2 Humble sends none), so a peer built "
    "against another distribution's interfaces cannot be told from a matching one: if "
    f"calls fail as not available, build this node against the robot's interfaces ({ROBOT_DOC})"
)
_OWN_NO_HASH = (
    "this node's interface package has no type description (share/<pkg>/<kind>/<Name>.json: "
    "built by ROS 2 Humble or older), so there is nothing to compare the peer's hash with"
)
_NO_TYPE_INFO = "the middleware lists no type information of the peer's endpoints"


@dataclass(frozen=True)
class WirePart:
    """One endpoint family of a server or topic as DDS carries it, and the peer's side
    of it: (peer node, its type hash or None when it carries none) per endpoint."""

    part: str
    """What it is, for a message: ``get_result reply``, ``request``, ``publishers``."""
    suffix: str
    """The part's type is the configured type plus this (``_GetResult_Response``)."""
    endpoints: tuple[tuple[str, str | None], ...]
    request_reply: bool = False
    """A service request or reply topic (``rq/...``, ``rr/...``): DDS middlewares list
    these, others may not."""


def _wire_names(kind: str, name: str) -> list[tuple[str, str, str, bool, str]]:
    """(part, graph name, peer side ``pub``/``sub``, name as DDS spells it, suffix)."""
    if kind == "topic":
        return [("publishers", name, "pub", False, "")]
    if kind == "service":
        return [
            ("request", f"rq{name}Request", "sub", True, "_Request"),
            ("reply", f"rr{name}Reply", "pub", True, "_Response"),
        ]
    base = f"{name}/_action"
    return [
        ("send_goal request", f"rq{base}/send_goalRequest", "sub", True, "_SendGoal_Request"),
        ("send_goal reply", f"rr{base}/send_goalReply", "pub", True, "_SendGoal_Response"),
        ("get_result request", f"rq{base}/get_resultRequest", "sub", True, "_GetResult_Request"),
        ("get_result reply", f"rr{base}/get_resultReply", "pub", True, "_GetResult_Response"),
        ("feedback", f"{base}/feedback", "pub", False, "_FeedbackMessage"),
    ]


def _hash_of(info: Any) -> str | None:
    """``RIHS01_...`` of an endpoint, or None when it carries none (Humble's rclpy has no
    ``topic_type_hash``; a Humble peer's reads as version 0)."""
    found = getattr(info, "topic_type_hash", None)
    if found is None:
        return None
    if isinstance(found, dict):
        version, value = found.get("version", 0), found.get("value", b"")
    else:
        version, value = getattr(found, "version", 0), getattr(found, "value", b"")
    if not isinstance(version, int) or version <= 0 or not isinstance(value, bytes) or not any(value):
        return None
    return f"RIHS{version:02}_{value.hex()}"


def _wire_endpoints(node: Node, kind: str, name: str) -> list[WirePart]:
    """The peer side of ``name``'s endpoints as the graph lists them: a server subscribes
    to requests and publishes replies and feedback; a topic's peers publish."""
    parts = []
    for part, graph_name, side, request_reply, suffix in _wire_names(kind, name):
        query = node.get_publishers_info_by_topic if side == "pub" else node.get_subscriptions_info_by_topic
        infos = query(graph_name, no_mangle=True) if request_reply else query(graph_name)
        endpoints = tuple(
            (f"{info.node_namespace.rstrip('/')}/{info.node_name}", _hash_of(info)) for info in infos
        )
        parts.append(WirePart(part, suffix, endpoints, request_reply))
    return parts


def _share_dirs(package: str) -> Iterable[Path]:
    """Where ``package``'s share folder may be: next to the Python package this process
    imports (``<prefix>/lib/pythonX.Y/site-packages/<package>`` -> ``<prefix>/share``),
    then along ``AMENT_PREFIX_PATH``."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        for ancestor in Path(spec.origin).resolve().parents[1:6]:
            yield ancestor / "share" / package
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            yield Path(prefix) / "share" / package


@functools.lru_cache(maxsize=256)
def own_type_hashes(type_string: str) -> dict[str, str]:
    """Type name -> ``RIHS01_...`` for ``pkg/kind/Name`` and the types it is made of
    (``NavigateToPose_GetResult_Response`` ...), as this process's interface package
    declares them in its type description (Iron and later generate it); empty when none
    is found (a package built by Humble)."""
    package, _, rest = type_string.partition("/")
    kind, _, name = rest.partition("/")
    for share in _share_dirs(package):
        path = share / kind / f"{name}.json"
        if not path.is_file():
            continue
        try:
            entries = json.loads(path.read_text(encoding="utf-8")).get("type_hashes", [])
        except (OSError, ValueError, AttributeError):
            return {}
        return {
            str(entry["type_name"]): str(entry["hash_string"])
            for entry in entries
            if isinstance(entry, dict) and "type_name" in entry and "hash_string" in entry
        }
    return {}


def wire_verdict(
    kind: str,
    name: str,
    type_string: str,
    parts: list[WirePart],
    own: dict[str, str] | None = None,
) -> WireMismatch | Unverified | None:
    """Compare the peers' type hashes of ``name`` with this node's (``own``, default
    ``own_type_hashes``): a ``WireMismatch`` when any differs, an ``Unverified`` when they
    cannot be compared (``_PENDING`` when only part of a server's endpoints are seen yet),
    None when every hash matches."""
    ours_by_type = own_type_hashes(type_string) if own is None else own
    seen = [part for part in parts if part.endpoints]
    if not seen:
        return Unverified(kind, name, type_string, _NO_TYPE_INFO)
    for part in seen:
        ours = ours_by_type.get(type_string + part.suffix)
        if ours is None:
            continue
        differing = [
            (peer, theirs) for peer, theirs in part.endpoints if theirs is not None and theirs != ours
        ]
        if differing:
            theirs = differing[0][1] or ""
            nodes = tuple(sorted({peer for peer, hashed in differing if hashed == theirs}))
            return WireMismatch(kind, name, type_string, part.part, nodes, theirs, ours)
    request_reply = [part for part in parts if part.request_reply]
    if any(part.endpoints for part in request_reply) and not all(part.endpoints for part in request_reply):
        return Unverified(kind, name, type_string, _PENDING)
    if any(theirs is None for part in seen for _, theirs in part.endpoints):
        return Unverified(kind, name, type_string, _PEER_NO_HASH)
    if any(type_string + part.suffix not in ours_by_type for part in seen):
        return Unverified(kind, name, type_string, _OWN_NO_HASH)
    return None


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
    *,
    tools: dict[str, tuple[str, ...]] | None = None,
) -> GraphReport:
    publishers = {
        name: {info.topic_type for info in node.get_publishers_info_by_topic(name)} for name in topics
    }
    missing_topics, wrong_topics = _compare(list(topics.items()), {k: v for k, v in publishers.items() if v})
    action_servers, service_servers = _servers(node) if actions or services else ({}, {})
    missing_actions, wrong_actions = _compare(actions, action_servers)
    missing_services, wrong_services = _compare(services, service_servers)
    # The hashes of what is there with the right type name.
    fitting = [
        (kind, name, type_string)
        for kind, wanted, missing, wrong in (
            ("topic", list(topics.items()), missing_topics, wrong_topics),
            ("action", actions, missing_actions, wrong_actions),
            ("service", services, missing_services, wrong_services),
        )
        for name, type_string in wanted
        if name not in missing and name not in {m.name for m in wrong}
    ]
    mismatches: list[WireMismatch] = []
    unverified: list[Unverified] = []
    pending = 0
    for kind, name, type_string in fitting:
        verdict = wire_verdict(kind, name, type_string, _wire_endpoints(node, kind, name))
        on = (tools or {}).get(name, ())
        if isinstance(verdict, WireMismatch):
            mismatches.append(dataclasses.replace(verdict, tools=on))
        elif isinstance(verdict, Unverified):
            unverified.append(dataclasses.replace(verdict, tools=on))
            pending += verdict.why == _PENDING
    return GraphReport(
        missing_topics=missing_topics,
        wrong_type_topics=wrong_topics,
        missing_actions=missing_actions,
        wrong_type_actions=wrong_actions,
        missing_services=missing_services,
        wrong_type_services=wrong_services,
        incompatible_qos=_best_effort(node, reliable),
        wire_mismatches=tuple(mismatches),
        unverified=tuple(unverified),
        pending=pending,
        checked=len(topics) + len(actions) + len(services),
    )
