"""RosApprovalProvider answered by a second node, and by ``harness-ros approve``."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from support.waiting import wait_on

pytest.importorskip("rclpy")

pytestmark = pytest.mark.ros

HARNESS = "harness_test"
WAIT_S = 10.0


class Operator:
    """A second node: sees the latched requests, publishes decisions."""

    def __init__(self, node: Any) -> None:
        from std_msgs.msg import String

        from harness_ros.ros.approval import DECISION_QOS, REQUESTS_QOS

        self.node = node
        self.requests: list[dict[str, Any]] = []
        self.changed = threading.Condition()
        node.create_subscription(String, f"/{HARNESS}/approval_requests", self._on_request, REQUESTS_QOS)
        self.publisher = node.create_publisher(String, f"/{HARNESS}/approval_decisions", DECISION_QOS)

    def _on_request(self, msg: Any) -> None:
        with self.changed:
            self.requests.append(json.loads(msg.data))
            self.changed.notify_all()

    def wait_for(self, status: str, count: int = 1) -> list[dict[str, Any]]:
        ok = wait_on(
            self.changed, lambda: len([r for r in self.requests if r["status"] == status]) >= count, WAIT_S
        )
        assert ok, f"no {status!r} request seen ({ok!r}): {self.requests}"
        return [r for r in self.requests if r["status"] == status]

    def send(self, body: dict[str, Any]) -> None:
        from std_msgs.msg import String

        deadline = time.monotonic() + WAIT_S
        matched = threading.Event()  # never set: a bounded pause between graph polls
        while self.publisher.get_subscription_count() == 0:
            assert time.monotonic() < deadline, "provider never subscribed to decisions"
            matched.wait(0.02)
        self.publisher.publish(String(data=json.dumps(body)))


@pytest.fixture
def nodes(ros_context: Any) -> Iterator[tuple[Any, Operator]]:
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.node import Node

    from harness_ros.ros.approval import RosApprovalProvider

    harness = Node(HARNESS, context=ros_context)
    operator_node = Node("operator", context=ros_context)
    executor = MultiThreadedExecutor(context=ros_context)
    executor.add_node(harness)
    executor.add_node(operator_node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    provider = RosApprovalProvider(harness)
    try:
        yield provider, Operator(operator_node)
    finally:
        provider.destroy()
        executor.shutdown(timeout_sec=2.0)
        harness.destroy_node()
        operator_node.destroy_node()
        spinner.join(timeout=2.0)


def ask(provider: Any, timeout_s: float, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    outcome: dict[str, Any] = {}

    def run() -> None:
        started = time.monotonic()
        outcome["approved"] = provider.request("pick", arguments or {"object_id": "red_cup"}, timeout_s)
        outcome["elapsed"] = time.monotonic() - started

    worker = threading.Thread(target=run)
    worker.start()
    outcome["thread"] = worker
    return outcome


def test_operator_approves(nodes: tuple[Any, Operator]) -> None:
    provider, operator = nodes
    outcome = ask(provider, WAIT_S)
    request = operator.wait_for("pending")[0]
    assert request["tool"] == "pick" and request["arguments"] == {"object_id": "red_cup"}
    operator.send({"request_id": request["request_id"], "approved": True})
    outcome["thread"].join(WAIT_S)
    assert outcome["approved"] is True
    assert operator.wait_for("approved")[0]["request_id"] == request["request_id"]


def test_malformed_decision_is_ignored_then_deny(nodes: tuple[Any, Operator]) -> None:
    provider, operator = nodes
    outcome = ask(provider, WAIT_S)
    request_id = operator.wait_for("pending")[0]["request_id"]
    # Same publisher, reliable: delivered in order. "yes" must not count as approval.
    operator.send({"request_id": request_id, "approved": "yes"})
    operator.send({"request_id": "someone-else", "approved": True})
    operator.send({"request_id": request_id, "approved": False})
    outcome["thread"].join(WAIT_S)
    assert outcome["approved"] is False
    assert operator.wait_for("denied")[0]["request_id"] == request_id


def test_no_answer_is_a_denial_within_the_timeout(nodes: tuple[Any, Operator]) -> None:
    provider, operator = nodes
    outcome = ask(provider, 0.4)
    outcome["thread"].join(WAIT_S)
    assert outcome["approved"] is False
    assert 0.4 <= outcome["elapsed"] < 1.5
    assert operator.wait_for("expired")[0]["tool"] == "pick"


def test_cli_lists_and_approves(nodes: tuple[Any, Operator], ros_env: dict[str, str]) -> None:
    provider, operator = nodes
    outcome = ask(provider, 30.0)
    request_id = operator.wait_for("pending")[0]["request_id"]

    def cli(*extra: str) -> subprocess.CompletedProcess[str]:
        command = [
            sys.executable,
            "-m",
            "harness_ros.cli",
            "approve",
            "--node",
            f"/{HARNESS}",
            "--timeout",
            "15",
        ]
        return subprocess.run(
            [*command, *extra], check=False, env=ros_env, capture_output=True, text=True, timeout=60
        )

    listed = cli("--list")
    assert listed.returncode == 0, listed.stderr
    assert f"{request_id}  pick" in listed.stdout

    decided = cli(request_id)
    assert decided.returncode == 0, decided.stderr
    assert decided.stdout.strip() == f"approved {request_id} (pick)"
    outcome["thread"].join(WAIT_S)
    assert outcome["approved"] is True

    again = cli(request_id)
    assert again.returncode == 1
    assert f"request {request_id!r} is already approved" in again.stderr


def test_cli_lists_only_the_nodes_own_requests(nodes: tuple[Any, Operator], ros_env: dict[str, str]) -> None:
    # Finding: `approve --list` showed latched requests from any publisher, spoofed tool
    # arguments under a real request id included.
    from pathlib import Path

    from support.processes import ServerProcess

    provider, operator = nodes
    outcome = ask(provider, 30.0)
    request_id = operator.wait_for("pending")[0]["request_id"]
    spoofed = {
        "request_id": request_id,
        "tool": "pick",
        "arguments": {"object_id": "knife"},
        "status": "pending",
    }
    invented = {"request_id": "deadbeef", "tool": "drive", "arguments": {"distance": 9}, "status": "pending"}
    forger = ServerProcess(
        "latched",
        ros_env,
        script=Path(__file__).resolve().parent / "support" / "forger.py",
        args=("/forger", f"/{HARNESS}/approval_requests", json.dumps(spoofed), json.dumps(invented)),
    )
    command = [sys.executable, "-m", "harness_ros.cli", "approve", "--list", "--node", f"/{HARNESS}"]
    try:
        assert forger.wait_for_line("published", 30.0), forger.output
        # Each listing is a new participant: it may settle on the node's samples before it
        # has discovered the forger, and then it never sees the forged ones (nothing to
        # warn about). Forged content must never show, at any try; the warning must show
        # once the listing has seen them (at most three tries).
        for _ in range(3):
            listed = subprocess.run(
                [*command, "--timeout", "15"],
                check=False,
                env=ros_env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert listed.returncode == 0, listed.stderr
            assert listed.stdout.strip() == f'{request_id}  pick  {{"object_id": "red_cup"}}', listed.stdout
            assert "deadbeef" not in listed.stdout and "knife" not in listed.stdout
            if "ignored 2 message(s)" in listed.stderr:
                break
    finally:
        forger.stop()
    assert "ignored 2 message(s)" in listed.stderr, listed.stderr
    provider_thread = outcome["thread"]
    operator.send({"request_id": request_id, "approved": False})
    provider_thread.join(WAIT_S)


def test_cli_prints_control_characters_as_escapes(
    nodes: tuple[Any, Operator], ros_env: dict[str, str]
) -> None:
    # Finding: tool arguments (written by the model) reached the operator's terminal with
    # escape sequences, BEL, C1 controls and right-to-left overrides intact.
    provider, operator = nodes
    hostile = {"object_id": "red\x1b]0;owned\x07_cup\u202epuc\x9b2J\x7f"}
    outcome = ask(provider, 30.0, hostile)
    request_id = operator.wait_for("pending")[0]["request_id"]
    listed = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness_ros.cli",
            "approve",
            "--list",
            "--node",
            f"/{HARNESS}",
            "--timeout",
            "15",
        ],
        check=False,
        env=ros_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    operator.send({"request_id": request_id, "approved": False})
    outcome["thread"].join(WAIT_S)
    assert listed.returncode == 0, listed.stderr
    assert not set(listed.stdout) & {"\x1b", "\x07", "\u202e", "\x9b", "\x7f"}, repr(listed.stdout)
    # C0 controls come out of the JSON as \\u001b; the rest as terminal_safe writes them.
    assert "red\\u001b]0;owned\\u0007_cup\\u202epuc\\x9b2J\\x7f" in listed.stdout, listed.stdout
