"""A client node spun by a MultiThreadedExecutor in a thread, as the harness node is;
and ``serve``, the main loop of the support scripts that stand in for a robot's servers."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def spinning_node(context: Any, name: str) -> Iterator[Any]:
    """A node named ``name`` in ``context``, spinning until the block ends."""
    from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
    from rclpy.node import Node

    node = Node(name, context=context)
    executor = MultiThreadedExecutor(context=context)
    executor.add_node(node)

    def spin() -> None:
        # As the harness node does (_spin_until_shutdown): rclpy's ActionClient joins the
        # node's waitables before it creates its lock, so a test that creates one while
        # this thread waits can make one spin raise AttributeError; keep spinning.
        while context.ok():
            try:
                executor.spin()
                return
            except ExternalShutdownException:
                return
            except Exception as err:  # see above
                print(f"spinning_node {name}: a spin raised {err!r}; spinning on", file=sys.stderr)

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        yield node
    finally:
        executor.remove_node(node)
        release_node(node, executor, spinner)


def release_node(node: Any, executor: Any, spinner: threading.Thread | None, timeout_s: float = 2.0) -> None:
    """Stop ``executor`` and its ``spinner`` thread, then destroy ``node`` with its waitables.

    rclpy's destroy_node() leaves the node's waitables (action clients) alone, and an
    ActionClient holds the node's rcl handle: while one lives, so do the node and its DDS
    participant, seen on the domain by the next test (test_graph_check_hints saw a
    leftover '/evidence_test'). They are destroyed here once the spinner has let go of
    them (freeing one while an executor builds its wait set can crash it); if the spinner
    (if any) does not stop in ``timeout_s``, they are left to the garbage collector."""
    executor.shutdown(timeout_sec=timeout_s)
    if spinner is not None:
        spinner.join(timeout=timeout_s)
    if spinner is None or not spinner.is_alive():
        for waitable in list(node.waitables):
            destroy = getattr(waitable, "destroy", None)  # rclpy's Waitable base has none
            if destroy is not None:
                destroy()
    node.destroy_node()


def serve(node: Any, executor: Any, *ready: str) -> int:
    """Spin ``node`` on ``executor`` in this process, after printing each of ``ready`` (the
    lines the test waits for), until Ctrl-C or an external shutdown; then destroy the node
    and shut rclpy down. The main loop of a support script run as its own process."""
    import rclpy
    from rclpy.executors import ExternalShutdownException

    executor.add_node(node)
    for line in ready:
        print(line, flush=True)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
