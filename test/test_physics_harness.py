"""The harness end to end on the physics robot (issue 45): no fake anywhere but the model.

Three processes on a private ROS domain, as a user runs them: the ``stretch3_physics``
node (Stretch 3 in MuJoCo), the harness node with config/robots/stretch3_physics.yaml
(the Stretch 3 config of the real robot plus the sim's pick and place tools and an
evaluator on the robot's own state sources), and ``harness-ros task``. The decisions
are SCRIPTED: the loopback OpenAI-compatible server replies with a fixed fetch (drive to
the cup, pick it, drive to the counter, place it, finish) and a scripted evaluator
verdict. What is not scripted: every tool runs on the physics node over DDS, each
observation is rendered by MuJoCo's cameras, the navigation verdicts come from the pose
check on /amcl_pose, the pick and place verdicts from the grasp check on /joint_states'
finger joint, and the test asks the physics itself where the cup ended.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.waiting import wait_for

from harness_ros.config import load_config
from harness_ros.testing.loopback_llm import LoopbackLLMServer, finish_reply

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config" / "robots" / "stretch3_physics.yaml"
REAL_CONFIG = REPO / "config" / "robots" / "stretch3.yaml"
HARNESS_ROS = str(Path(sys.executable).with_name("harness-ros"))

# The scripted fetch: (tool, arguments). The robot starts at the origin facing +x with the
# dining table and the cup (0.0, -0.72) on its right; the counter spans x 0.7-2.5 at y < -0.6.
FETCH = (
    ("navigate_to_pose", {"x": 0.2, "y": 0.0, "yaw": 0}),
    ("pick_object", {"object_id": "red_cup"}),
    ("navigate_to_pose", {"x": 1.6, "y": 0.0, "yaw": 0}),
    ("place_object", {"surface_id": "kitchen_counter"}),
)
INSTRUCTION = "Bring the red cup from the dining table to the kitchen counter."


def test_the_physics_config_is_the_stretch3_config_plus_the_sim_tools() -> None:
    """The sim config may differ from the real robot's only where its header says."""
    real, sim = load_config(REAL_CONFIG), load_config(CONFIG)
    real_tools = {t.name: t for t in real.tools}
    sim_tools = {t.name: t for t in sim.tools}
    assert set(sim_tools) - set(real_tools) == {"pick_object", "place_object"}
    for name, tool in real_tools.items():
        expected = tool
        if name == "navigate_to_pose":  # evaluated here, by the pose check on /amcl_pose
            assert sim_tools[name].evaluated and sim_tools[name].post_condition
            expected = tool.model_copy(
                update={"evaluated": True, "post_condition": sim_tools[name].post_condition}
            )
        assert sim_tools[name] == expected, name
    assert sim.observations == real.observations
    assert sim.safety == real.safety
    assert sim.embodiment_profile_file == real.embodiment_profile_file
    assert real.evaluator.kind == "none" and sim.evaluator.kind == "model"
    assert {s.topic for s in sim.evaluator.state.values()} == {"/amcl_pose", "/odom", "/joint_states"}


def _purpose(body: dict[str, Any]) -> str:
    first = str(body["messages"][0].get("content", "")).splitlines()[0]
    return first.removeprefix("# harness_ros:").strip()


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


class ScriptedFetch:
    """The loopback model's replies: SCRIPTED, not a model's decisions."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.evaluations: list[str] = []
        self.images = 0

    def __call__(self, body: dict[str, Any]) -> Any:
        kind = _purpose(body)
        if kind.startswith("evaluate"):
            self.evaluations.append("\n".join(_text(m) for m in body["messages"]))
            return json.dumps({"status": "success", "failure_reason": None, "evidence": "scripted verdict"})
        if kind == "consolidate":
            return json.dumps({"memory_entries": [], "tool_experience_entries": []})
        if kind == "summarize":
            return json.dumps({"summary": "scripted"})
        for message in body["messages"]:
            content = message.get("content")
            if isinstance(content, list):
                self.images += sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")
        done = [m for m in body["messages"] if m.get("role") == "tool"]
        results = [json.loads(_text(m)) for m in done]
        if results and not results[-1].get("success", False):
            return finish_reply(f"scripted: stopped at a failure: {results[-1]}", "failed")
        step = len(self.calls)
        if step >= len(FETCH):
            return finish_reply("scripted: the red cup is on the kitchen counter")
        name, arguments = FETCH[step]
        self.calls.append(name)
        return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(2)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def physics_robot(ros_env: dict[str, str], tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    pytest.importorskip("mujoco", reason="pip install -r requirements.txt -c constraints.txt")
    pytest.importorskip("harness_sim_msgs", reason="build it first: scripts/build_interfaces.sh .venv")
    pytest.importorskip("nav2_msgs", reason="the test stand-ins: make test-interfaces")
    command = [
        sys.executable, "-m", "harness_ros_sim.ros.physics_node", "--ros-args",
        "-p", "speed:=3.0", "-p", "image_width:=160", "-p", "image_height:=120", "-p", "rate_hz:=2.0",
    ]  # fmt: skip
    process = _start(command, ros_env, tmp_path / "physics.log")
    yield process
    _stop(process)


@pytest.mark.serial
@pytest.mark.ros
def test_a_scripted_fetch_on_the_physics_robot(
    ros_env: dict[str, str], ros_context: Any, physics_robot: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from std_msgs.msg import String

    from harness_ros_sim.ros.node_support import STATE_QOS

    started = time.monotonic()
    script = ScriptedFetch()
    env = dict(ros_env, HOME=str(tmp_path), LOOPBACK_TOKEN="not-a-secret")
    env.pop("HARNESS_MODEL", None)
    with LoopbackLLMServer(script) as llm:
        harness = _start(
            [
                HARNESS_ROS, "node", "--config", str(CONFIG), "--ros-args",
                "-p", "model.model:=openai/loopback", "-p", f"model.api_base:={llm.url}",
                "-p", "model.api_key_env:=LOOPBACK_TOKEN", "-p", "model.max_retries:=0",
                "-p", "model.vision:=true",
                "-p", f"memory.dir:={tmp_path / 'memory'}", "-p", f"harness.runs_dir:={tmp_path / 'runs'}",
            ],
            env,
            tmp_path / "harness.log",
        )  # fmt: skip
        try:
            task = subprocess.Popen(
                [HARNESS_ROS, "task", INSTRUCTION, "--json", "--connect-timeout", "90", "--timeout", "240"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            # Either the task ends, or a process it needs died: no point waiting on.
            wait_for(lambda: task.poll() is not None or harness.poll() is not None, 300.0)
            if task.poll() is None:
                task.kill()
            stdout, stderr = task.communicate(timeout=30)
        finally:
            _stop(harness)
    logs = "\n".join(
        f"--- {name}\n{(tmp_path / name).read_text(errors='replace')[-4000:]}"
        for name in ("harness.log", "physics.log")
    )
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    assert task.returncode == 0, f"{stdout[-6000:]}\n{stderr[-2000:]}\n{logs}"
    assert script.calls == [name for name, _ in FETCH]
    results = [e["data"] for e in events if e.get("type") == "tool_result"]
    assert [r["tool"] for r in results] == script.calls, results
    assert all(r["executed"] and r["result"].get("success") for r in results), results
    verdicts = {
        e["data"]["run_id"]: e["data"] for e in events if e.get("type") == "verdict" and "tool" in e["data"]
    }
    navigation = [v["verdict"] for v in verdicts.values() if v["tool"] == "navigate_to_pose"]
    assert len(navigation) == 2, verdicts
    # judged by the measured pose on /amcl_pose, not by the scripted evaluator
    assert all(v["status"] == "success" and "pose check" in v["evidence"] for v in navigation), navigation
    # pick and place: by the finger joint on /joint_states (the grasp check), not by the evaluator
    grasps = {
        v["tool"]: v["verdict"] for v in verdicts.values() if v["tool"] in ("pick_object", "place_object")
    }
    assert grasps["pick_object"]["evidence"].startswith("grasp check: holding: "), grasps
    assert grasps["place_object"]["evidence"].startswith("grasp check: empty: "), grasps
    goal = [
        e["data"]["verdict"]
        for e in events
        if e.get("type") == "verdict" and e["data"].get("scope") == "task"
    ]
    assert goal and goal[-1]["status"] == "success", goal
    assert script.images > 0, "no rendered camera image reached the model"
    # The scripted evaluator was handed the robot's measured state, not the sim's truth.
    assert any("/joint_states" in text or "joint_lift" in text for text in script.evaluations)
    assert not any("ground_truth" in text for text in script.evaluations)

    # What the physics says, read from the node's ground truth.
    node = Node("physics_harness_check", context=ros_context)
    truth: list[dict[str, Any]] = []
    node.create_subscription(
        String, "/sim/ground_truth", lambda m: truth.append(json.loads(m.data)), STATE_QOS
    )
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        assert wait_for(lambda: bool(truth), 30.0)
    finally:
        executor.shutdown(timeout_sec=5)
        node.destroy_node()
    state = truth[-1]
    cup = state["objects"]["red_cup"]
    assert cup["on"] == "kitchen_counter", state
    x, y, z = cup["position"]
    assert 0.7 < x < 2.5 and -1.2 < y < -0.6 and z > 0.9, cup  # on the counter's top (0.90 m)
    assert state["robot"]["holding"] == ""
    print(f"\nscripted fetch on the physics robot: {time.monotonic() - started:.1f} s wall")
