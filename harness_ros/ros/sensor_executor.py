"""A companion node for the sensor subscriptions, spun by its own single-threaded executor.

Why: camera, depth and scan messages arrive at 50 to 100 per second, and on the node's
MultiThreadedExecutor each one is handed to a pool thread as a task, under the GIL with
the other threads. Measured over 30 minutes (BENCHMARKS.md, section 2) with the same
3 x VGA + depth + scan load and the same delivered rates, a single-threaded executor
took 5 to 6% of a core instead of 26 to 31%, and the RSS settled at about 111 MB instead
of 130 to 133 MB. The callbacks only store the newest message, so one thread is plenty.

rclpy cannot give one node's callback groups to two executors, hence a second node,
``<name>_sensors`` in the same namespace. It is created without the process's global
arguments: a launch file's ``__node:=harness`` rename applies to every node of the
process, and two nodes named ``harness`` would collide. Topic names are therefore resolved
(namespace, ``~``, remapping) by the main node before the companion subscribes to them;
freshness uses the main node's clock, so ``use_sim_time`` keeps working.
"""

from __future__ import annotations

import threading

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node

__all__ = ["SensorNode"]

_SPIN_PERIOD_S = 0.1


class SensorNode:
    """``<main>_sensors``: a node with its own SingleThreadedExecutor in a daemon thread."""

    def __init__(self, main: Node) -> None:
        self._logger = main.get_logger()
        self.node = rclpy.create_node(
            f"{main.get_name()}_sensors",
            namespace=main.get_namespace(),
            context=main.context,
            use_global_arguments=False,
            start_parameter_services=False,
        )
        self._executor = SingleThreadedExecutor(context=main.context)
        self._executor.add_node(self.node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name=f"{self.node.get_name()}_spin", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        # spin_once in a loop, not spin(): destroy() stops the loop before it shuts the
        # executor down, which spin() would race with (InvalidHandle in this thread)
        while not self._stop.is_set() and self.node.context.ok():
            try:
                self._executor.spin_once(timeout_sec=_SPIN_PERIOD_S)
            except (KeyboardInterrupt, ExternalShutdownException):
                return
            except Exception as err:  # noqa: BLE001 - a callback's bug must not stop the sensors
                self._logger.error(f"sensor callback failed: {err!r}", throttle_duration_sec=5.0)

    def destroy(self) -> None:
        """Stop the spin thread, then destroy the node (its subscriptions first)."""
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._executor.remove_node(self.node)
        self._executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
