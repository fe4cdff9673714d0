"""A flood on ``~/revise`` during a task (issue 47, item 10).

Hundreds of bare-string revisions, with no cap, made the next model request 4 MB against
a 16k-token window: revisions are never compacted. A real publisher floods a harness
node process over DDS while its task is mid-tool; the node takes revisions up to
``task_api.max_revision_chars_per_task`` (and ``max_revisions_per_task``), refuses the rest
with ``request_refused`` events naming the setting, and the next model request stays
small.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.processes import ServerProcess
from support.spinning_node import spinning_node
from test_node_trust_boundary import HARNESS_ROS, NODE, REPO, Client, alive, write_config
from test_ros_node import loopback_policy

from harness_ros.config import TaskApiConfig
from harness_ros.context.history import REVISION_HEADER
from harness_ros.testing.loopback_llm import LoopbackLLMServer

pytestmark = pytest.mark.ros

FLOOD = 300
REVISION_CHARS = 1_000
WINDOW_CHARS = 16_384 * 4
"""The local model's 16k-token window, at the harness's 4 characters a token."""


@pytest.fixture
def node_and_model(
    tmp_path: Path, ros_env: dict[str, str]
) -> Iterator[tuple[subprocess.Popen[bytes], Path, LoopbackLLMServer]]:
    env = {**ros_env, "LOOPBACK_TOKEN": "not-a-real-key"}
    server = ServerProcess("slow", env)  # the goal runs until the tool's timeout: the task is mid-tool
    with LoopbackLLMServer(loopback_policy) as llm:
        # The flood must reach the node while the tool runs: on a loaded host matching the
        # flood's publisher took long enough that an 8 s tool had ended (one rerun, stop 50).
        config = write_config(tmp_path, llm.url, timeout_s=20)
        log = tmp_path / "node.log"
        with log.open("wb") as handle:
            node = subprocess.Popen(
                [HARNESS_ROS, "node", "--config", str(config)],
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                cwd=REPO,
            )
        try:
            yield node, log, llm
        finally:
            node.terminate()
            try:
                node.wait(timeout=15)
            except subprocess.TimeoutExpired:
                node.kill()
                node.wait(timeout=5)
            server.stop()


@pytest.fixture
def client(ros_context: Any) -> Iterator[Client]:
    with spinning_node(ros_context, "revision_flood_client") as node:
        yield Client(node)


def _revision_messages(body: dict[str, Any]) -> list[str]:
    return [
        str(m.get("content"))
        for m in body["messages"]
        if m.get("role") == "user" and str(m.get("content", "")).startswith(REVISION_HEADER)
    ]


def test_a_revision_flood_is_capped_refused_and_the_next_request_fits_the_window(
    node_and_model: tuple[subprocess.Popen[bytes], Path, LoopbackLLMServer], client: Client
) -> None:
    node, log, llm = node_and_model
    defaults = TaskApiConfig()
    admitted = min(defaults.max_revisions_per_task, defaults.max_revision_chars_per_task // REVISION_CHARS)
    assert client.connected(60), log.read_text(errors="replace")
    client.handshake()
    running = "task-flooded"
    client.send(
        "instruction", json.dumps({"instruction": "compute Fibonacci of order 5", "task_id": running})
    )
    assert client.wait(lambda: bool(client.of("tool_call", running)), 30), log.read_text(errors="replace")
    refused_before = len(client.of("request_refused"))
    flood = client.node.create_publisher(client.String, f"{NODE}/revise", FLOOD)  # keeps all it sends
    assert client.wait(lambda: flood.get_subscription_count() > 0, 10)
    for number in range(FLOOD):
        text = f"revision {number:03d}: " + "keep the cup upright " * (REVISION_CHARS // 21)
        flood.publish(client.String(data=text.ljust(REVISION_CHARS, ".")[:REVISION_CHARS]))
    # The node's subscription keeps 10: some of the flood may be dropped. Every delivered
    # revision past the cap is answered on ~/events; one more at a time until one is.
    for _ in range(admitted + 5):
        before = len(client.of("request_refused"))
        client.send("revise", "one more: " + "x" * REVISION_CHARS)
        if client.wait(lambda b=before: len(client.of("request_refused")) > b, 5):
            break
    else:
        pytest.fail(f"no revision was refused: {log.read_text(errors='replace')[-3000:]}")
    assert client.wait(lambda: bool(client.of("done", running)), 60), log.read_text(errors="replace")

    revisions = client.of("revision", running)
    assert len(revisions) == admitted
    refusals = [e["data"] for e in client.of("request_refused")[refused_before:]]
    assert all(r["request"] == "revise" for r in refusals)
    assert any("task_api.max_revision_chars_per_task" in r["reason"] for r in refusals), refusals[:3]
    after = [body for body in llm.requests if _revision_messages(body)]
    assert after, "no model request carried the revisions"
    for body in after:
        assert len(_revision_messages(body)) == admitted
        assert len(json.dumps(body)) < WINDOW_CHARS
    assert client.of("done", running)[0]["data"]["status"] in ("completed", "failed")
    alive(node, log)
