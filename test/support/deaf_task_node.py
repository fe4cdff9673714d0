"""A stand-in for the harness node's task API that starts every task and never ends one.

    deaf_task_node.py NODE_NAME

A node named NODE_NAME with the task API's endpoints (``~/instruction``,
``~/cancel_task``, ``~/events``). Each instruction is answered with ``task_started``
(it prints ``started <id>``); a cancel is read and ignored (it prints ``ignored cancel
<id>``): no ``done`` ever comes, as from a node that hangs in a tool call. A client that
waits for the task's end, or for its cancel to be confirmed, waits for nothing.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def main(argv: list[str]) -> int:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from spinning_node import serve  # this folder is the script's sys.path[0]
    from std_msgs.msg import String

    from harness_ros.ros.node import EVENTS_QOS

    (node_name,) = argv
    rclpy.init()
    namespace, _, name = ("/" + node_name.strip("/")).rpartition("/")
    node = rclpy.create_node(name, namespace=namespace or "/")
    events = node.create_publisher(String, "~/events", EVENTS_QOS)

    def on_instruction(msg: Any) -> None:
        request = json.loads(msg.data)
        task_id = request["task_id"]
        data = {"instruction": request["instruction"], "model": "none (a stand-in)"}
        events.publish(String(data=json.dumps({"type": "task_started", "task_id": task_id, "data": data})))
        print(f"started {task_id}", flush=True)

    def on_cancel(msg: Any) -> None:
        print(f"ignored cancel {json.loads(msg.data).get('task_id')}", flush=True)

    node.create_subscription(String, "~/instruction", on_instruction, 10)
    node.create_subscription(String, "~/cancel_task", on_cancel, 10)
    return serve(node, SingleThreadedExecutor(), "ready")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
