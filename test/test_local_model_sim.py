"""A real language model drives the simulated robot: the local model, served by llama.cpp,
decides one fetch task through the harness node over DDS (sim, node and model server
in their own processes, as ``harness-ros demo --model local/...`` runs them).

What a small model does is not scripted, so the test asserts what the harness must
guarantee whatever it decides: every call was executed or refused with a reason; the
task ended by ``finish_task``, an operator question or a limit, never by taking an echoed
tool result as the report; and the reported outcome agrees with the sim's ground truth.

The model comes from ``make test-model`` (0.5B; ``HARNESS_REQUIRE_LOCAL_MODEL=1.5b`` picks
the 1.5B). ``make test`` sets ``HARNESS_REQUIRE_LOCAL_MODEL``, so there a missing model fails;
elsewhere the test skips with how to install it. Bounded by a 4-turn limit, 256 tokens a reply
and a 6-minute task limit.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness_ros.local_model.catalog import LOCAL_MODELS
from harness_ros.local_model.install import runtime_installed

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.serial, pytest.mark.timeout(1000)]

INSTRUCTION = "Fetch the green bottle from the coffee table and put it on the kitchen table."
MAX_TURNS = 4
_TASK_TIMEOUT_S = 360.0
"""The node's wall-time limit for the task (a limit, so an honest ending); the client waits longer."""
_MAX_REPLY_TOKENS = 256
"""Bounds CI time: the 0.5B tends to write every offered tool as a call (one reply of
hundreds of tokens); the first call is what runs, and what the test checks."""
_READY_TIMEOUT_S = 120.0
LIMIT_REASONS = ("turn limit", "wall-time limit", "malformed decisions in a row", "text_reply_reminders")
"""How a task that a limit ended says so in its reason."""


def _model_name() -> str:
    required = os.environ.get("HARNESS_REQUIRE_LOCAL_MODEL", "").strip()
    name = required if required and required != "1" else "0.5b"
    spec = LOCAL_MODELS[name]
    if not runtime_installed() or not spec.path.is_file():
        why = f"the local model {name} or xllamacpp is not installed (make test-model, or make local-model)"
        if required:
            pytest.fail(f"{why}; HARNESS_REQUIRE_LOCAL_MODEL is set")
        pytest.skip(why)
    return name


def _wait_ready(context: Any, children: list[Any]) -> None:
    """Until the sim publishes its ground truth and the node takes instructions."""
    import rclpy

    node = rclpy.create_node("local_model_probe", context=context)
    pause = threading.Event()
    deadline = time.monotonic() + _READY_TIMEOUT_S
    try:
        while not (
            node.count_publishers("/sim/ground_truth") > 0
            and node.count_subscribers("/harness/instruction") > 0
        ):
            for child in children:
                assert child.running(), f"{child.name} exited during start-up:\n{child.tail()}"
            assert time.monotonic() < deadline, "sim or node not ready:\n" + "\n".join(
                c.tail() for c in children
            )
            pause.wait(0.2)
    finally:
        node.destroy_node()


def _ground_truth(context: Any) -> dict[str, Any]:
    """The sim's latest state (transient local: delivered on subscription)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import String

    from harness_ros_sim.ros.sim.evaluator import GROUND_TRUTH_QOS

    node = rclpy.create_node("local_model_truth", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    states: list[dict[str, Any]] = []
    node.create_subscription(
        String, "/sim/ground_truth", lambda msg: states.append(json.loads(msg.data)), GROUND_TRUTH_QOS
    )
    deadline = time.monotonic() + 30.0
    try:
        while not states and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
    finally:
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
    assert states, "no ground truth from the sim within 30 s"
    return states[-1]


def _events(runs: Path) -> list[dict[str, Any]]:
    (folder,) = list(runs.iterdir())
    return [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]


def test_a_local_model_drives_one_sim_task_through_the_node(
    tmp_path: Path, ros_env: dict[str, str], ros_context: Any
) -> None:
    from harness_ros.commands.task import exit_code
    from harness_ros.local_model.server import KEY_ENV, LocalServer
    from harness_ros.paths import default_config_path
    from harness_ros_sim.demo.runner import LOCAL_NODE_PARAMETERS, ChildProcess, node_command, sim_command
    from harness_ros_sim.ros.sim.evaluator import judge_goal

    name = _model_name()
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    logs.mkdir()
    started = time.monotonic()
    server = LocalServer(name, logs / "model_server.log", install=False, env=ros_env)
    endpoint = server.start()
    children: list[ChildProcess] = []
    try:
        env = {**ros_env, KEY_ENV: server.api_key, "HARNESS_MODEL": endpoint.model}
        node = node_command(
            default_config_path("sim.yaml"),
            memory=tmp_path / "memory",
            runs=runs,
            model=endpoint.model,
            api_base=endpoint.api_base,
            parameters={
                **LOCAL_NODE_PARAMETERS,
                "harness.max_turns": str(MAX_TURNS),
                "model.max_tokens": str(_MAX_REPLY_TOKENS),
                "harness.task_timeout_s": f"{_TASK_TIMEOUT_S:g}",
            },
        )
        children.append(ChildProcess("sim", sim_command(2.0), env, logs / "sim.log"))
        children.append(ChildProcess("node", node, env, logs / "node.log"))
        _wait_ready(ros_context, children)
        task = subprocess.run(
            [
                sys.executable,
                "-m",
                "harness_ros.cli",
                "task",
                INSTRUCTION,
                "--json",
                "--timeout",
                f"{_TASK_TIMEOUT_S + 60:g}",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=_TASK_TIMEOUT_S + 120,
            check=False,
        )
        truth = _ground_truth(ros_context)
    finally:
        for child in reversed(children):
            child.stop()
        server.stop()
    elapsed = time.monotonic() - started
    events = _events(runs)
    done = next(e["data"] for e in events if e["type"] == "done")
    summary = f"{name}: {done['status']}/{done['outcome']} by {done.get('finished_by')} in {elapsed:.0f} s"
    print(summary, "|", done.get("reason"), "|", done.get("report", "")[:300])
    # The client's exit status is the task's outcome (0 succeeded, 4 failed, 5 unverified).
    assert task.returncode == exit_code(done), (task.returncode, task.stderr[-2000:])

    # A real model decided: its replies came through the served endpoint.
    responses = [e["data"] for e in events if e["type"] == "model_response"]
    assert responses and all(r.get("model", endpoint.model).endswith(endpoint.alias) for r in responses), (
        responses
    )
    # Every call was executed, or refused or failed with a reason the model read.
    results = [e["data"] for e in events if e["type"] == "tool_result"]
    for result in results:
        content = result.get("result") or {}
        if not (result.get("executed") and content.get("success") is True):
            assert str(content.get("reason") or "").strip(), result
    # It ended by finish_task, an operator question or a limit: never a tool result taken as the report.
    if done["status"] == "completed":
        assert done["finished_by"] in ("finish_task", "operator_question"), done
        assert '"run_id"' not in done["report"] and "<tool_response>" not in done["report"], done
    else:
        reason = str(done.get("reason") or "").lower()
        assert any(limit in reason for limit in LIMIT_REASONS), done
    # The outcome agrees with the sim's ground truth.
    goal = judge_goal(INSTRUCTION, (), truth)
    assert goal is not None
    if done["outcome"] == "succeeded":
        assert goal.ok, (goal, done)
    elif goal.ok and done.get("claim") == "success":
        pytest.fail(
            f"the goal holds ({goal.evidence}) and the model claimed success, yet the outcome is {done}"
        )
    if not goal.ok:
        assert done["outcome"] != "succeeded", (goal, done)


def test_the_local_server_requires_its_key_and_stops_with_a_request_in_flight(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    from harness_ros.local_model.server import LocalServer

    name = _model_name()
    server = LocalServer(name, tmp_path / "model_server.log", install=False)
    endpoint = server.start()
    try:
        assert endpoint.api_key_env == "HARNESS_LOCAL_MODEL_KEY"
        body = json.dumps(
            {
                "model": endpoint.alias,
                "messages": [{"role": "user", "content": "Count to 5000."}],
                "max_tokens": 4000,
            }
        ).encode()

        def request(key: str) -> urllib.request.Request:
            headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
            return urllib.request.Request(f"{endpoint.api_base}/chat/completions", data=body, headers=headers)

        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request("wrong-key"), timeout=30)
        assert refused.value.code == 401
        # A long generation in flight (minutes on 2 cores) must not hold the stop up.
        threading.Thread(target=lambda: _ignore_errors(request(server.api_key)), daemon=True).start()
        _wait_until_busy(endpoint.api_base, server.api_key)
    finally:
        started = time.monotonic()
        how = server.stop()
    assert how == "stopped" and time.monotonic() - started < 8.0, (how, server.log.read_text()[-2000:])
    assert server.process is not None and server.process.poll() is not None


def _ignore_errors(request: Any) -> None:
    import urllib.request

    # The server goes away mid-request: what the test does to it.
    with contextlib.suppress(OSError):
        urllib.request.urlopen(request, timeout=600).read()


def _wait_until_busy(api_base: str, key: str) -> None:
    """Until llama.cpp's slot is processing (its /slots endpoint says so)."""
    import urllib.request

    pause = threading.Event()
    deadline = time.monotonic() + 60.0
    slots_url = api_base.removesuffix("/v1") + "/slots"
    while time.monotonic() < deadline:
        request = urllib.request.Request(slots_url, headers={"Authorization": f"Bearer {key}"})
        slots = json.loads(urllib.request.urlopen(request, timeout=10).read())
        if any(slot.get("is_processing") for slot in slots):
            return
        pause.wait(0.2)
    pytest.fail("the server never started processing the request")
