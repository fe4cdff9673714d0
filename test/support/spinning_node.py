"""A client node spun by a MultiThreadedExecutor in a thread, as the harness node is."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def spinning_node(context: Any, name: str) -> Iterator[Any]:
    """A node named ``name`` in ``context``, spinning until the block ends."""
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.node import Node

    node = Node(name, context=context)
    executor = MultiThreadedExecutor(context=context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        yield node
    finally:
        executor.remove_node(node)
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        spinner.join(timeout=2.0)
