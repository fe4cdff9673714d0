"""A DDS test's domain holds no node of an earlier test: each reservation of a run gets
another ROS_DOMAIN_ID than the previous one, and a test node released by the shared
helper leaves the graph even while its action client is still referenced.

Both were why test_graph_check_hints's "nothing visible" test saw '/evidence_test', a
node of test_evaluation_state_ros, in the serial DDS phase of ``make test``.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import reserve_domain
from support.spinning_node import spinning_node
from support.waiting import wait_for

DISCOVERY_S = 20.0


def test_consecutive_reservations_of_a_run_get_different_domains() -> None:
    with reserve_domain() as first:
        pass
    with reserve_domain() as second:
        pass
    with reserve_domain() as third:
        pass
    assert len({first, second, third}) == 3, (first, second, third)
    assert all(1 <= domain <= 100 for domain in (first, second, third))


def test_a_released_node_leaves_the_graph_though_its_action_client_is_still_referenced(
    ros_context: Any, ros_env: dict[str, str]
) -> None:
    pytest.importorskip("rclpy")
    import rclpy
    from nav2_msgs.action import Spin
    from rclpy.action import ActionClient
    from rclpy.context import Context
    from rclpy.node import Node

    observer_context = Context()
    rclpy.init(context=observer_context, domain_id=int(ros_env["ROS_DOMAIN_ID"]))
    observer = Node("domain_observer", context=observer_context)
    try:

        def visible() -> set[str]:
            return {name for name, _ in observer.get_node_names_and_namespaces()}

        with spinning_node(ros_context, "released_test_node") as node:
            # as a test's tool dict or a reference cycle would keep it
            client = ActionClient(node, Spin, "/spin")
            assert wait_for(lambda: "released_test_node" in visible(), DISCOVERY_S)
        assert wait_for(lambda: "released_test_node" not in visible(), DISCOVERY_S), visible()
        assert client is not None
    finally:
        observer.destroy_node()
        observer_context.try_shutdown()
