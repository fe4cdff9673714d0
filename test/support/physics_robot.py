"""The MuJoCo Stretch 3 (``harness_ros_sim.ros.physics_node``) as a test's own process, and
one action goal run to its result: what the physics tests over DDS share."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from support.processes import stop_process


@contextmanager
def physics_node(
    env: dict[str, str], *, width: int, height: int, rate_hz: float, speed: float = 4.0
) -> Iterator[subprocess.Popen[str]]:
    """The physics robot on ``env``'s domain, rendering ``width`` x ``height`` at ``rate_hz``;
    terminated (killed after 10 s) when the block ends."""
    command = [
        sys.executable, "-m", "harness_ros_sim.ros.physics_node", "--ros-args",
        "-p", f"speed:={speed}", "-p", f"image_width:={width}", "-p", f"image_height:={height}",
        "-p", f"rate_hz:={rate_hz}",
    ]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield process
    finally:
        stop_process(process)


def run_goal(client: Any, goal: Any, wait_s: float) -> tuple[int, Any]:
    """Send ``goal`` on the action ``client``; its (status, result) once done. Asserts it was
    answered within ``wait_s``, accepted, and done within twice that."""
    accepted = threading.Event()
    send = client.send_goal_async(goal)
    send.add_done_callback(lambda _f: accepted.set())
    assert accepted.wait(wait_s), "goal was not answered"
    handle = send.result()
    assert handle.accepted
    done = threading.Event()
    result = handle.get_result_async()
    result.add_done_callback(lambda _f: done.set())
    assert done.wait(wait_s * 2), "no result"
    return result.result().status, result.result().result
