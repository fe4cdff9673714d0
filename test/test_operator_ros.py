"""Talking to the operator over ROS: a node process, `harness-ros answer` and
`harness-ros task` processes, and this test's client node, on a private domain.

The model is the loopback OpenAI-compatible server: asked "which cup", it calls
ask_operator and reports the answer it got; anything else it reports done at once.
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
from support.processes import ServerProcess
from support.spinning_node import spinning_node
from support.waiting import Waited, wait_on

from harness_ros.testing.loopback_llm import LoopbackLLMServer, finish_reply

REPO = Path(__file__).resolve().parents[1]
HARNESS_ROS = str(Path(sys.executable).with_name("harness-ros"))
NODE = "/harness"

pytestmark = pytest.mark.ros


def _purpose(body: dict[str, Any]) -> str:
    first = str(body["messages"][0].get("content", "")).splitlines()[0]
    return first.removeprefix("# harness_ros:").strip()


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def instruction_of(body: dict[str, Any]) -> str:
    for message in body["messages"]:
        text = _text(message)
        if message.get("role") == "user" and "# Task\n" in text:
            return text.split("# Task\n", 1)[1].strip()
    return ""


def policy(body: dict[str, Any]) -> Any:
    kind = _purpose(body)
    if kind == "consolidate":
        return json.dumps({"memory_entries": [], "tool_experience_entries": []})
    if kind == "summarize":
        return json.dumps({"summary": "no experience yet"})
    instruction = instruction_of(body)
    results = [json.loads(_text(m)) for m in body["messages"] if m.get("role") == "tool"]
    if "which cup" in instruction.lower():
        if not results:
            question = {"question": "Which cup, the red one or the blue one?", "choices": ["red", "blue"]}
            return {"tool_calls": [{"name": "ask_operator", "arguments": question}]}
        last = results[-1]
        if last.get("success"):
            return finish_reply(f"The operator chose: {last['answer']}.")
        return finish_reply(f"Nobody answered: {last.get('reason')}", "failed")
    return finish_reply(f"Done: {instruction.splitlines()[0]}")


def write_config(tmp_path: Path, url: str, answer_timeout_s: float) -> Path:
    config = {
        "memory": {"dir": str(tmp_path / "memory")},
        "harness": {"runs_dir": str(tmp_path / "runs"), "max_turns": 4},
        "model": {
            "model": "openai/loopback",
            "api_base": url,
            "api_key_env": "LOOPBACK_TOKEN",
            "max_retries": 0,
        },
        "operator": {"answer_timeout_s": answer_timeout_s},
        "graph_check_timeout_s": 0,
    }
    path = tmp_path / "harness.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


class Client:
    def __init__(self, node: Any) -> None:
        from std_msgs.msg import String
        from std_srvs.srv import Trigger

        from harness_ros.ros.node import EVENTS_QOS
        from harness_ros.ros.operator import ANSWER_QOS, QUESTIONS_QOS

        self.String, self.Trigger = String, Trigger
        self.node = node
        self.events: list[dict[str, Any]] = []
        self.questions: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self.instruction = node.create_publisher(String, f"{NODE}/instruction", 10)
        self.cancel = node.create_publisher(String, f"{NODE}/cancel_task", 10)
        self.answers = node.create_publisher(String, f"{NODE}/answers", ANSWER_QOS)
        self.reset = node.create_client(Trigger, f"{NODE}/reset")
        node.create_subscription(String, f"{NODE}/events", self._on(self.events), EVENTS_QOS)
        node.create_subscription(String, f"{NODE}/questions", self._on(self.questions), QUESTIONS_QOS)

    def _on(self, into: list[dict[str, Any]]) -> Callable[[Any], None]:
        def callback(msg: Any) -> None:
            with self._changed:
                into.append(json.loads(msg.data))
                self._changed.notify_all()

        return callback

    def wait(self, condition: Callable[[], bool], timeout_s: float) -> Waited:
        return wait_on(self._changed, condition, timeout_s)

    def connect(self, timeout_s: float = 60.0) -> None:
        pubs = (self.instruction, self.cancel, self.answers)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(p.get_subscription_count() > 0 for p in pubs) and self.node.count_publishers(
                f"{NODE}/events"
            ):
                return
            with self._changed:
                self._changed.wait(0.05)
        pytest.fail("the harness node did not come up")

    def start(self, task_id: str, instruction: str, **extra: Any) -> None:
        """Send until the node answers for this id (a first message may race discovery)."""
        body = {"instruction": instruction, "task_id": task_id, **extra}

        def answered() -> bool:
            return any(e["task_id"] == task_id for e in self.events)

        for _ in range(5):
            self.instruction.publish(self.String(data=json.dumps(body)))
            if self.wait(answered, 3.0):
                return
        pytest.fail(f"the node never answered task {task_id}")

    def done(self, task_id: str, timeout_s: float = 60.0) -> dict[str, Any]:
        assert self.wait(
            lambda: any(e["type"] == "done" and e["task_id"] == task_id for e in self.events), timeout_s
        )
        return next(e for e in self.events if e["type"] == "done" and e["task_id"] == task_id)["data"]

    def pending_question(self, task_id: str, timeout_s: float = 30.0) -> dict[str, Any]:
        def found() -> bool:
            return any(q["task_id"] == task_id and q["status"] == "pending" for q in self.questions)

        assert self.wait(found, timeout_s), "no question was asked"
        return next(q for q in self.questions if q["task_id"] == task_id and q["status"] == "pending")

    def statuses(self, question_id: str) -> list[str]:
        with self._changed:
            # This test client is no CLI: it skips the forger's messages by their mark.
            return [
                q["status"] for q in self.questions if q["question_id"] == question_id and not q.get("forged")
            ]

    def call_reset(self) -> str:
        assert self.reset.wait_for_service(timeout_sec=15.0)
        future = self.reset.call_async(self.Trigger.Request())
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        assert done.wait(15.0)
        response = future.result()
        assert response.success, response.message
        return str(response.message)


@pytest.fixture
def operator_node(
    request: pytest.FixtureRequest, tmp_path: Path, ros_env: dict[str, str]
) -> Iterator[LoopbackLLMServer]:
    env = {**ros_env, "LOOPBACK_TOKEN": "not-a-real-key"}
    with LoopbackLLMServer(policy) as llm:
        config = write_config(tmp_path, llm.url, answer_timeout_s=request.param)
        log = tmp_path / "node.log"
        with log.open("wb") as handle:
            node = subprocess.Popen(
                [HARNESS_ROS, "node", "--config", str(config)],
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
            )
        try:
            yield llm
        finally:
            node.terminate()
            try:
                node.wait(timeout=15)
            except subprocess.TimeoutExpired:
                node.kill()
                node.wait(timeout=5)


@pytest.fixture
def client(ros_context: Any) -> Iterator[Client]:
    with spinning_node(ros_context, "operator_test_client") as node:
        yield Client(node)


@pytest.mark.parametrize("operator_node", [60.0], indirect=True)
def test_questions_are_answered_by_the_cli_and_foreign_answers_ignored(
    operator_node: LoopbackLLMServer, client: Client, ros_env: dict[str, str]
) -> None:
    client.connect()
    client.start("task-ask-1", "Bring me the cup. Which cup? Ask me.")
    question = client.pending_question("task-ask-1")
    assert question["choices"] == ["red", "blue"]
    qid = question["question_id"]

    # Foreign answers first: another question id, and this id naming another task.
    client.answers.publish(client.String(data=json.dumps({"question_id": "q-other", "answer": "blue"})))
    foreign = {"question_id": qid, "answer": "blue", "task_id": "task-someone-else"}
    client.answers.publish(client.String(data=json.dumps(foreign)))
    client.answers.publish(client.String(data="[[[[not json"))

    # Another participant's latched questions: this id marked expired, and one of its own.
    expired = {
        "question_id": qid,
        "task_id": "task-ask-1",
        "question": "Which knife?",
        "status": "expired",
        "forged": True,
    }
    invented = {
        "question_id": "q-forged",
        "task_id": "task-ask-1",
        "question": "Which knife?",
        "status": "pending",
    }
    forger = ServerProcess(
        "latched",
        ros_env,
        script=REPO / "test" / "support" / "forger.py",
        args=("/forger", f"{NODE}/questions", json.dumps(expired), json.dumps(invented)),
    )
    try:
        assert forger.wait_for_line("published", 30.0), forger.output
        # Each listing is a new participant: on a loaded host its discovery of the forger can
        # come after it has settled on the node's samples (the forger's are then simply not
        # seen). Forged content must never be listed; the warning must come once they are seen.
        warned = []
        for _attempt in range(3):
            listed = subprocess.run(
                [HARNESS_ROS, "answer", "--list"],
                env=ros_env,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert listed.returncode == 0, listed.stderr
            assert qid in listed.stdout and "Which cup" in listed.stdout
            assert "q-forged" not in listed.stdout and "knife" not in listed.stdout, listed.stdout
            warned.append(listed.stderr)
            if "did not come from /harness's own publisher" in listed.stderr:
                break
        assert "did not come from /harness's own publisher" in warned[-1], warned

        answered = subprocess.run(
            [HARNESS_ROS, "answer", "--id", qid, "--text", "the red one, please"],
            env=ros_env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        forger.stop()
    assert answered.returncode == 0, answered.stdout + answered.stderr
    assert f"answered {qid}" in answered.stdout

    done = client.done("task-ask-1")
    assert done["status"] == "completed"
    assert "the red one, please" in done["report"]
    assert client.statuses(qid) == ["pending", "answered"]

    # A late answer to a question that is no longer waiting is refused by the CLI.
    late = subprocess.run(
        [HARNESS_ROS, "answer", "--id", qid, "--text", "blue"],
        env=ros_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert late.returncode == 1 and "already answered" in late.stderr

    # Cancelled while waiting: the task ends at once, the question says so.
    client.start("task-ask-2", "Which cup should I take? Ask me.")
    qid2 = client.pending_question("task-ask-2")["question_id"]
    client.cancel.publish(client.String(data=json.dumps({"task_id": "task-ask-2"})))
    assert client.done("task-ask-2", timeout_s=20)["status"] == "cancelled"
    assert client.wait(lambda: "cancelled" in client.statuses(qid2), 10)


@pytest.mark.parametrize("operator_node", [1.5], indirect=True)
def test_no_answer_is_reported_and_sessions_carry_earlier_tasks(
    operator_node: LoopbackLLMServer, client: Client
) -> None:
    client.connect()
    client.start("task-timeout", "Which cup? Ask me.")
    qid = client.pending_question("task-timeout")["question_id"]
    done = client.done("task-timeout")
    assert done["status"] == "completed"
    assert "Nobody answered: no answer from the operator within 1.5 s" in done["report"]
    assert client.wait(lambda: "expired" in client.statuses(qid), 10)

    # A follow-up that says "it" sees the session's earlier tasks.
    client.start("task-fetch", "Bring the green bottle to the sofa.")
    assert client.done("task-fetch")["status"] == "completed"
    client.start("task-follow-up", "Now put it back.")
    assert client.done("task-follow-up")["status"] == "completed"

    def context_of(instruction: str) -> str:
        bodies = [
            b for b in operator_node.requests if _purpose(b) == "decide" and instruction in instruction_of(b)
        ]
        assert bodies, f"no decision for {instruction!r}"
        return "\n".join(_text(m) for m in bodies[-1]["messages"] if m.get("role") == "user")

    follow_up = context_of("Now put it back.")
    assert "Earlier tasks in this session" in follow_up
    assert "Bring the green bottle to the sofa." in follow_up
    assert "Done: Bring the green bottle to the sofa." in follow_up  # the previous final report

    # ~/reset starts a fresh session: the next task sees none of it.
    assert client.call_reset().startswith("new session")
    client.start("task-after-reset", "What did I ask before?")
    assert client.done("task-after-reset")["status"] == "completed"
    assert "Earlier tasks in this session" not in context_of("What did I ask before?")

    # So does a client asking for a new session with its instruction.
    client.start("task-new-session", "Fresh start please.", new_session=True)
    assert client.done("task-new-session")["status"] == "completed"
    assert "Earlier tasks in this session" not in context_of("Fresh start please.")
