"""``harness-ros eval`` with a model behind an OpenAI-compatible server (``--model --api-base``).

The loopback server answers with the scripted policy's replies and a fixed usage per
call (100 tokens in, 10 out), so the token accounting can be checked against the wire.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support.processes import run_orchestrator

from harness_ros.testing.loopback_llm import LoopbackLLMServer
from harness_ros_sim.demo.policy import purpose_of, scripted_reply

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.serial]


def test_one_episode_eval_through_a_model_server_counts_tokens(
    tmp_path: Path, ros_env: dict[str, str]
) -> None:
    pytest.importorskip("harness_sim_msgs", reason="build it first: scripts/build_interfaces.sh .venv")

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        return scripted_reply(body["messages"], body.get("tools"))

    workdir = tmp_path / "eval"
    env = {**ros_env, "OPENAI_API_KEY": "not-a-real-key"}
    with LoopbackLLMServer(reply) as server:
        command = [
            sys.executable, "-m", "harness_ros.cli", "eval", "--episodes", "1", "--workdir", str(workdir),
            "--sim-speed", "8", "--model", "openai/loopback", "--api-base", server.url,
        ]  # fmt: skip
        result = run_orchestrator(command, env=env, timeout=150)
        purposes = Counter(purpose_of(r["messages"]) for r in server.requests)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "not a learning measurement" not in result.stdout.lower()

    data = json.loads((workdir / "eval.json").read_text())
    assert data["measures_learning"] is True and data["disclaimer"] is None
    assert data["decisions"] == f"model 'openai/loopback' at {server.url}"
    arms = data["arms"].values()
    assert sum(a["decision_tokens"]["in"] for a in arms) == 100 * purposes["decide"]
    assert sum(a["decision_tokens"]["out"] for a in arms) == 10 * purposes["decide"]
    memory_calls = purposes["consolidate"] + purposes["summarize"]
    assert memory_calls >= 2  # each arm's completed task was consolidated
    assert sum(a["memory_tokens"]["in"] for a in arms) == 100 * memory_calls
    markdown = (workdir / "eval.md").read_text()
    assert "Not a learning measurement" not in markdown
    assert "| decision tokens in " in markdown
