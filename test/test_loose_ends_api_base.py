"""URL credentials in model.api_base stay on the node (issue 47, items 5 and 6, loose end):
a node started with ``model.api_base:=http://user:pw@127.0.0.1:9/v1`` never shows the
password in its log, on /parameter_events or in its parameter listing (~/get_parameters);
the parameter holds the URL with the credentials masked."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from support.node_log import NodeProcess

SECRET = "s3cretPw"
API_BASE = f"http://user:{SECRET}@127.0.0.1:9/v1"


@pytest.mark.ros
def test_the_api_base_password_reaches_no_log_topic_or_parameter(
    tmp_path: Path, ros_context: Any, ros_env: dict[str, str]
) -> None:
    from rcl_interfaces.msg import ParameterEvent
    from rcl_interfaces.srv import GetParameters
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import qos_profile_parameter_events

    observer = Node("api_base_observer", context=ros_context)
    seen: list[str] = []
    observer.create_subscription(
        ParameterEvent, "/parameter_events", lambda msg: seen.append(str(msg)), qos_profile_parameter_events
    )
    client = observer.create_client(GetParameters, "/harness/get_parameters")
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(observer)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()

    config = tmp_path / "robot.yaml"
    config.write_text(
        f"memory: {{dir: {tmp_path / 'memory'}}}\nharness: {{runs_dir: {tmp_path / 'runs'}}}\n"
        "graph_check_timeout_s: 0.0\nmodel: {model: openai/test-model}\n",
        encoding="utf-8",
    )
    env = dict(ros_env, OPENAI_API_KEY="not-used-here")
    node = NodeProcess(["--config", str(config), "--ros-args", "-p", f"model.api_base:={API_BASE}"], env)
    try:
        configured = node.wait_for("]: configured: model", 60)
        assert configured, node.output
        assert client.wait_for_service(timeout_sec=30)
        request = GetParameters.Request(names=["model.api_base"])
        done = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _: done.set())
        assert done.wait(30)
        (value,) = future.result().values
        assert value.string_value == "http://***@127.0.0.1:9/v1"
    finally:
        output = node.stop()
        executor.shutdown()
        observer.destroy_node()
    assert "configured: model 'openai/test-model'" in output
    assert SECRET not in output
    # what /parameter_events carried once discovery was done (declarations at start-up may go
    # out before it is): no password either
    assert seen and not [event for event in seen if SECRET in event]
