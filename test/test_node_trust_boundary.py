"""The node's trust boundary: hostile client messages, tasks addressed by id.

A harness node process, a test action server process and this test's client node talk
over DDS on a private domain; the model is the loopback OpenAI-compatible server.
Every message a client can send is hostile until parsed: the node refuses it with an
event and keeps serving, and a normal task still completes on the same process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.processes import ServerProcess
from support.spinning_node import spinning_node
from support.waiting import Waited, wait_on
from test_ros_node import loopback_policy  # one fibonacci call, then a report

from harness_ros.testing.loopback_llm import LoopbackLLMServer

REPO = Path(__file__).resolve().parents[1]
SUPPORT = REPO / "test" / "support"
HARNESS_ROS = str(Path(sys.executable).with_name("harness-ros"))
NODE = "/harness"

pytestmark = pytest.mark.ros


def write_config(tmp_path: Path, server_url: str, *, timeout_s: float = 10) -> Path:
    fibonacci = {
        "description": "Compute a Fibonacci sequence on the robot's test server.",
        "action": "/fibonacci",
        "type": "test_msgs/action/Fibonacci",
        "physical": False,
        "timeout_s": timeout_s,
        "required_arguments": ["order"],
    }
    config = {
        "embodiment_profile_file": str(REPO / "profiles" / "mobile_manipulator.md"),
        "memory": {"dir": str(tmp_path / "memory")},
        "harness": {"runs_dir": str(tmp_path / "runs"), "max_turns": 6},
        "model": {
            "model": "openai/loopback",
            "api_base": server_url,
            "api_key_env": "LOOPBACK_TOKEN",
            "timeout_s": 20,
            "max_retries": 0,
        },
        "observations": {
            "views": {name: {"topic": f"/cam/{name}/image"} for name in ("front", "torso", "wrist")}
        },
        # The second binding needs approval: the node then serves the approval decision topic.
        "tools": [
            {"name": "fibonacci", **fibonacci},
            {"name": "fibonacci_approved", **fibonacci, "requires_approval": True},
        ],
        "graph_check_timeout_s": 0,
    }
    path = tmp_path / "harness.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


class Client:
    """This test's side of the task API: publishers for every input topic, an event log."""

    def __init__(self, node: Any) -> None:
        from std_msgs.msg import String

        from harness_ros.ros.approval import DECISION_QOS
        from harness_ros.ros.node import EVENTS_QOS

        self.String = String
        self.events: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self.publishers = {
            "instruction": node.create_publisher(String, f"{NODE}/instruction", 10),
            "revise": node.create_publisher(String, f"{NODE}/revise", 10),
            "cancel_task": node.create_publisher(String, f"{NODE}/cancel_task", 10),
            "approval_decisions": node.create_publisher(String, f"{NODE}/approval_decisions", DECISION_QOS),
        }
        node.create_subscription(String, f"{NODE}/events", self._on_event, EVENTS_QOS)
        self.node = node

    def _on_event(self, msg: Any) -> None:
        with self._changed:
            self.events.append(json.loads(msg.data))
            self._changed.notify_all()

    def wait(self, condition: Callable[[], bool], timeout_s: float) -> Waited:
        return wait_on(self._changed, condition, timeout_s)

    def connected(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(pub.get_subscription_count() > 0 for pub in self.publishers.values()) and (
                self.node.count_publishers(f"{NODE}/events") > 0
            ):
                return True
            with self._changed:
                self._changed.wait(0.05)
        return False

    def handshake(self) -> None:
        """Until the node refuses a bad message on each answering topic: then both sides of
        every pair have matched (DDS discovery is asymmetric; an early message can be lost)."""
        for topic, kind in (
            ("instruction", "task_rejected"),
            ("revise", "request_refused"),
            ("cancel_task", "request_refused"),
        ):
            for _ in range(10):
                before = self.count(kind)
                self.send(topic, "{handshake")
                if self.wait(lambda k=kind, b=before: self.count(k) > b, 2.0):
                    break
            else:
                pytest.fail(f"the node never answered on {topic}")

    def send(self, topic: str, text: str) -> None:
        self.publishers[topic].publish(self.String(data=text))

    def of(self, kind: str, task_id: str | None = None) -> list[dict[str, Any]]:
        with self._changed:
            return [
                e for e in self.events if e["type"] == kind and (task_id is None or e["task_id"] == task_id)
            ]

    def count(self, *kinds: str) -> int:
        with self._changed:
            return sum(1 for e in self.events if e["type"] in kinds)


@pytest.fixture
def harness_node(
    tmp_path: Path, ros_env: dict[str, str], request: pytest.FixtureRequest
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A harness node process (and the action server it binds) on this test's domain."""
    behaviour = getattr(request, "param", "succeed")
    env = {**ros_env, "LOOPBACK_TOKEN": "not-a-real-key"}
    server = ServerProcess(behaviour, env)
    with LoopbackLLMServer(loopback_policy) as llm:
        config = write_config(tmp_path, llm.url, timeout_s=30 if behaviour == "slow" else 10)
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
            yield node, log
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
    with spinning_node(ros_context, "trust_boundary_client") as node:
        yield Client(node)


def run_normal_task(client: Client, task_id: str, timeout_s: float = 60) -> dict[str, Any]:
    client.send(
        "instruction", json.dumps({"instruction": "compute Fibonacci of order 5", "task_id": task_id})
    )
    assert client.wait(lambda: bool(client.of("done", task_id)), timeout_s), "the normal task did not finish"
    return client.of("done", task_id)[0]


def alive(node: subprocess.Popen[bytes], log: Path) -> None:
    assert node.poll() is None, f"the node exited ({node.returncode}):\n{log.read_text(errors='replace')}"


# --------------------------------------------------------------------------- one message


def test_a_nested_json_bomb_is_refused_and_the_node_keeps_serving(
    harness_node: tuple[subprocess.Popen[bytes], Path], client: Client
) -> None:
    # Finding: ~200 KB of [[[...]]] raised RecursionError in the callback; spin() re-raised
    # it and the process exited 1. The same payload on the approval decision topic too.
    node, log = harness_node
    assert client.connected(60), log.read_text(errors="replace")
    client.handshake()
    rejected, refused = client.count("task_rejected"), client.count("request_refused")
    bomb = "[" * 100_000 + "]" * 100_000
    deep = '{"instruction": ' + "[" * 5_000 + "]" * 5_000 + "}"  # under the byte cap: the parser's depth
    for payload in (bomb, "{" + bomb, deep):
        client.send("instruction", payload)
        client.send("approval_decisions", payload)
        client.send("revise", payload)
        client.send("cancel_task", payload)
    assert client.wait(lambda: client.count("task_rejected") >= rejected + 3, 30)
    reasons = [e["data"]["reason"] for e in client.of("task_rejected")]
    assert any("task_api.max_message_bytes" in reason for reason in reasons), reasons
    assert any("nests too deeply" in reason for reason in reasons), reasons
    assert client.wait(lambda: client.count("request_refused") >= refused + 6, 30)
    alive(node, log)

    done = run_normal_task(client, "task-after-bomb")
    assert done["data"]["status"] == "completed"
    alive(node, log)
    assert "Traceback" not in log.read_text(errors="replace")


# --------------------------------------------------------------------------- fuzzing

_TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=200)
_JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), _TEXT)
_JSON = st.recursive(
    _JSON_LEAF,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_TEXT, children, max_size=4),
    max_leaves=20,
)
_FIELDS = st.sampled_from(["instruction", "task_id", "text", "reason", "request_id", "approved"])


@st.composite
def hostile_object(draw: st.DrawFn) -> str:
    """A JSON object with task-API field names and values of any type (or deeply nested)."""
    body = draw(st.dictionaries(_FIELDS, _JSON, max_size=4))
    if draw(st.booleans()):
        depth = draw(st.integers(2, 3_000))
        body[draw(_FIELDS)] = json.loads("[" * min(depth, 500) + "]" * min(depth, 500))
        text = json.dumps(body)
        return text[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
    return json.dumps(body, ensure_ascii=draw(st.booleans()))


def _broken_json(draw: st.DrawFn) -> str:
    return "{" + draw(_TEXT)


@st.composite
def hostile_instruction(draw: st.DrawFn) -> str:
    """Only payloads that must be refused (a valid one would start a task)."""
    kind = draw(st.sampled_from(["object", "broken", "huge", "blank", "bad_id", "wrong_type"]))
    if kind == "object":
        text = draw(hostile_object())
        return text if '"instruction": "' not in text else "{" + text  # never a valid request
    if kind == "broken":
        return _broken_json(draw)
    if kind == "huge":
        return draw(st.sampled_from(["x", "[", "{", "é"])) * draw(st.integers(16_385, 60_000))
    if kind == "blank":
        return draw(st.sampled_from(["", " ", "\n\t", "{}"]))
    if kind == "bad_id":
        bad = draw(st.sampled_from(["task-1\n", "../x", "", ".", "a" * 129, "x y", 7, None, ["t"]]))
        if bad in ("", None):
            bad = "../" + draw(_TEXT)
        return json.dumps({"instruction": "go", "task_id": bad})
    return json.dumps({"instruction": draw(st.one_of(st.integers(), st.lists(_TEXT), st.just(" ")))})


@st.composite
def hostile_any(draw: st.DrawFn) -> str:
    return draw(
        st.one_of(hostile_object(), st.builds(lambda t: "{" + t, _TEXT), _TEXT, hostile_instruction())
    )


def test_fuzzed_client_messages_never_stop_the_node(
    harness_node: tuple[subprocess.Popen[bytes], Path], client: Client
) -> None:
    """Hypothesis: generated hostile payloads on every input topic of a node process, then
    a normal task to completion on the same process. Every instruction, revise and
    cancel payload is answered with a refusal event (no task is running)."""
    node, log = harness_node
    assert client.connected(60), log.read_text(errors="replace")
    client.handshake()
    tried = {"instruction": 0, "revise": 0, "cancel_task": 0, "approval_decisions": 0}

    @settings(
        max_examples=120,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        topic=st.sampled_from(sorted(tried)),
        data=st.data(),
    )
    def publish(topic: str, data: st.DataObject) -> None:
        payload = data.draw(hostile_instruction() if topic == "instruction" else hostile_any())
        answered = client.count("task_rejected", "request_refused")
        client.send(topic, payload)
        tried[topic] += 1
        if topic != "approval_decisions":  # decisions for no pending request are only logged
            assert client.wait(lambda: client.count("task_rejected", "request_refused") > answered, 10), (
                f"no refusal for a {topic} payload of {len(payload)} chars: {payload[:120]!r}"
            )
        alive(node, log)

    publish()
    assert sum(tried.values()) >= 100
    assert client.count("task_started") == 0, "a hostile instruction started a task"
    done = run_normal_task(client, "task-after-fuzz")
    assert done["data"]["status"] == "completed"
    alive(node, log)
    print(f"fuzz: {sum(tried.values())} hostile messages {tried}, node restarts: 0")


# --------------------------------------------------------------------------- addressed by id


@pytest.mark.parametrize("harness_node", ["slow"], indirect=True)
def test_revise_and_cancel_only_reach_the_task_they_name(
    harness_node: tuple[subprocess.Popen[bytes], Path], client: Client
) -> None:
    node, log = harness_node
    assert client.connected(60), log.read_text(errors="replace")
    running = "task-running-1"
    client.send(
        "instruction", json.dumps({"instruction": "compute Fibonacci of order 5", "task_id": running})
    )
    # The slow server holds the goal: the task is mid-tool while the others arrive.
    assert client.wait(lambda: bool(client.of("tool_call", running)), 30), log.read_text(errors="replace")

    client.send("revise", json.dumps({"task_id": "task-other", "instruction": "drive into the pool"}))
    assert client.wait(lambda: bool(client.of("request_refused", "task-other")), 10)
    refused = client.of("request_refused", "task-other")[0]["data"]
    assert refused["request"] == "revise" and "not the running task" in refused["reason"]

    # Finding: an instruction reusing the running id was rejected *under that id*, and a
    # client following the running task stopped watching it.
    client.send("instruction", json.dumps({"instruction": "something else", "task_id": running}))
    assert client.wait(
        lambda: any(e["data"].get("requested_task_id") == running for e in client.of("task_rejected")), 10
    )
    assert client.of("task_rejected", running) == []

    client.send("cancel_task", json.dumps({"task_id": "task-other"}))
    assert client.wait(lambda: len(client.of("request_refused", "task-other")) == 2, 10)
    assert client.of("done", running) == [], "a cancel for another task ended this one"
    assert client.of("revision", running) == [], "a revision for another task reached this one"

    client.send("cancel_task", json.dumps({"task_id": running, "reason": "operator stop"}))
    assert client.wait(lambda: bool(client.of("done", running)), 30)
    assert client.of("done", running)[0]["data"]["status"] == "cancelled"
    alive(node, log)


@pytest.mark.parametrize("harness_node", ["slow"], indirect=True)
def test_a_task_client_keeps_following_its_task_when_another_client_reuses_its_id(
    harness_node: tuple[subprocess.Popen[bytes], Path], client: Client, ros_env: dict[str, str]
) -> None:
    # Finding: `harness-ros task` stopped watching (and so never timeout-cancelled) its
    # task when another client's instruction reused the id and was rejected under it.
    node, log = harness_node
    assert client.connected(60), log.read_text(errors="replace")
    follower = subprocess.Popen(
        [HARNESS_ROS, "task", "compute Fibonacci of order 5", "--timeout", "120"],
        env=ros_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert client.wait(lambda: bool(client.of("tool_call")), 60), log.read_text(errors="replace")
        task_id = client.of("task_started")[0]["task_id"]
        client.send("instruction", json.dumps({"instruction": "hijack", "task_id": task_id}))
        assert client.wait(
            lambda: any(e["data"].get("requested_task_id") == task_id for e in client.of("task_rejected")), 10
        )
        assert follower.poll() is None, "the task client stopped following its running task"
        client.send("cancel_task", json.dumps({"task_id": task_id}))
        output, _ = follower.communicate(timeout=60)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait(timeout=5)
    assert follower.returncode == 4  # EXIT_FAILED: a cancelled task did not succeed
    assert "cancelled" in output, output
    assert "rejected" not in output, output
    alive(node, log)
