"""NodePublisher's pin against a graph that is still being discovered.

A CLI that starts while discovery is partial can see one endpoint under the harness
node's name, pin it, and see a second one only later. The endpoint pinned first may be
the impostor's. The graph here is a stand-in whose answers the test sets step by step,
so the order of discovery is chosen instead of hoped for; the process-level case is
test_forged_events.py::test_an_impostor_with_the_node_name_makes_the_events_untrusted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from harness_ros.errors import AmbiguousPublisherError
from harness_ros.ros.publisher_trust import NodePublisher

IMPOSTOR, REAL = b"\x01" * 16, b"\x02" * 16


@dataclass
class Endpoint:
    endpoint_gid: bytes
    node_name: str = "harness"
    node_namespace: str = "/"


@dataclass
class Graph:
    publishers: list[Endpoint] = field(default_factory=list)

    def get_publishers_info_by_topic(self, _topic: str) -> list[Endpoint]:
        return list(self.publishers)


def message_from(gid: bytes) -> dict[str, Any]:
    return {"publisher_gid": {"data": list(gid)}}


def test_an_impostor_pinned_before_the_real_node_was_discovered_is_not_believed() -> None:
    graph = Graph([Endpoint(IMPOSTOR)])  # discovery found the impostor first
    source = NodePublisher(graph, "/harness/events", "/harness")
    assert source.resolve() and source.pinned == IMPOSTOR
    graph.publishers.append(Endpoint(REAL))  # and the real node a moment later
    # the impostor's forged "done" arrives: its endpoint is on the graph, and so is a second one
    assert not source.accepts(message_from(IMPOSTOR))
    assert source.ambiguous is not None and "2 publishers on /harness/events claim" in source.ambiguous
    with pytest.raises(AmbiguousPublisherError, match="DDS Security"):
        source.raise_if_ambiguous()
    # once ambiguous, nothing is trusted again, whoever sends
    assert not source.accepts(message_from(REAL))


def test_the_pinned_endpoint_alone_is_believed_and_a_late_second_claimant_is_found_on_recheck() -> None:
    graph = Graph([Endpoint(REAL), Endpoint(b"\x03" * 16, node_name="forger")])
    source = NodePublisher(graph, "/harness/events", "/harness")
    assert source.resolve()
    assert source.accepts(message_from(REAL))
    assert not source.accepts(message_from(b"\x03" * 16))  # another node's publisher
    source.raise_if_ambiguous(recheck=True)  # one claimant: nothing raised
    graph.publishers.append(Endpoint(IMPOSTOR))
    with pytest.raises(AmbiguousPublisherError):
        source.raise_if_ambiguous(recheck=True)
