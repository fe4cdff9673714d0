"""Bind configs at start-up, as the node does, in a process of one ROS distribution.

    python test/support/distro_client.py SPEC_JSON

run with test/support/ros_distros.py's environment for the distribution, so the
nav2_msgs / control_msgs it imports are that distribution's. SPEC_JSON:
``{"configs": {LABEL: PATH}, "samples": {LABEL: {TOOL: ARGUMENTS}}, "run": false}`` (with
``"run": true`` also ``"sim_time_ns"``, the /clock the servers publish).

For each config: ``load_config`` and ``build_ros_tools`` on a real node (the node's
start-up path: schema, result and feedback fields, error-code field, every lookup
entry's goal built), then per tool one line ``tool LABEL NAME JSON`` with the type, what
the tool reads of the result, and the goal it builds for its sample arguments (the
message as message_to_jsonable gives it; the node uses sim time with no /clock, so a
stamp reads 0). A config that fails prints ``error LABEL MESSAGE``.

With ``"run": true`` it waits for the servers' /clock, then for each tool's server, and
runs the tool with its sample arguments: ``envelope LABEL NAME JSON``. ``done`` ends the output.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import rclpy
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter
from spinning_node import spinning_node  # this folder is the script's sys.path[0]

from harness_ros.config import load_config
from harness_ros.errors import HarnessError
from harness_ros.ros.distros import installed_distro
from harness_ros.ros.interfaces import message_to_jsonable
from harness_ros.ros.ros_tools import build_ros_tools
from harness_ros.tools.contracts import CancelToken

DISCOVERY_S = 10.0


def say(text: str) -> None:
    print(text, flush=True)


def describe(tool: Any, sample: dict[str, Any] | None) -> dict[str, Any]:
    binding = tool._binding
    out: dict[str, Any] = {
        "type": binding.type,
        "error_code_field": tool._error_code_field,
        "message_field": tool._message_field,
        "result_fields": sorted(tool._result_fields or {}),
        "feedback_fields": sorted(tool._feedback_fields or {}),
        "schema": tool.spec.input_schema,
    }
    if sample is not None:
        out["goal"] = message_to_jsonable(tool._build_request(sample))
    return out


def wait_for_server(tool: Any) -> bool:
    client = tool._client
    if hasattr(client, "wait_for_server"):
        return bool(client.wait_for_server(timeout_sec=DISCOVERY_S))
    return bool(client.wait_for_service(timeout_sec=DISCOVERY_S))


def wait_for_sim_time(node: Node, wanted_ns: int) -> bool:
    """Wait (bounded) until the node clock follows the server's /clock."""
    tick = threading.Event()
    for _ in range(int(DISCOVERY_S / 0.02)):
        if node.get_clock().now().nanoseconds == wanted_ns:
            return True
        tick.wait(0.02)
    return False


def main() -> int:
    spec = json.loads(sys.argv[1])
    context = Context()
    rclpy.init(context=context)
    try:
        with spinning_node(context, "distro_client") as node:
            node.set_parameters([Parameter("use_sim_time", Parameter.Type.BOOL, True)])
            run(spec, node)
    finally:
        context.try_shutdown()
    say("done")
    return 0


def run(spec: dict[str, Any], node: Node) -> None:
    say(f"distro nav2_msgs {installed_distro('nav2_msgs')}")
    say(f"distro control_msgs {installed_distro('control_msgs')}")
    for label, path in spec["configs"].items():
        try:
            config = load_config(path)
            tools = build_ros_tools(node, config.tools)
        except HarnessError as err:
            say(f"error {label} {err}")
            continue
        samples = spec["samples"].get(label, {})
        for tool in tools:
            sample = samples.get(tool.spec.name)
            say(f"tool {label} {tool.spec.name} {json.dumps(describe(tool, sample), sort_keys=True)}")
        if spec.get("run"):
            if not wait_for_sim_time(node, int(spec["sim_time_ns"])):
                say("error clock: the node clock never followed /clock")
            for tool in tools:
                sample = samples.get(tool.spec.name)
                if sample is None:
                    continue
                if not wait_for_server(tool):
                    say(f"envelope {label} {tool.spec.name} " + json.dumps({"missing": True}))
                    continue
                envelope = tool.execute(sample, cancel=CancelToken())
                say(f"envelope {label} {tool.spec.name} {json.dumps(envelope, sort_keys=True)}")
        for tool in tools:
            tool.destroy()


if __name__ == "__main__":
    sys.exit(main())
