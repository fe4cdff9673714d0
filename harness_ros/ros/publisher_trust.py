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
"""

from __future__ import annotations

from typing import Any

from harness_ros.errors import AmbiguousPublisherError

__all__ = ["AmbiguousPublisherError", "NodePublisher", "split_node_name"]


def split_node_name(fully_qualified: str) -> tuple[str, str]:
    """``/ns/harness`` to ``("/ns", "harness")``; ``/harness`` (or ``harness``) to ``("/", "harness")``."""
    text = "/" + fully_qualified.strip("/")
    namespace, _, name = text.rpartition("/")
    return namespace or "/", name


def publisher_gid(info: Any) -> bytes | None:
    """The publisher GID of one received message (rclpy MessageInfo), or None if the RMW gave none."""
    gid = info.get("publisher_gid") if isinstance(info, dict) else None
    data = gid.get("data") if isinstance(gid, dict) else None
    return bytes(data) if data is not None else None


class NodePublisher:
    """The one publisher endpoint of node ``publisher_node`` on ``topic``, as ``node`` sees the graph.

    ``resolve()`` pins it once the graph shows exactly one such endpoint; ``accepts(info)``
    is then true only for messages whose publisher GID is the pinned one. Another
    endpoint claiming the same node name later never becomes trusted; it is counted in
    ``impostors`` so the CLI can say so.
    """

    def __init__(self, node: Any, topic: str, publisher_node: str) -> None:
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
        """Why nothing is trusted any more: a second claimant showed up after the pin."""

    def claimants(self) -> list[bytes]:
        """GIDs of the topic's publisher endpoints whose node is ``publisher_node``."""
        return [
            bytes(info.endpoint_gid)
            for info in self._node.get_publishers_info_by_topic(self.topic)
            if info.node_name == self._name and info.node_namespace == self._namespace
        ]

    def resolve(self) -> bool:
        """Pin the harness node's endpoint: True once pinned, False while the graph shows none.

        Raises ``AmbiguousPublisherError`` when several endpoints claim the node's name.
        """
        if self.pinned is not None:
            return True
        claimants = self.claimants()
        if len(claimants) > 1:
            raise AmbiguousPublisherError(self._ambiguity(len(claimants)))
        if claimants:
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

    def accepts(self, info: Any) -> bool:
        """True when the message of ``info`` came from the pinned endpoint of the harness node
        and the graph still shows that endpoint alone under the node's name.

        The pin can come before discovery has found every participant: an impostor seen
        first would be pinned, and the real node found later. A participant's messages only
        arrive once its endpoint is discovered, so every message is checked against the graph
        as it is then; with a second claimant nothing is trusted any more (``ambiguous``)."""
        gid = publisher_gid(info)
        claimants = self.claimants()
        self._note_claimants(len(claimants))
        if self.ambiguous is None and gid is not None and self.pinned is not None and gid == self.pinned:
            return True
        self.foreign_messages += 1
        if gid is not None and gid in set(claimants):
            self.impostors.add(gid)
        return False

    def raise_if_ambiguous(self, *, recheck: bool = False) -> None:
        """Raise ``AmbiguousPublisherError`` once a second claimant made the messages
        untrusted; with ``recheck``, look at the graph now (after collecting messages that
        arrived before their publisher was matched to a node)."""
        if recheck and self.ambiguous is None:
            self._note_claimants(len(self.claimants()))
        if self.ambiguous is not None:
            raise AmbiguousPublisherError(self.ambiguous)

    def describe_dropped(self) -> str | None:
        """One line for the operator about dropped messages, or None when there were none."""
        if not self.foreign_messages:
            return None
        line = (
            f"ignored {self.foreign_messages} message(s) on {self.topic} that did not come from "
            f"{self.publisher_node}'s own publisher"
        )
        if self.impostors:
            line += (
                f"; {len(self.impostors)} other publisher(s) claimed to be {self.publisher_node}"
                " (on a shared domain, use DDS Security)"
            )
        return line
