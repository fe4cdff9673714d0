"""The sim and the harness node as child processes on a private ROS domain (demo and eval).

``harness-ros demo`` and ``harness-ros eval`` both start ``harness-ros sim`` and
``harness-ros node`` as children with their output in log files, on a domain of their
own (localhost only), and wait until the children are ready while watching that none
exited. No rclpy here: the waiting is done by the task client
(``harness_ros.ros.task_client``), which spins while it waits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from harness_ros.dds import LARGE_DATA_TRANSPORTS
from harness_ros.errors import HarnessError
from harness_ros.local_model.catalog import LOCAL_PREFIX
from harness_ros_sim.names import DEMO_PROVIDER

if TYPE_CHECKING:
    from harness_ros.ros.task_client import TaskClient

__all__ = [
    "LOCAL_TASK_TIMEOUT_S",
    "ROS_ENV_KEYS",
    "ChildProcess",
    "child_env",
    "default_task_timeout",
    "exited",
    "is_local",
    "is_scripted",
    "node_command",
    "prepare_workdir",
    "scoped_environ",
    "sim_command",
    "stop_on_terminate",
    "timestamped_workdir",
    "wait_ready",
    "write_stdout",
]

LOG_TAIL_LINES = 25
STOP_WAIT_S = 10.0
ROS_ENV_KEYS = (
    "ROS_DOMAIN_ID",
    "ROS_AUTOMATIC_DISCOVERY_RANGE",
    "FASTDDS_BUILTIN_TRANSPORTS",
    "ROS_LOG_DIR",
)
"""What the parent process needs too: its task client joins the same private domain."""
_CLI = (sys.executable, "-m", "harness_ros.cli")


def write_stdout(text: str) -> None:
    """The runners' default output: one line, flushed (a child's log may follow)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def timestamped_workdir(what: str) -> Path:
    """``~/.ros/harness_ros/<what>/<timestamp>`` (the user's ROS home); ``what``: demo, eval."""
    return Path.home() / ".ros" / "harness_ros" / what / time.strftime("%Y%m%d-%H%M%S")


def prepare_workdir(workdir: Path, what: str) -> Path:
    """Create an empty ``workdir`` (``what``: demo, eval) and its ``logs/ros``; the logs folder."""
    if workdir.exists() and any(workdir.iterdir()):
        raise HarnessError(f"{what} workdir {str(workdir)!r} is not empty: choose a new one (--workdir)")
    logs = workdir / "logs"
    try:
        (logs / "ros").mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise HarnessError(f"cannot create the {what} workdir {str(workdir)!r}: {err.strerror}") from None
    return logs


@contextlib.contextmanager
def stop_on_terminate() -> Iterator[None]:
    """A SIGTERM (``kill``, a CI job's timeout) ends the run as Ctrl-C does: through the
    finally blocks that stop the sim, the node and the model server. Python's default
    ends the process at once, and the first eval stopped that way left all three running."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def is_local(model: str | None) -> bool:
    """Whether the model is served on this machine (``local/1.5b``, ``local/0.5b``,
    ``local/<file>.gguf``)."""
    return model is not None and model.startswith(LOCAL_PREFIX)


LOCAL_TASK_TIMEOUT_S = 1800.0
"""A task's wall-time limit with a local model (the first decision alone can take 5 minutes
on two busy cores)."""


def default_task_timeout(model: str | None) -> float:
    """The demo's and the eval's task timeout unless --task-timeout says otherwise."""
    return LOCAL_TASK_TIMEOUT_S if is_local(model) else 300.0


def is_scripted(model: str | None) -> bool:
    """Whether decisions come from the scripted demo policy (no model, or ``harness_demo/...``)."""
    return model is None or model.startswith(f"{DEMO_PROVIDER}/")


def child_env(domain: int, log_dir: Path, model: str | None) -> dict[str, str]:
    """This process's environment for a sim or node child on a private localhost domain."""
    env = dict(os.environ)
    env.update(
        ROS_DOMAIN_ID=str(domain),
        ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
        FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA_TRANSPORTS,
        ROS_LOG_DIR=str(log_dir),
        PYTHONUNBUFFERED="1",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    if model is not None:
        # HARNESS_MODEL wins over model.model inside the node: keep them the same.
        env["HARNESS_MODEL"] = model
    else:
        env.pop("HARNESS_MODEL", None)
    return env


def sim_command(sim_speed: float, *, seed: int = 0) -> list[str]:
    """``harness-ros sim`` at ``sim_speed`` with small (320x240) camera images."""
    return [
        *_CLI, "sim", "--seed", str(seed), "--ros-args",
        "-p", f"time_scale:={float(sim_speed)!r}",
        "-p", "image_width:=320", "-p", "image_height:=240",
    ]  # fmt: skip


def node_command(
    config: Path,
    *,
    memory: Path,
    runs: Path,
    model: str | None = None,
    api_base: str | None = None,
    record: Path | None = None,
    parameters: Mapping[str, str] | None = None,
) -> list[str]:
    """``harness-ros node`` with its memory and run folders (and more ROS parameters)."""
    node = [*_CLI, "node", "--config", str(config)]
    if record is not None:
        node += ["--record", str(record)]
    node += ["--ros-args", "-p", f"memory.dir:={memory}", "-p", f"harness.runs_dir:={runs}"]
    if model is not None:
        node += ["-p", f"model.model:={model}"]
    if api_base is not None:
        node += ["-p", f"model.api_base:={api_base}"]
    for name, value in (parameters or {}).items():
        node += ["-p", f"{name}:={value}"]
    return node


class ChildProcess:
    """One child process with its output in a log file; stopped with SIGINT, then SIGKILL."""

    def __init__(self, name: str, argv: Sequence[str], env: Mapping[str, str], log: Path) -> None:
        self.name = name
        self.log = log
        self._log_file: IO[bytes] = log.open("wb")
        self.process = subprocess.Popen(
            list(argv),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            # Its own session: a Ctrl-C in the terminal reaches the demo, which stops it cleanly.
            start_new_session=True,
        )

    def running(self) -> bool:
        return self.process.poll() is None

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:]) or "(empty log)"

    def stop(self, wait_s: float = STOP_WAIT_S) -> str:
        """Stop and say how: 'exited N', 'stopped' (SIGINT) or 'killed'."""
        how = "stopped"
        if self.running():
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(wait_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(wait_s)
                how = "killed"
        else:
            how = f"exited {self.process.returncode}"
        self._log_file.close()
        return how


@contextlib.contextmanager
def scoped_environ(values: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for this process (rclpy reads them at init), then restore."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def exited(children: Sequence[ChildProcess | None], when: str = "") -> Callable[[], str | None]:
    """A check for waits: why waiting is pointless (a child exited, with its log's last
    lines), or None. ``when`` says what was going on (``" during start-up"``)."""

    def gone() -> str | None:
        for child in children:
            if child is not None and not child.running():
                return (
                    f"the {child.name} exited with code {child.process.returncode}{when}; "
                    f"last lines of {str(child.log)!r}:\n{child.tail()}"
                )
        return None

    return gone


def wait_ready(
    client: TaskClient,
    ready: Callable[[], bool],
    children: Sequence[ChildProcess],
    timeout_s: float,
    *,
    blame: Callable[[], ChildProcess],
) -> float:
    """Wait (spinning ``client``) until ``ready()``; seconds taken. Raises ``HarnessError``
    when a child exits, or names ``blame()``'s log after ``timeout_s``."""
    started = time.monotonic()
    if not client.wait_for(ready, timeout_s, gone=exited(children, " during start-up")):
        child = blame()
        raise HarnessError(
            f"the {child.name} was not ready after {timeout_s:g} s; "
            f"last lines of {str(child.log)!r}:\n{child.tail()}"
        )
    return time.monotonic() - started
