"""The harness node under a lifecycle manager, and its state outside the install tree.

The node runs in its own process from a simulated colcon install (``<prefix>/share/
harness_ros`` with the shipped config); this test process plays the lifecycle manager
through the standard ``~/get_state`` and ``~/change_state`` services (lifecycle_msgs),
as nav2's lifecycle_manager or ``ros2 lifecycle set`` would.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.install_tree import make_install
from support.spinning_node import spinning_node
from support.waiting import wait_for as wait_until

from harness_ros.testing.loopback_llm import LoopbackLLMServer, finish_reply

REPO = Path(__file__).resolve().parents[1]
HARNESS_ROS = str(Path(sys.executable).with_name("harness-ros"))
NODE = "/harness"

pytestmark = pytest.mark.ros


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and modification time."""
    return {
        str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
    }


def node_log(tmp_path: Path) -> str:
    return "node log:\n" + (tmp_path / "node.log").read_text(errors="replace")


class LifecycleClient:
    """``~/get_state`` and ``~/change_state`` of one node, called from this process."""

    def __init__(self, node: Any, target: str) -> None:
        from lifecycle_msgs.srv import ChangeState, GetState

        self._node = node
        self.get = node.create_client(GetState, f"{target}/get_state")
        self.change = node.create_client(ChangeState, f"{target}/change_state")

    def wait(self, timeout_s: float) -> bool:
        return self.get.wait_for_service(timeout_sec=timeout_s) and self.change.wait_for_service(
            timeout_sec=timeout_s
        )

    def state(self) -> str:
        from lifecycle_msgs.srv import GetState

        response = self._call(self.get, GetState.Request())
        return str(response.current_state.label)

    def transition(self, transition_id: int) -> bool:
        from lifecycle_msgs.srv import ChangeState

        request = ChangeState.Request()
        request.transition.id = transition_id
        return bool(self._call(self.change, request).success)

    @staticmethod
    def _call(client: Any, request: Any) -> Any:
        done = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _: done.set())
        # Configure waits out the node's graph check: allow for it.
        assert done.wait(60.0), f"no answer from {client.srv_name}"
        return future.result()


@pytest.fixture
def node_process(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        log = (tmp_path / "node.log").open("wb")
        proc = subprocess.Popen([HARNESS_ROS, "node", *args], env=env, stdout=log, stderr=subprocess.STDOUT)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.terminate()
    for proc in started:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def test_lifecycle_manager_drives_the_node_and_the_install_stays_untouched(
    tmp_path: Path,
    ros_env: dict[str, str],
    ros_context: Any,
    node_process: Callable[..., subprocess.Popen[bytes]],
    request: pytest.FixtureRequest,
) -> None:
    from lifecycle_msgs.msg import Transition
    from std_msgs.msg import String

    from harness_ros.ros.node import EVENTS_QOS

    share = make_install(tmp_path / "install")
    before = snapshot(tmp_path / "install")
    ros_home = tmp_path / "ros_home"
    env = {
        **ros_env,
        "ROS_HOME": str(ros_home),
        "AMENT_PREFIX_PATH": str(tmp_path / "install"),
        "LOOPBACK_TOKEN": "not-a-real-key",
    }
    state = ros_home / "harness_ros" / "harness"
    # example.yaml sets no model: the loopback server ends each task with finish_task.
    llm = LoopbackLLMServer(lambda body: finish_reply("I see the room; nothing to do."))
    llm.__enter__()
    request.addfinalizer(llm.close)
    node = node_process(
        [
            "--config",
            str(share / "config" / "example.yaml"),
            "--ros-args",
            "-p",
            "autostart:=false",
            "-p",
            "graph_check_timeout_s:=0.0",
            "-p",
            "model.model:=openai/loopback",
            "-p",
            f"model.api_base:={llm.url}",
            "-p",
            "model.api_key_env:=LOOPBACK_TOKEN",
        ],
        env,
    )

    with spinning_node(ros_context, "lifecycle_manager_under_test") as manager:
        lifecycle = LifecycleClient(manager, NODE)
        assert lifecycle.wait(60.0), node_log(tmp_path)
        instruction_subscribers = lambda: manager.count_subscribers(f"{NODE}/instruction")  # noqa: E731

        # autostart:=false: the node waits, unconfigured, and has touched no state yet.
        assert lifecycle.state() == "unconfigured"
        assert not state.exists()

        assert lifecycle.transition(Transition.TRANSITION_CONFIGURE)
        assert lifecycle.state() == "inactive"
        # Configured: memory is seeded from the shipped template into ROS_HOME.
        seeded = state / "memory" / "MEMORY.md"
        assert seeded.read_bytes() == (share / "memory" / "MEMORY.md").read_bytes()
        assert instruction_subscribers() == 0, "inactive: no task is accepted"

        assert lifecycle.transition(Transition.TRANSITION_ACTIVATE)
        assert lifecycle.state() == "active"
        assert wait_until(lambda: instruction_subscribers() == 1, 10.0)

        # A task while active writes its run log under ROS_HOME too.
        events: list[dict[str, Any]] = []
        done = threading.Event()

        def on_event(msg: String) -> None:
            event = json.loads(msg.data)
            events.append(event)
            if event["type"] == "done":
                done.set()

        manager.create_subscription(String, f"{NODE}/events", on_event, EVENTS_QOS)
        publisher = manager.create_publisher(String, f"{NODE}/instruction", 10)
        assert wait_until(lambda: publisher.get_subscription_count() == 1, 10.0)
        assert wait_until(lambda: manager.count_publishers(f"{NODE}/events") == 1, 10.0)
        # Until the node answers for t1: the first message may race DDS matching.
        for _ in range(5):
            publisher.publish(
                String(data=json.dumps({"instruction": "report what you see", "task_id": "t1"}))
            )
            if wait_until(lambda: any(e["task_id"] == "t1" for e in events), 3.0):
                break
        assert done.wait(60.0), node_log(tmp_path)
        assert [e["type"] for e in events if e["type"] == "task_rejected"] == [], events
        assert (state / "runs" / "t1" / "events.jsonl").is_file()

        assert lifecycle.transition(Transition.TRANSITION_DEACTIVATE)
        assert lifecycle.state() == "inactive"
        assert wait_until(lambda: instruction_subscribers() == 0, 10.0)

        assert lifecycle.transition(Transition.TRANSITION_CLEANUP)
        assert lifecycle.state() == "unconfigured"
        # Configure again after cleanup: the manager may cycle the node.
        assert lifecycle.transition(Transition.TRANSITION_CONFIGURE)
        assert lifecycle.state() == "inactive"

    assert node.poll() is None, "the node keeps running between transitions"
    log = (tmp_path / "node.log").read_text(errors="replace")
    assert f"memory.dir: {share / 'memory'} is in the install share; using {state / 'memory'}" in log
    assert snapshot(tmp_path / "install") == before, "nothing is written into the install"


def test_autostart_is_the_default_and_explicit_paths_are_kept(
    tmp_path: Path,
    ros_env: dict[str, str],
    ros_context: Any,
    node_process: Callable[..., subprocess.Popen[bytes]],
) -> None:
    config = tmp_path / "robot.yaml"
    config.write_text(
        f"memory: {{dir: {tmp_path / 'memory'}}}\n"
        f"harness: {{runs_dir: {tmp_path / 'runs'}}}\n"
        "graph_check_timeout_s: 0.0\n",
        encoding="utf-8",
    )
    env = {**ros_env, "ROS_HOME": str(tmp_path / "ros_home")}
    node_process(["--config", str(config)], env)

    with spinning_node(ros_context, "lifecycle_observer") as observer:
        lifecycle = LifecycleClient(observer, NODE)
        assert lifecycle.wait(60.0), node_log(tmp_path)
        # run_node configures and activates before it serves: the first answer is final.
        assert lifecycle.state() == "active", node_log(tmp_path)

    assert (tmp_path / "memory").is_dir(), f"an explicit memory.dir is used as given\n{node_log(tmp_path)}"
    ros_home = tmp_path / "ros_home"
    assert not ros_home.exists(), f"{sorted(map(str, ros_home.rglob('*')))}\n{node_log(tmp_path)}"
