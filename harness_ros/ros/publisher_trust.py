"""Which messages on a topic come from the harness node itself.

Any participant on an open ROS domain can publish on ``/harness/events``,
``/harness/approval_requests`` or ``/harness/questions``. The operator CLIs
(``harness-ros task``, ``approve``, ``answer``) take an exit status or show a request
only when the message came from the publisher endpoint of the harness node they
address: each received message carries its publisher's GID (rclpy ``MessageInfo``),
and the ROS graph says which node owns which endpoint GID.

Node names are not unique in ROS 2: when more than one endpoint on the topic claims the
harness node's name, the CLI cannot tell the real one from an impostor and says so
instead of trusting either. Only DDS Security (SROS2 permissions) can stop a
participant from claiming the name (docs/robot.md, "Fleets and shared domains").

The graph learns an endpoint before it learns whose it is: DDS discovery announces the
endpoint, and the node that owns it comes later, in the participant's
``ros_discovery_info`` (rmw_dds_common's graph cache shows ``_NODE_NAME_UNKNOWN_`` in
between: about 80 ms on an idle host here, seconds on a loaded one, where an impostor's
forged ``done`` was once believed in that window). An endpoint the graph cannot name yet
may be a second claimant, so while one is on the topic nothing is pinned and no message
is judged (``Verdict.UNDECIDED``); the client holds such messages and judges them again.

**Where message info carries no publisher GID** (rclpy before Kilted: Humble and Jazzy 7.1,
see ``harness_ros.ros.compat``), a message cannot be tied to an endpoint. It is then
judged by the graph alone: trusted only while every publisher endpoint seen on the topic
since the client started is the harness node's one pinned endpoint. Any other node's
publisher on the topic, now or earlier, leaves the messages unattributable, and nothing
is trusted (``ambiguous``, with the reason). Weaker than the GID check: a participant that
joins, publishes and leaves between two looks at the graph goes unseen; the operator is
told that trust is by the graph (``describe_dropped``).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from harness_ros.errors import AmbiguousPublisherError
from harness_ros.ros.compat import gid_key, message_info_carries_gid, message_publisher_gid

if TYPE_CHECKING:
    from rclpy.node import Node

__all__ = ["AmbiguousPublisherError", "NodePublisher", "Verdict", "split_node_name"]

UNKNOWN_NODE_NAMES = frozenset({"", "_NODE_NAME_UNKNOWN_"})
"""What the graph gives as an endpoint's node name before it knows the node
(rmw_dds_common's graph cache; empty where an RMW gives nothing)."""

ATTRIBUTION_WAIT_S = 10.0
"""How long a message is held while the graph cannot name its sender's node (or another
endpoint on the topic): far above the seconds a loaded host takes to exchange discovery."""


class Verdict(enum.Enum):
    TRUSTED = "trusted"
    """From the pinned endpoint, the only one on the topic that claims the node's name."""
    FOREIGN = "foreign"
    """From another publisher: never an outcome, never shown."""
    UNDECIDED = "undecided"
    """The graph cannot say yet: the sender, or another endpoint on the topic, has no
    node name so far. Judge the message again after spinning."""


def split_node_name(fully_qualified: str) -> tuple[str, str]:
    """``/ns/harness`` to ``("/ns", "harness")``; ``/harness`` (or ``harness``) to ``("/", "harness")``."""
    text = "/" + fully_qualified.strip("/")
    namespace, _, name = text.rpartition("/")
    return namespace or "/", name


def publisher_gid(info: Any) -> bytes | None:
    """The publisher GID of one received message (rclpy MessageInfo), or None where the RMW
    gave none or this rclpy's message info has no such field (Humble, Jazzy 7.1)."""
    return message_publisher_gid(info)


class NodePublisher:
    """The one publisher endpoint of node ``publisher_node`` on ``topic``, as ``node`` sees the graph.

    ``resolve()`` pins it once the graph names every endpoint on the topic and exactly one
    of them is the node's; ``judge(info)`` then trusts only messages whose publisher GID is
    the pinned one, while the graph still shows it alone under the node's name. Another
    endpoint claiming the same node name later never becomes trusted: from then on nothing
    is (``ambiguous``).
    """

    def __init__(self, node: Node, topic: str, publisher_node: str) -> None:
        self._node = node
        self.topic = topic
        self.publisher_node = "/" + publisher_node.strip("/")
        self._namespace, self._name = split_node_name(publisher_node)
        self.pinned: bytes | None = None
        self.impostors: set[bytes] = set()
        """GIDs of other endpoints that claimed the harness node's name on the topic."""
        self.foreign_messages = 0
        """Messages dropped because another publisher sent them."""
        self.ambiguous: str | None = None
        """Why nothing is trusted any more: a second claimant showed up after the pin, or
        (judged by the graph) another node's publisher was on the topic."""
        self.others_seen: dict[bytes, str] = {}
        """Every named publisher endpoint of another node seen on the topic (its node's
        fully qualified name): what makes a message without a GID unattributable."""
        self.judged_by_graph = 0
        """Messages judged without a publisher GID (this rclpy's message info has none)."""

    def _endpoints(self) -> dict[bytes, tuple[str, str] | None]:
        """Each publisher endpoint on the topic: its node (namespace, name), None while unnamed."""
        endpoints: dict[bytes, tuple[str, str] | None] = {}
        for info in self._node.get_publishers_info_by_topic(self.topic):
            named = info.node_name not in UNKNOWN_NODE_NAMES
            gid = gid_key(info.endpoint_gid)
            endpoints[gid] = (info.node_namespace, info.node_name) if named else None
            if named and not self._is_claimant(endpoints[gid]):
                self.others_seen[gid] = f"{info.node_namespace.rstrip('/')}/{info.node_name}"
        return endpoints

    def _is_claimant(self, owner: tuple[str, str] | None) -> bool:
        return owner == (self._namespace, self._name)

    def claimants(self) -> list[bytes]:
        """GIDs of the topic's publisher endpoints whose node is ``publisher_node``."""
        return [gid for gid, owner in self._endpoints().items() if self._is_claimant(owner)]

    def unnamed(self) -> int:
        """Publisher endpoints on the topic the graph has no node name for (yet)."""
        return sum(owner is None for owner in self._endpoints().values())

    def resolve(self) -> bool:
        """Pin the harness node's endpoint: True once pinned, False while the graph shows none
        or still has an endpoint on the topic without a node name.

        Raises ``AmbiguousPublisherError`` when several endpoints claim the node's name.
        """
        if self.pinned is not None:
            return True
        endpoints = self._endpoints()
        claimants = [gid for gid, owner in endpoints.items() if self._is_claimant(owner)]
        if len(claimants) > 1:
            raise AmbiguousPublisherError(self._ambiguity(len(claimants)))
        if len(claimants) == 1 and None not in endpoints.values():
            self.pinned = claimants[0]
        return self.pinned is not None

    def _note_claimants(self, count: int) -> None:
        """Once a second endpoint claims the node's name, nothing is trusted any more."""
        if count > 1 and self.ambiguous is None:
            self.ambiguous = self._ambiguity(count)

    def _ambiguity(self, count: int) -> str:
        return (
            f"{count} publishers on {self.topic} claim to be node {self.publisher_node}: "
            "cannot tell the harness node's messages from another participant's, so none is "
            "trusted (on a shared domain, use DDS Security: docs/robot.md, 'Fleets and shared domains')"
        )

    def unnamed_reason(self, waited_s: float) -> str:
        """Why a message stayed unjudged: an endpoint on the topic never got a node name."""
        return (
            f"a publisher on {self.topic} still has no ROS node name after {waited_s:.1f} s (a DDS "
            "participant that is not a ROS node, or discovery that never finished): it may claim "
            f"to be {self.publisher_node}, so no message is trusted (on a shared domain, use DDS "
            "Security: docs/robot.md, 'Fleets and shared domains')"
        )

    def judge(self, info: Any, *, waited_s: float = 0.0) -> Verdict:
        """Whether the message of ``info`` came from the harness node's own endpoint.

        Checked against the graph as it is now, for every message: the pin can come before
        discovery has found every participant (an impostor seen first would be pinned, the
        real node found later), and a participant's messages can arrive before the graph
        names its endpoint's node. ``UNDECIDED`` then, until ``waited_s`` (how long the
        message has been held) passes ``ATTRIBUTION_WAIT_S``: a sender that left the graph
        unnamed is then ``FOREIGN``, and an endpoint that stays unnamed raises
        ``AmbiguousPublisherError``. A second claimant makes every message ``FOREIGN`` from
        then on (``ambiguous``).

        A message whose info has no ``publisher_gid`` field at all (Humble, Jazzy 7.1) is
        judged by the graph instead (``_judge_by_graph``); one whose field is None (the RMW
        gave none) is ``FOREIGN``."""
        gid = publisher_gid(info)
        endpoints = self._endpoints()
        self._note_claimants(sum(self._is_claimant(owner) for owner in endpoints.values()))
        if self.ambiguous is None and not message_info_carries_gid(info):
            self.judged_by_graph += 1
            verdict = self._judge_by_graph(endpoints, waited_s)
            if verdict is not Verdict.FOREIGN:
                return verdict
        elif self.ambiguous is None and gid is not None:
            if gid == self.pinned:
                # The pinned endpoint (even while it leaves the graph: its name goes first) is
                # believed while no other endpoint on the topic may be a second claimant.
                if not any(owner is None for other, owner in endpoints.items() if other != gid):
                    return Verdict.TRUSTED
                if waited_s <= ATTRIBUTION_WAIT_S:
                    return Verdict.UNDECIDED
                raise AmbiguousPublisherError(self.unnamed_reason(waited_s))
            if endpoints.get(gid) is None:  # not on the graph yet, or its node not named yet
                if waited_s <= ATTRIBUTION_WAIT_S:
                    return Verdict.UNDECIDED
                if gid in endpoints:
                    raise AmbiguousPublisherError(self.unnamed_reason(waited_s))
                # it left the graph unnamed: not the pinned endpoint, so not the node's
        self.foreign_messages += 1
        if gid is not None and gid != self.pinned and self._is_claimant(endpoints.get(gid)):
            self.impostors.add(gid)
        return Verdict.FOREIGN

    def graph_verdict(self, *, waited_s: float = 0.0) -> Verdict:
        """The verdict on a message without a publisher GID, from the graph as it is now
        (nothing counted): see ``_judge_by_graph``."""
        endpoints = self._endpoints()
        self._note_claimants(sum(self._is_claimant(owner) for owner in endpoints.values()))
        if self.ambiguous is not None:
            return Verdict.FOREIGN
        return self._judge_by_graph(endpoints, waited_s)

    def _judge_by_graph(self, endpoints: dict[bytes, tuple[str, str] | None], waited_s: float) -> Verdict:
        """A message without a publisher GID: the harness node's only if the pinned endpoint
        is the only publisher the topic has had (as far as the graph showed). Raises
        ``AmbiguousPublisherError`` for an endpoint still unnamed after ``ATTRIBUTION_WAIT_S``."""
        if None in endpoints.values():  # an endpoint not named yet: may be another node's
            if waited_s <= ATTRIBUTION_WAIT_S:
                return Verdict.UNDECIDED
            raise AmbiguousPublisherError(self.unnamed_reason(waited_s))
        if self.others_seen:
            self.ambiguous = self._graph_only_reason()
            return Verdict.FOREIGN
        claimants = {gid for gid, owner in endpoints.items() if self._is_claimant(owner)}
        if self.pinned is None:
            # the node's endpoint not on the graph yet: wait for it, then it was no one's
            return Verdict.UNDECIDED if waited_s <= ATTRIBUTION_WAIT_S else Verdict.FOREIGN
        # the pinned endpoint alone (or gone since: its last messages), no other claimant
        return Verdict.TRUSTED if claimants <= {self.pinned} else Verdict.FOREIGN

    def _graph_only_reason(self) -> str:
        others = ", ".join(sorted(set(self.others_seen.values())))
        return (
            f"messages on {self.topic} carry no publisher GID with this ROS distribution's rclpy "
            f"(Humble, Jazzy), so they are trusted only while {self.publisher_node} is the "
            f"only publisher on the topic, and another node publishes there too ({others}): "
            "none is trusted (stop that publisher; docs/robot.md, 'rclpy on Humble, Jazzy and Kilted')"
        )

    def raise_if_ambiguous(self, *, recheck: bool = False) -> None:
        """Raise ``AmbiguousPublisherError`` once a second claimant made the messages
        untrusted; with ``recheck``, look at the graph now (after collecting messages that
        arrived before their publisher was matched to a node)."""
        if recheck and self.ambiguous is None:
            self._note_claimants(len(self.claimants()))
        if self.ambiguous is not None:
            raise AmbiguousPublisherError(self.ambiguous)

    def describe_dropped(self) -> str | None:
        """One line for the operator about dropped messages and about trust by the graph
        alone (no publisher GIDs), or None when neither happened."""
        if not self.foreign_messages:
            return self._graph_note() if self.judged_by_graph else None
        line = (
            f"ignored {self.foreign_messages} message(s) on {self.topic} that did not come from "
            f"{self.publisher_node}'s own publisher"
        )
        if self.impostors:
            line += (
                f"; {len(self.impostors)} other publisher(s) claimed to be {self.publisher_node}"
                " (on a shared domain, use DDS Security)"
            )
        if self.judged_by_graph:
            line += f"; {self._graph_note()}"
        return line

    def _graph_note(self) -> str:
        return (
            f"this ROS distribution's rclpy gives no publisher GID per message (Humble, Jazzy): "
            f"messages on {self.topic} were trusted by the ROS graph alone, while "
            f"{self.publisher_node} was the only publisher there"
        )
