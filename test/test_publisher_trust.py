"""NodePublisher's pin against a graph that is still being discovered.

A CLI that starts while discovery is partial can see one endpoint under the harness
node's name, pin it, and see a second one only later. The endpoint pinned first may be
the impostor's. And the graph shows an endpoint before it knows its node: rmw_dds_common
names it ``_NODE_NAME_UNKNOWN_`` until the participant's discovery info arrives (CI once
believed an impostor's forged ``done`` while the real node's endpoint was unnamed). The
graph here is a stand-in whose answers the test sets step by step, so the order of
discovery is chosen instead of hoped for; the process-level case is
test_forged_events.py::test_an_impostor_with_the_node_name_makes_the_events_untrusted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from support.processes import ServerProcess

from harness_ros.errors import AmbiguousPublisherError
from harness_ros.ros.compat import NO_MESSAGE_INFO
from harness_ros.ros.publisher_trust import ATTRIBUTION_WAIT_S, NodePublisher, Verdict

IMPOSTOR, REAL, OTHER = b"\x01" * 16, b"\x02" * 16, b"\x03" * 16
UNKNOWN = ("_NODE_NAMESPACE_UNKNOWN_", "_NODE_NAME_UNKNOWN_")


@dataclass
class Endpoint:
    endpoint_gid: bytes
    node_name: str = "harness"
    node_namespace: str = "/"


def unnamed(gid: bytes) -> Endpoint:
    """An endpoint the graph knows before it knows its node (as rmw_dds_common shows it)."""
    return Endpoint(gid, node_namespace=UNKNOWN[0], node_name=UNKNOWN[1])


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
    assert source.judge(message_from(IMPOSTOR)) is Verdict.FOREIGN
    assert source.ambiguous is not None and "2 publishers on /harness/events claim" in source.ambiguous
    with pytest.raises(AmbiguousPublisherError, match="DDS Security"):
        source.raise_if_ambiguous()
    # once ambiguous, nothing is trusted again, whoever sends
    assert source.judge(message_from(REAL)) is Verdict.FOREIGN


def test_the_pinned_endpoint_alone_is_believed_and_a_late_second_claimant_is_found_on_recheck() -> None:
    graph = Graph([Endpoint(REAL), Endpoint(OTHER, node_name="forger")])
    source = NodePublisher(graph, "/harness/events", "/harness")
    assert source.resolve()
    assert source.judge(message_from(REAL)) is Verdict.TRUSTED
    assert source.judge(message_from(OTHER)) is Verdict.FOREIGN  # another node's publisher
    source.raise_if_ambiguous(recheck=True)  # one claimant: nothing raised
    graph.publishers.append(Endpoint(IMPOSTOR))
    with pytest.raises(AmbiguousPublisherError):
        source.raise_if_ambiguous(recheck=True)


def test_nothing_is_pinned_while_an_endpoint_on_the_topic_has_no_node_name() -> None:
    # The CI failure's graph: the impostor named, the real node's endpoint not yet
    graph = Graph([Endpoint(IMPOSTOR), unnamed(REAL)])
    source = NodePublisher(graph, "/harness/events", "/harness")
    assert not source.resolve() and source.pinned is None
    assert source.unnamed() == 1
    graph.publishers[1] = Endpoint(REAL)  # its discovery info arrives
    with pytest.raises(AmbiguousPublisherError, match="2 publishers on /harness/events claim"):
        source.resolve()


def test_a_pinned_impostors_done_waits_while_the_real_nodes_endpoint_is_unnamed() -> None:
    graph = Graph([Endpoint(IMPOSTOR)])  # the real node not discovered at all yet
    source = NodePublisher(graph, "/harness/events", "/harness")
    assert source.resolve() and source.pinned == IMPOSTOR
    graph.publishers.append(unnamed(REAL))
    forged_done = message_from(IMPOSTOR)
    assert source.judge(forged_done) is Verdict.UNDECIDED
    assert source.judge(message_from(REAL)) is Verdict.UNDECIDED  # its task_started, unnamed
    assert source.foreign_messages == 0 and source.ambiguous is None
    graph.publishers[1] = Endpoint(REAL)
    assert source.judge(forged_done) is Verdict.FOREIGN
    with pytest.raises(AmbiguousPublisherError, match="DDS Security"):
        source.raise_if_ambiguous()


def test_the_real_nodes_message_before_its_name_is_trusted_once_named() -> None:
    graph = Graph([Endpoint(REAL)])
    source = NodePublisher(graph, "/harness/events", "/harness")
    assert source.resolve()
    graph.publishers.append(unnamed(OTHER))  # some participant, not named yet
    assert source.judge(message_from(REAL)) is Verdict.UNDECIDED
    assert source.judge(message_from(OTHER)) is Verdict.UNDECIDED
    graph.publishers[1] = Endpoint(OTHER, node_name="rviz")
    assert source.judge(message_from(REAL)) is Verdict.TRUSTED
    assert source.judge(message_from(OTHER)) is Verdict.FOREIGN
    assert source.describe_dropped() is not None and "1 message(s)" in str(source.describe_dropped())


def test_an_endpoint_that_stays_unnamed_fails_closed_and_one_that_left_is_foreign() -> None:
    graph = Graph([Endpoint(REAL), unnamed(OTHER)])
    source = NodePublisher(graph, "/harness/events", "/harness")
    source.pinned = REAL  # pinned before the unnamed endpoint appeared
    late = ATTRIBUTION_WAIT_S + 0.5
    with pytest.raises(AmbiguousPublisherError, match=r"no ROS node name after 10\.5 s"):
        source.judge(message_from(REAL), waited_s=late)
    with pytest.raises(AmbiguousPublisherError, match="no ROS node name"):
        source.judge(message_from(OTHER), waited_s=late)
    graph.publishers.pop()  # the unnamed sender left the graph: it was not the pinned endpoint
    assert source.judge(message_from(OTHER), waited_s=late) is Verdict.FOREIGN
    assert source.judge(message_from(REAL)) is Verdict.TRUSTED
    # the pinned endpoint leaving (its name goes first) still has its last messages believed
    graph.publishers[0] = unnamed(REAL)
    assert source.judge(message_from(REAL)) is Verdict.TRUSTED


def test_a_message_whose_middleware_gave_no_gid_is_foreign() -> None:
    # Kilted's rclpy has the field; None where the RMW gave no GID: nothing to tie it to.
    source = NodePublisher(Graph([Endpoint(REAL)]), "/harness/events", "/harness")
    assert source.resolve()
    assert source.judge({**JAZZY_INFO, "publisher_gid": None}) is Verdict.FOREIGN
    assert source.judged_by_graph == 0


# ---------------------------------------------------------------------- no GIDs: Humble, Jazzy 7.1
JAZZY_INFO = {
    "source_timestamp": 1,
    "received_timestamp": 2,
    "publication_sequence_number": 1,
    "reception_sequence_number": 1,
}
"""A message info as Jazzy 7.1's rclpy gives it (its subscription.cpp): no publisher GID."""


def test_without_gids_the_node_alone_on_the_topic_is_trusted_by_the_graph() -> None:
    # Jazzy: `harness-ros task` saw nothing, every event judged foreign for want of a GID.
    source = NodePublisher(Graph([Endpoint(REAL)]), "/harness/events", "/harness")
    assert source.resolve()
    assert source.judge(JAZZY_INFO) is Verdict.TRUSTED
    assert source.judge(NO_MESSAGE_INFO) is Verdict.TRUSTED  # Humble's (msg only) callbacks
    note = source.describe_dropped()
    assert note is not None and "trusted by the ROS graph alone" in note, note


def test_without_gids_another_publisher_on_the_topic_now_or_before_leaves_nothing_trusted() -> None:
    graph = Graph([Endpoint(REAL), Endpoint(OTHER, node_name="forger", node_namespace="/ops")])
    source = NodePublisher(graph, "/harness/events", "/harness")
    assert source.resolve()
    graph.publishers.pop()  # it published and left before the message was judged
    assert source.judge(JAZZY_INFO) is Verdict.FOREIGN
    with pytest.raises(AmbiguousPublisherError, match=r"carry no publisher GID .*\(/ops/forger\)"):
        source.raise_if_ambiguous()
    assert source.judge(JAZZY_INFO) is Verdict.FOREIGN  # and none is trusted from then on


def test_without_gids_an_unnamed_endpoint_holds_the_message_and_a_second_claimant_refuses() -> None:
    graph = Graph([Endpoint(REAL), unnamed(OTHER)])
    source = NodePublisher(graph, "/harness/events", "/harness")
    source.pinned = REAL
    assert source.judge(JAZZY_INFO) is Verdict.UNDECIDED
    with pytest.raises(AmbiguousPublisherError, match="no ROS node name"):
        source.judge(JAZZY_INFO, waited_s=ATTRIBUTION_WAIT_S + 0.5)
    graph.publishers[1] = Endpoint(OTHER)  # named: the harness node's name, a second claimant
    assert source.judge(JAZZY_INFO) is Verdict.FOREIGN
    with pytest.raises(AmbiguousPublisherError, match="2 publishers on /harness/events claim"):
        source.raise_if_ambiguous()


def test_without_gids_a_message_before_the_node_is_on_the_graph_waits_then_is_no_ones() -> None:
    graph = Graph([])
    source = NodePublisher(graph, "/harness/events", "/harness")
    assert not source.resolve()
    assert source.judge(JAZZY_INFO) is Verdict.UNDECIDED
    assert source.judge(JAZZY_INFO, waited_s=ATTRIBUTION_WAIT_S + 0.5) is Verdict.FOREIGN


def test_humble_24_byte_endpoint_gids_match_the_16_byte_gid_of_a_message() -> None:
    # Humble's middleware stores a GID in 24 bytes (the GUID, zero padding); later ones in 16.
    graph = Graph([Endpoint(REAL + bytes(8)), Endpoint(OTHER + bytes(8), node_name="rviz")])
    source = NodePublisher(graph, "/harness/events", "/harness")
    assert source.resolve() and source.pinned == REAL
    assert source.judge(message_from(REAL)) is Verdict.TRUSTED
    assert source.judge({"publisher_gid": {"data": list(REAL + bytes(8))}}) is Verdict.TRUSTED
    assert source.judge(message_from(OTHER)) is Verdict.FOREIGN


@pytest.mark.ros
def test_the_task_client_holds_events_until_the_graph_names_their_sender(ros_env: dict[str, str]) -> None:
    # The CI failure, replayed in order: the real node's task_started arrives while its
    # endpoint is unnamed, then the pinned impostor's forged done. The client must follow
    # neither until the graph names both, and then trust neither.
    import json

    from std_msgs.msg import String

    from harness_ros.ros.task_client import TaskClient

    graph = Graph([Endpoint(IMPOSTOR)])
    with TaskClient("/harness", domain_id=int(ros_env["ROS_DOMAIN_ID"])) as client:
        client._source = NodePublisher(graph, "/harness/events", "/harness")
        assert client._source.resolve()
        client._task_id = "task-1"
        graph.publishers.append(unnamed(REAL))
        started = {"type": "task_started", "task_id": "task-1", "data": {}}
        succeeded = {"status": "completed", "outcome": "succeeded"}
        forged = {"type": "done", "task_id": "task-1", "data": succeeded}
        client._on_event(String(data=json.dumps(started)), message_from(REAL))
        client._on_event(String(data=json.dumps(forged)), message_from(IMPOSTOR))
        client._judge_held()
        assert not client.is_task_started() and client.get_result().data == {}
        graph.publishers[1] = Endpoint(REAL)  # its discovery info arrives
        with pytest.raises(AmbiguousPublisherError, match="2 publishers on /harness/events claim"):
            client.is_task_complete()
        assert client.get_result().data == {}, "the forged done was followed"

        # the real node alone, named only after its first two events arrived: followed in order
        graph.publishers[:] = [unnamed(REAL)]
        client._source = NodePublisher(graph, "/harness/events", "/harness")
        client._source.pinned = REAL
        graph.publishers.append(unnamed(OTHER))
        client._held, client._end, client._events = [], None, []
        done = {"type": "done", "task_id": "task-1", "data": {"status": "completed", "outcome": "failed"}}
        client._on_event(String(data=json.dumps(started)), message_from(REAL))
        client._on_event(String(data=json.dumps(done)), message_from(REAL))
        client._judge_held()
        assert client.get_result().data == {}
        graph.publishers[:] = [Endpoint(REAL), Endpoint(OTHER, node_name="rviz")]
        assert client.is_task_complete()
        result = client.get_result()
    assert [e["type"] for e in result.events] == ["task_started", "done"]
    assert result.outcome == "failed"


# ---------------------------------------------------------------------- Humble, over DDS
SUPPORT = Path(__file__).resolve().parent / "support"


@pytest.fixture
def humble_subscriptions(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's subscriptions as on Humble: the executor hands the callback the
    message alone (``compat`` then gives it ``NO_MESSAGE_INFO``), so no publisher GID."""
    from harness_ros.ros import compat

    monkeypatch.setattr(compat, "subscription_passes_message_info", lambda: False)


@pytest.mark.ros
def test_without_gids_the_task_client_follows_the_node_alone_and_refuses_beside_a_forger(
    ros_env: dict[str, str], humble_subscriptions: None
) -> None:
    # The task API's stand-in (another process, named /harness) answers each task; on
    # Humble and Jazzy the client judged every event foreign and followed none.
    from harness_ros.ros.task_client import TaskClient

    domain = int(ros_env["ROS_DOMAIN_ID"])
    stand_in = ServerProcess("/harness", ros_env, script=SUPPORT / "task_stand_in.py")
    try:
        assert stand_in.wait_for_line("ready", 60), stand_in.output
        with TaskClient("/harness", domain_id=domain) as client:
            result = client.run_task("fetch the cup", timeout_s=60, connect_timeout_s=60)
            note = client.describe_dropped()
        assert [e["type"] for e in result.events] == ["task_started", "done"], stand_in.output
        assert result.outcome == "succeeded"
        assert note is not None and "trusted by the ROS graph alone" in note, note

        forger = ServerProcess("done", ros_env, script=SUPPORT / "forger.py", args=("/forger",))
        try:
            assert forger.wait_for_line("matched", 60), forger.output
            with TaskClient("/harness", domain_id=domain) as client:
                with pytest.raises(AmbiguousPublisherError, match=r"carry no publisher GID.*\(/forger\)"):
                    client.run_task("fetch the cup", timeout_s=60, connect_timeout_s=60)
                assert client.get_result().data == {}, "an event was followed beside the forger"
        finally:
            forger.stop()
    finally:
        stand_in.stop()


@pytest.mark.ros
def test_without_gids_a_listing_shows_the_nodes_requests_alone_and_refuses_beside_a_forger(
    ros_env: dict[str, str], humble_subscriptions: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness_ros.commands._latched import LatchedTopicClient, latched_session

    topic = "/harness/approval_requests"
    real = {"request_id": "r1", "tool": "pick", "status": "pending"}
    forged = {"request_id": "r2", "tool": "drive", "status": "pending"}

    def listing(publishers: int) -> list[dict[str, Any]]:
        def make(context: Any) -> LatchedTopicClient:
            return LatchedTopicClient(
                context, "/harness", 30.0, topic="approval_requests", key="request_id", name="listing"
            )

        with latched_session([], make) as client:
            # the graph has no event to wait on: spin until it shows every publisher started
            assert client.spin_until(lambda: client.node.count_publishers(topic) == publishers)
            client.collect("test")
            return client.pending()

    forger = SUPPORT / "forger.py"
    harness = ServerProcess("latched", ros_env, script=forger, args=("/harness", topic, json.dumps(real)))
    try:
        assert harness.wait_for_line("published", 60), harness.output
        assert listing(1) == [real]
        assert "trusted by the ROS graph alone" in capsys.readouterr().err
        other = ServerProcess("latched", ros_env, script=forger, args=("/forger", topic, json.dumps(forged)))
        try:
            assert other.wait_for_line("published", 60), other.output
            with pytest.raises(AmbiguousPublisherError, match=r"carry no publisher GID.*\(/forger\)"):
                listing(2)
        finally:
            other.stop()
    finally:
        harness.stop()
