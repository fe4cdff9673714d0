"""The harness node end to end: real processes over DDS, litellm's HTTP path to a loopback model.

A camera/depth/scan publisher process, a test action server process, the harness node
process and the ``harness-ros task`` client process all run on this test's private
ROS domain; the model is the loopback OpenAI-compatible server in this process.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_ros.commands.task import EXIT_UNVERIFIED
from harness_ros.testing.loopback_llm import LoopbackLLMServer, finish_reply

REPO = Path(__file__).resolve().parents[1]
SUPPORT = REPO / "test" / "support"
HARNESS_ROS = str(Path(sys.executable).with_name("harness-ros"))

pytestmark = pytest.mark.ros


def purpose(body: dict[str, Any]) -> str:
    first = str(body["messages"][0].get("content", "")).splitlines()[0]
    return first.removeprefix("# harness_ros:").strip()


def loopback_policy(body: dict[str, Any]) -> Any:
    """Decide: call fibonacci once, then report. Consolidation proposes nothing."""
    kind = purpose(body)
    if kind == "consolidate":
        return json.dumps({"memory_entries": [], "tool_experience_entries": []})
    if kind == "summarize":
        return json.dumps({"summary": "no experience yet"})
    if any(message.get("role") == "tool" for message in body["messages"]):
        return finish_reply("The Fibonacci sequence of order 5 was computed by the robot's server.")
    return {"tool_calls": [{"name": "fibonacci", "arguments": {"order": 5}}]}


def write_config(tmp_path: Path, server_url: str, profile: Path) -> Path:
    config = {
        "embodiment_profile_file": str(profile),
        "memory": {"dir": str(tmp_path / "memory")},
        "harness": {"runs_dir": str(tmp_path / "runs"), "max_turns": 6},
        "model": {
            "model": "openai/loopback",
            "api_base": server_url,
            "api_key_env": "LOOPBACK_TOKEN",
            "timeout_s": 20,
            "max_retries": 0,
            "vision": True,  # the loopback stands in for a vision model: the views go as images
        },
        "observations": {
            "views": {
                "front": {"topic": "/cam/front/image"},
                "torso": {"topic": "/cam/torso/image"},
                "wrist": {"topic": "/cam/wrist/image"},
            },
            "depth": {"topic": "/cam/depth/image"},
            "clearance": {"scan_topic": "/scan"},
        },
        "tools": [
            {
                "name": "fibonacci",
                "description": "Compute a Fibonacci sequence on the robot's test server.",
                "action": "/fibonacci",
                "type": "test_msgs/action/Fibonacci",
                "physical": False,
                "timeout_s": 10,
                "required_arguments": ["order"],
            }
        ],
        "graph_check_timeout_s": 5,
    }
    path = tmp_path / "harness.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    handle = log.open("wb")
    return subprocess.Popen(args, env=env, stdout=handle, stderr=subprocess.STDOUT, cwd=REPO)


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        proc.terminate()
    for proc in started:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def test_invalid_profile_refuses_to_configure(tmp_path: Path, ros_env: dict[str, str]) -> None:
    profile = tmp_path / "robot.md"
    text = (REPO / "profiles" / "mobile_manipulator.md").read_text(encoding="utf-8")
    start = text.index("### Camera Positions")
    end = text.index("###", start + 4)
    profile.write_text(text[:start] + text[end:], encoding="utf-8")
    config = tmp_path / "harness.yaml"
    config.write_text(f"embodiment_profile_file: {profile}\n", encoding="utf-8")

    done = subprocess.run(
        [HARNESS_ROS, "node", "--config", str(config)],
        env=ros_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 1
    assert "Camera Positions" in done.stderr
    assert "Traceback" not in done.stderr


def test_task_api_end_to_end_through_loopback_model(
    tmp_path: Path, ros_env: dict[str, str], processes: list[subprocess.Popen[bytes]]
) -> None:
    env = {**ros_env, "LOOPBACK_TOKEN": "not-a-real-key"}
    with LoopbackLLMServer(loopback_policy) as server:
        config = write_config(tmp_path, server.url, REPO / "profiles" / "mobile_manipulator.md")
        processes.append(
            spawn([sys.executable, str(SUPPORT / "frame_publisher.py")], env, tmp_path / "frames.log")
        )
        processes.append(
            spawn([sys.executable, str(SUPPORT / "action_servers.py"), "succeed"], env, tmp_path / "srv.log")
        )
        recording = tmp_path / "model_replies.jsonl"
        node = spawn(
            # Under a namespace, as on a multi-robot system: ~/ topics follow the node.
            [
                HARNESS_ROS,
                "node",
                "--config",
                str(config),
                "--record-model",
                str(recording),
                "--ros-args",
                "-r",
                "__ns:=/robot1",
            ],
            env,
            tmp_path / "node.log",
        )
        processes.append(node)

        task = subprocess.run(
            [
                HARNESS_ROS,
                "task",
                "compute the Fibonacci sequence of order 5",
                "--timeout",
                "90",
                "--node",
                "/robot1/harness",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=150,
            check=False,
        )
        node_log = (tmp_path / "node.log").read_text(errors="replace")
        # Completed with a plain report and no goal check: unverified, not success (exit 5).
        assert task.returncode == EXIT_UNVERIFIED, (
            f"task output:\n{task.stdout}\n{task.stderr}\nnode log:\n{node_log}"
        )
        assert "done: UNVERIFIED, status completed" in task.stdout
        assert "tool fibonacci" in task.stdout

        decisions = [body for body in server.requests if purpose(body) == "decide"]
        assert len(decisions) == 2
        first, last = decisions
        names = [tool["function"]["name"] for tool in first["tools"]]
        assert names == ["fibonacci", "ask_operator", "notify_operator", "finish_task"]
        # By the second decision every camera has delivered (the first may label a view
        # "missing" if its first frame had not arrived yet: that is the honest behaviour).
        images = [
            part
            for message in last["messages"]
            if message["role"] == "user" and isinstance(message["content"], list)
            for part in message["content"]
            if part.get("type") == "image_url"
        ]
        assert len(images) == 3, "the three camera views reach the model as images"
        assert all(part["image_url"]["url"].startswith("data:image/jpeg;base64,") for part in images)
        tool_messages = [m for m in decisions[1]["messages"] if m["role"] == "tool"]
        result = json.loads(tool_messages[-1]["content"])
        assert result["success"] is True
        assert result["result"]["sequence"][:6] == [0, 1, 1, 2, 3, 5]

        run_dirs = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
        assert len(run_dirs) == 1
        events = [json.loads(line) for line in (run_dirs[0] / "events.jsonl").read_text().splitlines()]
        assert events[-1]["type"] == "done"
        assert events[-1]["data"]["status"] == "completed"
        assert node.poll() is None, "the node keeps serving after the task"
        recorded = [json.loads(line) for line in recording.read_text().splitlines()]
        assert len(recorded) == len(server.requests), "every model call is recorded for replay"


@pytest.mark.skipif(shutil.which("ros2") is None, reason="the ros2 CLI is not installed (pip-only venv)")
def test_ros2_run_finds_the_node() -> None:  # pragma: no cover - only on a ROS install
    done = subprocess.run(
        ["ros2", "pkg", "executables", "harness_ros"], capture_output=True, text=True, check=False
    )
    assert "harness_node" in done.stdout
