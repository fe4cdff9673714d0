"""A stand-in for the harness node's task API that loses each task's first instruction.

    task_stand_in.py NODE_NAME

A node named NODE_NAME with the task API's endpoints (``~/instruction``,
``~/cancel_task``, ``~/events``). The first instruction of each task id is dropped, as
DDS drops a volatile message sent before both sides matched (it prints ``dropped <id>``);
the second is answered with ``task_started`` and a ``done`` that succeeded (it prints
``answered <id>``). A client that sends its instruction once never hears back.
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
    seen: set[str] = set()

    def publish(kind: str, task_id: str, data: dict[str, Any]) -> None:
        events.publish(String(data=json.dumps({"type": kind, "task_id": task_id, "data": data})))

    def on_instruction(msg: Any) -> None:
        request = json.loads(msg.data)
        task_id = request["task_id"]
        if task_id not in seen:
            seen.add(task_id)
            print(f"dropped {task_id}", flush=True)
            return
        publish("task_started", task_id, {"instruction": request["instruction"]})
        publish("done", task_id, {"status": "completed", "outcome": "succeeded", "report": "stand-in"})
        print(f"answered {task_id}", flush=True)

    node.create_subscription(String, "~/instruction", on_instruction, 10)
    node.create_subscription(String, "~/cancel_task", lambda _msg: None, 10)
    return serve(node, SingleThreadedExecutor(), "ready")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
