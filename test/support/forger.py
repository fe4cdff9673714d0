"""Another participant on the domain that publishes look-alike harness messages.

    forger.py done NODE_NAME          on the first task_started seen on /harness/events,
                                      publish {"type": "done", "outcome": "succeeded"} under
                                      that task id (again every 0.2 s until stopped)
    forger.py latched NODE_NAME TOPIC JSON...
                                      publish each JSON body on TOPIC, transient-local
                                      (as the harness node's latched request topics are)

NODE_NAME is this process's node name: a name of its own, or the harness node's name
(an impostor). It prints ``matched`` once its subscription matched the harness node's
events publisher, and ``forged <task id>`` / ``published`` once it has published.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any


def main(argv: list[str]) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from std_msgs.msg import String

    mode, node_name, *rest = argv
    rclpy.init()
    namespace, _, name = ("/" + node_name.strip("/")).rpartition("/")
    node = rclpy.create_node(name, namespace=namespace or "/")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    if mode == "done":
        from harness_ros.ros.node import EVENTS_QOS

        publisher = node.create_publisher(String, "/harness/events", EVENTS_QOS)
        forged: list[str] = []

        def on_event(msg: Any) -> None:
            event = json.loads(msg.data)
            if event.get("type") == "task_started" and not forged:
                forged.append(event["task_id"])

        def forge() -> None:
            if not forged:
                return
            done = {
                "type": "done",
                "task_id": forged[0],
                "data": {"status": "completed", "outcome": "succeeded", "report": "all done"},
            }
            publisher.publish(String(data=json.dumps(done)))
            if len(forged) == 1:
                forged.append("printed")
                print(f"forged {forged[0]}", flush=True)

        events = node.create_subscription(String, "/harness/events", on_event, EVENTS_QOS)
        matched: list[bool] = []

        def forge_when_matched() -> None:
            # Its own publisher and the harness node's: from here on no task_started is missed
            # (a volatile message sent before the match never arrives).
            if not matched and events.get_publisher_count() >= 2:
                matched.append(True)
                print("matched", flush=True)
            forge()

        node.create_timer(0.2, forge_when_matched)
    else:
        from harness_ros.ros.qos import OPERATOR_LATCHED_QOS

        topic, *bodies = rest
        publisher = node.create_publisher(String, topic, OPERATOR_LATCHED_QOS)
        for body in bodies:
            publisher.publish(String(data=body))
        print("published", flush=True)
    stop = threading.Event()
    try:
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
