"""``model.model: local/0.5b`` in a node config: the node serves that model itself.

Real processes on a private domain: ``harness-ros node`` starts llama.cpp's server (a
child, on 127.0.0.1) while it configures, points its model at it, and stops it when the
node shuts down; a model that is not installed stops the node at configure with the
command that installs it. The served test needs the 0.5B (``make test-model``); the
missing-model test needs nothing installed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from support.waiting import ProcessLines

pytest.importorskip("rclpy")

from harness_ros.local_model.catalog import LOCAL_MODELS
from harness_ros.local_model.install import runtime_installed

pytestmark = [pytest.mark.ros, pytest.mark.serial, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "harness_ros.cli"]


def local_config(tmp_path: Path, model: str) -> Path:
    """config/example.yaml with ``model.model: <model>``, state in the test's folder."""
    text = (REPO / "config" / "example.yaml").read_text(encoding="utf-8")
    text = text.replace("../profiles/", f"{REPO}/profiles/").replace("../skills", f"{REPO}/skills")
    text = text.replace("../memory", str(tmp_path / "memory")).replace("../runs", str(tmp_path / "runs"))
    path = tmp_path / "local.yaml"
    path.write_text(f"{text}\nmodel:\n  model: {model}\ngraph_check_timeout_s: 0.0\n", encoding="utf-8")
    return path


class NodeProcess:
    """``harness-ros node`` with its stderr (the ROS log) collected line by line."""

    def __init__(
        self, argv: list[str], env: dict[str, str], *, merged: bool = False, start_new_session: bool = False
    ) -> None:
        """``merged``: stdout too goes to the log (a command's own output, not only the ROS log)."""
        self.proc = subprocess.Popen(
            argv,
            env=env,
            stdout=subprocess.PIPE if merged else subprocess.DEVNULL,
            stderr=subprocess.STDOUT if merged else subprocess.PIPE,
            text=True,
            start_new_session=start_new_session,
        )
        self.output = ProcessLines(self.proc, self.proc.stdout if merged else self.proc.stderr)
        self.lines = self.output.lines

    def wait_for(self, text: str, timeout_s: float) -> bool:
        return bool(self.output.wait_for(text, timeout_s))

    def log(self) -> str:
        return "\n".join(self.lines)


def _server_pids(ready_file: Path) -> list[int]:
    """The processes whose command line names this ready file (the node's model server)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(ready_file).encode() in argv and state != "Z":
            pids.append(int(entry.name))
    return pids


def test_a_local_model_in_the_config_is_served_for_the_nodes_lifetime(
    tmp_path: Path, ros_env: dict[str, str]
) -> None:
    if not runtime_installed() or not LOCAL_MODELS["0.5b"].path.is_file():
        pytest.skip("the local model 0.5b or xllamacpp is not installed (make test-model)")
    env = {key: value for key, value in ros_env.items() if key != "HARNESS_MODEL"}
    node = NodeProcess([*CLI, "node", "--config", str(local_config(tmp_path, "local/0.5b"))], env)
    ready_file = tmp_path / "runs" / "model_server.log.ready.json"
    try:
        assert node.wait_for("active: send a task", 240.0), node.log()
        assert "local model served at http://127.0.0.1:" in node.log()
        assert "model 'openai/qwen2.5-coder-0.5b-instruct'" in node.log(), (
            "the node decides with the served model"
        )
        assert "model.timeout_s 900" in node.log(), "the hosted 60 s default does not fit a CPU"
        assert "model.max_tokens 1024" in node.log(), "a small model may write until the context is full"
        assert "model.decision_max_tokens 256" in node.log(), "a call takes under 100 tokens"
        endpoint = json.loads(ready_file.read_text(encoding="utf-8"))
        assert endpoint["model"] == "openai/qwen2.5-coder-0.5b-instruct"
        health = endpoint["api_base"].removesuffix("/v1") + "/health"
        with urllib.request.urlopen(health, timeout=30) as reply:
            assert json.loads(reply.read()) == {"status": "ok"}, "loaded and answering"
        # The key is the node's alone (a random one, in its environment only).
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{endpoint['api_base']}/models", timeout=30)
        assert refused.value.code == 401
        pids = _server_pids(ready_file)
        assert len(pids) == 1, pids
    finally:
        if node.proc.poll() is None:
            node.proc.send_signal(signal.SIGINT)
        try:
            code = node.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            node.proc.kill()
            raise
    assert code == 0, node.log()
    assert "local model server stopped" in node.log()
    assert _server_pids(ready_file) == [], "the model server outlived the node"
    with pytest.raises(urllib.error.URLError) as gone:
        urllib.request.urlopen(health, timeout=5)
    assert not isinstance(gone.value, urllib.error.HTTPError), "nothing answers there any more"


def test_a_local_model_that_is_not_installed_stops_the_node_naming_the_install_command(
    tmp_path: Path, ros_env: dict[str, str]
) -> None:
    env = {key: value for key, value in ros_env.items() if key != "HARNESS_MODEL"}
    env["HARNESS_MODELS_DIR"] = str(tmp_path / "no-models")
    done = subprocess.run(
        [*CLI, "node", "--config", str(local_config(tmp_path, "local/0.5b"))],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "model.model 'local/0.5b': the local model 0.5b is not installed" in done.stderr
    assert "harness-ros model install --model 0.5b" in done.stderr
    assert "make local-model" in done.stderr
    assert "active: send a task" not in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "runs" / "model_server.log").exists(), "no server was started"


@pytest.mark.parametrize("harness_model", [True, False])
def test_check_accepts_an_installed_local_model_and_names_the_install_command_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, harness_model: bool
) -> None:
    from harness_ros.config import config_from_dict
    from harness_ros.errors import ConfigError
    from harness_ros.model import validate_model_settings

    monkeypatch.setenv("HARNESS_MODELS_DIR", str(tmp_path / "models"))
    section = {} if harness_model else {"model": "local/0.5b"}
    if harness_model:
        monkeypatch.setenv("HARNESS_MODEL", "local/0.5b")
    else:
        monkeypatch.delenv("HARNESS_MODEL", raising=False)
    config = config_from_dict(
        {"model": section, "memory": {"dir": str(tmp_path / "memory")}}, base_dir=tmp_path, origin="test"
    )
    key = "HARNESS_MODEL" if harness_model else "model.model"
    with pytest.raises(ConfigError) as raised:
        validate_model_settings(config, require_model=True)
    assert str(raised.value).startswith(f"{key} 'local/0.5b': the local model 0.5b is not installed")
    assert "harness-ros model install --model 0.5b" in str(raised.value)

    if not runtime_installed():
        return
    model_file = LOCAL_MODELS["0.5b"].file_name
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / model_file).write_bytes(b"GGUF")  # check looks, it does not load
    (setting,) = validate_model_settings(config, require_model=True)
    assert (setting.key, setting.provider, setting.sees_images) == (key, "local", False)
    assert "served by the node" in setting.note


_RESET_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, '-m', 'harness_ros.cli', *sys.argv[1:]])"
)
"""A background test process inherits SIGINT ignored; a terminal's Ctrl-C is not ignored."""


def test_ctrl_c_during_a_local_decision_stops_the_demo_without_killing_the_node(
    tmp_path: Path, ros_env: dict[str, str]
) -> None:
    import time

    if not runtime_installed() or not LOCAL_MODELS["0.5b"].path.is_file():
        pytest.skip("the local model 0.5b or xllamacpp is not installed (make test-model)")
    workdir = tmp_path / "demo"
    argv = [sys.executable, "-c", _RESET_SIGINT, "demo", "--model", "local/0.5b", "--tasks", "1",
            "--task-timeout", "200", "--workdir", str(workdir)]  # fmt: skip
    env = {key: value for key, value in ros_env.items() if key != "HARNESS_MODEL"}
    # Its own process group, as a terminal runs it: Ctrl-C reaches the demo, the sim and the node.
    demo = NodeProcess(argv, env, merged=True, start_new_session=True)
    try:
        assert demo.wait_for("[turn 1] observe", 180.0), demo.log()
        # The first decision's request goes out right after the observation and takes 30 s or
        # more on a CPU: a moment later it is in flight.
        threading.Event().wait(3.0)
        assert not any("decide:" in line for line in demo.lines), "the decision must still be running"
        interrupted = time.monotonic()
        os.killpg(demo.proc.pid, signal.SIGINT)
        code = demo.proc.wait(timeout=60)
        took = time.monotonic() - interrupted
    finally:
        if demo.proc.poll() is None:
            os.killpg(demo.proc.pid, signal.SIGKILL)
            demo.proc.wait()
    assert code == 130, demo.log()
    assert not any("was killed" in line for line in demo.lines), demo.log()
    assert took < 20.0, (took, demo.log())
    assert _server_pids(workdir / "logs" / "model_server.log.ready.json") == []


def test_ctrl_c_during_a_decision_stops_a_node_that_serves_its_local_model(
    tmp_path: Path, ros_env: dict[str, str]
) -> None:
    import time

    from harness_ros.paths import default_config_path
    from harness_ros_sim.ros.children import node_command, sim_command

    if not runtime_installed() or not LOCAL_MODELS["0.5b"].path.is_file():
        pytest.skip("the local model 0.5b or xllamacpp is not installed (make test-model)")
    env = {**ros_env, "HARNESS_MODEL": "local/0.5b"}
    runs = tmp_path / "runs"
    argv = node_command(default_config_path("sim.yaml"), memory=tmp_path / "memory", runs=runs)
    sim = subprocess.Popen(sim_command(2.0), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    node = NodeProcess(argv, env)
    task: subprocess.Popen[bytes] | None = None
    try:
        assert node.wait_for("active: send a task", 180.0), node.log()
        assert "HARNESS_MODEL local/0.5b: starting llama.cpp's server" in node.log()
        task = subprocess.Popen(
            [*CLI, "task", "Fetch the green bottle from the coffee table.", "--connect-timeout", "60"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        assert node.wait_for("started: 'Fetch the green bottle", 90.0), node.log()
        # The first decision (30 s or more on a CPU) is requested right after the first observation.
        threading.Event().wait(4.0)
        interrupted = time.monotonic()
        node.proc.send_signal(signal.SIGINT)
        code = node.proc.wait(timeout=60)
        took = time.monotonic() - interrupted
    finally:
        for process in (task, node.proc, sim):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
    assert code == 0, node.log()
    assert not any("did not end within" in line for line in node.lines), node.log()
    assert took < 8.0, (took, node.log())
    assert "local model server stopped" in node.log()
    assert _server_pids(runs / "model_server.log.ready.json") == []
