"""Run one node process the ROS way: init, spin until shutdown, clean up.

For a node that is a process of its own (the simulated robots' nodes use it): a
construction error is one ``error:`` line and exit 1, Ctrl-C and an external shutdown
end quietly with 0.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.utilities import remove_ros_args

from harness_ros.errors import HarnessError
from harness_ros.ros.compat import ros_init

__all__ = ["ros_args_only", "spin_node_process"]


def spin_node_process(name: str, make_node: Callable[[], Node], ros_args: list[str] | None = None) -> int:
    """Init rclpy, build the node with ``make_node``, spin it with 4 threads until shutdown."""
    try:
        with ros_init(args=[name, *(ros_args or [])]):
            try:
                node = make_node()
            except HarnessError as err:
                sys.stderr.write(f"error: {err}\n")
                return 1
            executor = MultiThreadedExecutor(num_threads=4)
            executor.add_node(node)
            try:
                executor.spin()
            finally:
                node.destroy_node()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    return 0


def ros_args_only(name: str, args: list[str] | None) -> list[str] | None:
    """The ``--ros-args ...`` part of a command line; None (after an ``error:`` line) when
    anything else is there: these nodes take their settings as ROS parameters only."""
    argv = sys.argv[1:] if args is None else args
    extra = remove_ros_args(args=[name, *argv])[1:]
    if extra:
        sys.stderr.write(
            f"error: unexpected arguments {extra!r}; set parameters with --ros-args -p NAME:=VALUE\n"
        )
        return None
    return argv[argv.index("--ros-args") :] if "--ros-args" in argv else []
