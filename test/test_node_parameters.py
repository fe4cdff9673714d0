"""The harness node's ROS parameters: read-only at run time but a short allowlist; a params file alone works.

Parameters are changed the way a user would: through the node's standard
``~/set_parameters`` service from another node, over DDS.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_ros.config import load_config

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "config" / "example.yaml"
PARAMS_FILE = REPO / "config" / "harness_params.yaml"

pytestmark = pytest.mark.ros


def write_config(tmp_path: Path) -> Path:
    path = tmp_path / "harness.yaml"
    path.write_text(
        f"memory: {{dir: {tmp_path / 'memory'}}}\n"
        f"harness: {{runs_dir: {tmp_path / 'runs'}, max_turns: 7}}\n"
        "safety: {margin_m: 0.15, max_translation_m: 1.5}\n"
        "observations: {clearance: {scan_topic: /scan}}\n"
        "graph_check_timeout_s: 0\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def spun(ros_context: Any, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """(harness node, a client node) spinning in one executor thread."""
    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    from harness_ros.ros.node import HarnessNode

    node = HarnessNode(config_path=write_config(tmp_path), context=ros_context)
    client = rclpy.create_node("parameter_client", context=ros_context)
    executor = MultiThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(client)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        yield node, client
    finally:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        client.destroy_node()
        spinner.join(timeout=2.0)


def set_remotely(client: Any, values: dict[str, Any]) -> list[Any]:
    """Call /harness/set_parameters from another node; one result per parameter."""
    from rcl_interfaces.srv import SetParameters
    from rclpy.parameter import Parameter

    service = client.create_client(SetParameters, "/harness/set_parameters")
    assert service.wait_for_service(timeout_sec=15.0)
    request = SetParameters.Request(
        parameters=[Parameter(name, value=value).to_parameter_msg() for name, value in values.items()]
    )
    future = service.call_async(request)
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    assert done.wait(15.0), "set_parameters did not answer"
    return list(future.result().results)


def test_safety_parameters_cannot_be_weakened_at_run_time(spun: tuple[Any, Any]) -> None:
    # Finding: set_parameters then cleanup/configure/activate applied margin_m 0 and
    # max_translation_m 1e9, and could rewrite the tool bindings.
    from rclpy.lifecycle import TransitionCallbackReturn

    node, client = spun
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert node.config.safety.margin_m == 0.15

    weakening = {
        "safety.margin_m": 0.0,
        "safety.max_translation_m": 1e9,
        "tools": "[]\n",
        "observations.clearance.scan_topic": "/fake_scan",
        "task_api.max_message_bytes": 1_000_000,
        "config_file": "/tmp/other.yaml",
    }
    results = set_remotely(client, weakening)
    assert [r.successful for r in results] == [False] * len(weakening)
    assert all("read-only" in r.reason for r in results), [r.reason for r in results]
    # An allowlisted setting still changes at run time, in the direction that cannot widen.
    (turns,) = set_remotely(client, {"harness.max_turns": 5})
    assert turns.successful

    # Lifecycle re-configure: the new turn limit, the same safety.
    assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert node.config.harness.max_turns == 5
    assert node.config.safety.margin_m == 0.15
    assert node.config.safety.max_translation_m == 1.5
    assert node.config.observations.clearance is not None
    assert node.config.observations.clearance.scan_topic == "/scan"
    assert node.get_parameter("safety.margin_m").value == 0.15


def test_only_the_run_time_allowlist_changes_and_only_within_its_rule(spun: tuple[Any, Any]) -> None:
    from rclpy.lifecycle import TransitionCallbackReturn

    from harness_ros.config import RUN_TIME_PARAMETERS

    node, client = spun
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    refused = {
        "harness.max_turns": (8, "may only be lowered"),  # start-up 7
        "harness.task_timeout_s": (1e6, "may only be lowered"),
        "observations.jpeg_quality": (500, "observations.jpeg_quality"),  # out of the model's range
        "use_sim_time": (True, "read-only at run time"),  # rclpy's own: would swap every clock
        "graph_check_timeout_s": (5.0, "read-only at run time"),
    }
    for name, (value, why) in refused.items():
        (result,) = set_remotely(client, {name: value})
        assert not result.successful, name
        assert repr(name) in result.reason and why in result.reason, result.reason
    assert node.get_parameter("use_sim_time").value is False
    results = set_remotely(
        client, {"harness.max_turns": 3, "harness.task_timeout_s": 60.0, "observations.jpeg_quality": 40}
    )
    assert [r.successful for r in results] == [True, True, True], [r.reason for r in results]
    assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert (node.config.harness.max_turns, node.config.harness.task_timeout_s) == (3, 60.0)
    assert node.config.observations.jpeg_quality == 40
    # Every declared parameter but the allowlist says read-only to `ros2 param describe`.
    writable = {name for name in node._config_keys if not node.describe_parameter(name).read_only}
    assert writable == set(RUN_TIME_PARAMETERS)


def test_every_config_key_is_declared_with_its_description(spun: tuple[Any, Any]) -> None:
    node, _ = spun
    names = set(node._parameters)
    for key in (
        "observations.depth.topic",
        "observations.clearance.range_topics.left",
        "task_api.max_json_depth",
    ):
        assert key in names, key
    descriptor = node.describe_parameter("observations.depth.topic")
    assert "Depth image topic" in descriptor.description
    assert node.describe_parameter("safety.margin_m").read_only
    assert not node.describe_parameter("harness.max_turns").read_only


def test_a_params_file_alone_configures_like_the_yaml(
    ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Finding: started with only --params-file, depth and clearance came out None (their
    # keys were never declared) and base motion was always blocked, with no warning.
    import rclpy
    from rclpy.context import Context

    from harness_ros.ros.node import HarnessNode

    monkeypatch.chdir(EXAMPLE.parent)  # without config_file, relative paths use the working folder
    context = Context()
    rclpy.init(
        args=["harness_node", "--ros-args", "--params-file", str(PARAMS_FILE)],
        context=context,
        domain_id=int(ros_env["ROS_DOMAIN_ID"]),
    )
    try:
        node = HarnessNode(context=context)
        try:
            from_params = node._config_from_parameters()
        finally:
            node.destroy_node()
    finally:
        context.try_shutdown()
    expected = load_config(EXAMPLE)
    assert from_params.observations.depth is not None
    assert from_params.observations.clearance is not None
    assert from_params.model_dump(exclude={"source"}) == expected.model_dump(exclude={"source"})


def test_configure_warns_when_a_source_is_missing(
    ros_context: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from rclpy.lifecycle import TransitionCallbackReturn

    from harness_ros.ros.node import HarnessNode

    config = tmp_path / "bare.yaml"
    config.write_text(f"memory: {{dir: {tmp_path / 'm'}}}\ngraph_check_timeout_s: 0\n", encoding="utf-8")
    node = HarnessNode(config_path=config, context=ros_context)
    warnings: list[str] = []
    node.get_logger().warning = lambda message, **_: warnings.append(message)  # type: ignore[method-assign]
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    finally:
        node.destroy_node()
    text = "\n".join(warnings)
    assert "no camera view configured" in text
    assert "no depth topic configured (observations.depth.topic)" in text
    assert "no clearance source configured" in text
