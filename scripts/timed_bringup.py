"""A timed bring-up from an empty folder to a task's run folder (issue 30's closing check).

The robot is `harness-ros sim` (cameras, depth, a laser and harness_sim_msgs actions);
the profile and the config are written here from scratch, as a robot engineer would
write their own. The common mistakes are fed one at a time, each to the command of
docs/robot.md's bring-up order that catches it, and each must produce its precise
message; then the corrected files run a task, and the run folder must hold its report.

    .venv/bin/python scripts/timed_bringup.py [FOLDER]

FOLDER must be empty or absent (default: a fresh temporary folder). Prints one line per
step with its wall time, and exits 1 at the first step whose message is not the expected
one. Uses a private ROS_DOMAIN_ID (HARNESS_BRINGUP_DOMAIN, default 87).
"""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HARNESS_ROS = str(Path(sys.executable).with_name("harness-ros"))

PROFILE = """# Bring-up test robot

Frame convention: x forward, y left, z up, metres, in base_link.

## Operational Envelope
### Base Footprint
Round base, radius 0.30 m.
### Base Mobility
Differential drive: straight lines and turns in place, at most 2 m per move.
### Reachable Workspace
The arm reaches 0.35 to 0.75 m ahead of the base centre, 0.4 to 1.0 m high.

## Perception Configuration
### Sensor Modalities
Head RGB-D camera, torso camera, wrist camera, a 360-degree laser.
### Model-Visible Views
front, torso, wrist

## Base-Relative Positions
### Camera Positions
front: (0.10, 0, 1.20); torso: (0.15, 0, 0.80); wrist: on the gripper.
### Initial Gripper Positions
Gripper open, tucked at (0.20, 0, 0.60).
"""


def good_config(folder: Path) -> dict[str, Any]:
    sim = {"qos": "reliable", "max_age_s": 1.5}
    tool = {"evaluated": True, "timeout_s": 60}
    return {
        "embodiment_profile_file": "robot.md",
        "memory": {"dir": str(folder / "memory")},
        "harness": {"runs_dir": str(folder / "runs"), "max_turns": 20, "task_timeout_s": 300},
        "model": {"model": "harness_demo/scripted", "timeout_s": 60},
        "observations": {
            "views": {
                name: {"topic": f"/sim/{name}/image_raw", **sim} for name in ("front", "torso", "wrist")
            },
            "depth": {"topic": "/sim/depth/image_raw", "qos": "reliable"},
            "clearance": {"scan_topic": "/sim/scan", "qos": "reliable"},
            "post_execution_wait_s": 2.0,
        },
        "tools": [
            {
                "name": "navigate_to",
                "description": "Drive to an area, surface or object by id and stop facing it.",
                "action": "/sim/navigate_to",
                "type": "harness_sim_msgs/action/NavigateTo",
                "required_arguments": ["target"],
                "base_motion": True,
                "post_condition": "The base stopped at the target.",
                **tool,
            },
            {
                "name": "pick_object",
                "description": "Grasp and lift an object by id.",
                "action": "/sim/pick_object",
                "type": "harness_sim_msgs/action/PickObject",
                "required_arguments": ["object_id"],
                "post_condition": "The gripper holds the object.",
                **tool,
            },
            {
                "name": "place_object",
                "description": "Put what the gripper holds on a surface by id.",
                "action": "/sim/place_object",
                "type": "harness_sim_msgs/action/PlaceObject",
                "required_arguments": ["surface_id"],
                "post_condition": "The held object is on the surface and the gripper is empty.",
                **tool,
            },
        ],
        "evaluator": {"kind": "sim", "ground_truth_topic": "/sim/ground_truth"},
        "safety": {"footprint_radius_m": 0.3, "margin_m": 0.1, "max_translation_m": 2.0},
    }


TASK = "Fetch the red cup from the kitchen table and put it on the coffee table."

Mutation = Callable[[dict[str, Any]], str | None]
"""Changes the config in place; returns a replacement profile text, or None."""


def _no_camera_positions(_config: dict[str, Any]) -> str:
    return PROFILE.replace(
        "### Camera Positions\nfront: (0.10, 0, 1.20); torso: (0.15, 0, 0.80); wrist: on the gripper.\n", ""
    )


def _no_torso_topic(config: dict[str, Any]) -> None:
    del config["observations"]["views"]["torso"]


def _depth_view_without_camera_info(config: dict[str, Any]) -> None:
    config["observations"]["depth"]["view"] = "front"


def _misspelt_type(config: dict[str, Any]) -> None:
    config["tools"][0]["type"] = "harness_sim_msgs/action/NavigateTo2"


def _misspelt_evaluator(config: dict[str, Any]) -> None:
    config["evaluator"]["kind"] = "simm"


def _no_model(config: dict[str, Any]) -> None:
    del config["model"]["model"]


CHECK_MISTAKES: list[tuple[str, Mutation, str]] = [
    (
        "profile item missing",
        _no_camera_positions,
        "missing item: Base-Relative Positions / Camera Positions",
    ),
    ("profile view without a topic", _no_torso_topic, "['torso'] have no camera topic"),
    (
        "depth.view without camera_info",
        _depth_view_without_camera_info,
        "depth.view needs views.front.camera_info",
    ),
    ("misspelt interface type", _misspelt_type, "has no action named 'NavigateTo2'"),
    ("unknown evaluator kind", _misspelt_evaluator, "evaluator.kind 'simm' is not a known evaluator"),
    ("no model", _no_model, "no model configured: set model.model or HARNESS_MODEL"),
]


class Bringup:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.env = {
            **os.environ,
            "ROS_DOMAIN_ID": os.environ.get("HARNESS_BRINGUP_DOMAIN", "87"),
            "ROS_LOG_DIR": str(folder / "ros_log"),
            "PYTHONUNBUFFERED": "1",
        }
        self.env.pop("HARNESS_MODEL", None)
        self.config_path = folder / "robot.yaml"
        self.started = time.monotonic()
        self.children: list[subprocess.Popen[str]] = []

    def write(self, config: dict[str, Any], profile: str = PROFILE) -> None:
        (self.folder / "robot.md").write_text(profile, encoding="utf-8")
        self.config_path.write_text(json.dumps(config, indent=2), encoding="utf-8")

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # noqa: PLW1510  the caller checks the exit status
            [HARNESS_ROS, *args],
            env=self.env,
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def step(self, name: str, action: Callable[[], str]) -> None:
        began = time.monotonic()
        try:
            detail = action()
        except AssertionError as err:
            print(f"FAIL  {name}: {err}", flush=True)
            raise SystemExit(1) from None
        print(f"{time.monotonic() - began:6.1f} s  {name}: {detail}", flush=True)

    def start(self, *args: str) -> subprocess.Popen[str]:
        log = (self.folder / f"{args[0]}.log").open("w", encoding="utf-8")
        proc = subprocess.Popen(
            [HARNESS_ROS, *args],
            env=self.env,
            cwd=self.folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.children.append(proc)
        return proc

    def stop_children(self) -> None:
        for proc in reversed(self.children):
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def expect_failure(result: subprocess.CompletedProcess[str], message: str) -> str:
    output = result.stdout + result.stderr
    assert result.returncode != 0, f"exit 0; expected {message!r}:\n{output[-2000:]}"
    assert message in output, f"expected {message!r} in:\n{output[-2000:]}"
    return next(line.strip() for line in output.splitlines() if message in line)


def wait_for_text(path: Path, text: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        content = path.read_text(encoding="utf-8") if path.exists() else ""
        for line in content.splitlines():
            if text in line:
                return line
        time.sleep(0.5)  # polling a log file another process writes
    raise AssertionError(f"{text!r} not in {path.name} after {timeout_s:.0f} s:\n{content[-2000:]}")


def main(argv: list[str]) -> int:
    folder = Path(argv[1]) if len(argv) > 1 else Path(tempfile.mkdtemp(prefix="harness_bringup_"))
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.iterdir()):
        print(f"error: {folder} is not empty", file=sys.stderr)
        return 1
    bringup = Bringup(folder)
    print(f"bring-up in {folder} (ROS_DOMAIN_ID {bringup.env['ROS_DOMAIN_ID']})", flush=True)
    try:
        for name, mutate, message in CHECK_MISTAKES:
            config = copy.deepcopy(good_config(folder))
            profile = mutate(config) or PROFILE
            bringup.write(config, profile)
            bringup.step(
                f"check, {name}",
                lambda m=message: expect_failure(bringup.run("check", "--config", "robot.yaml"), m),
            )

        bringup.write(good_config(folder))

        def check_ok() -> str:
            result = bringup.run("check", "--config", "robot.yaml")
            assert result.returncode == 0 and "check: OK" in result.stdout, result.stdout + result.stderr
            return "check: OK"

        bringup.step("check, corrected files", check_ok)
        bringup.start("sim")

        def sensors_ok() -> str:
            result = bringup.run("sensors", "--config", "robot.yaml", "--once", "--out", "seen", timeout=180)
            assert result.returncode == 0, result.stdout + result.stderr
            jpegs = sorted(p.name for p in (folder / "seen").glob("*.jpg"))
            assert len(jpegs) == 3, jpegs
            return f"exit 0, wrote {', '.join(jpegs)} and observation.txt"

        bringup.step("sensors --once against the sim", sensors_ok)

        wrong_topic = good_config(folder)
        wrong_topic["observations"]["clearance"]["scan_topic"] = "/sim/scan_raw"
        bringup.write(wrong_topic)
        bringup.step(
            "sensors, misspelt scan topic",
            lambda: expect_failure(
                bringup.run("sensors", "--config", "robot.yaml", timeout=180),
                "(similar in the graph: '/sim/scan')",
            ),
        )
        bringup.write(good_config(folder))

        def clearance_ok() -> str:
            result = bringup.run("clearance", "--config", "robot.yaml", "--once", "--json", timeout=60)
            assert result.returncode == 0, result.stdout + result.stderr
            reading = json.loads(result.stdout.strip().splitlines()[-1])
            assert reading["stale"] is False and reading["forward"] is not None, reading
            known = {d: reading[d] for d in ("forward", "left", "backward", "right")}
            return ", ".join(f"{d} {'unknown' if m is None else f'{m:.2f} m'}" for d, m in known.items())

        bringup.step("clearance --once", clearance_ok)
        bringup.start("node", "--config", "robot.yaml")
        bringup.step(
            "node start-up",
            lambda: wait_for_text(folder / "node.log", "]: configured: model", 120).split("]: ")[-1],
        )

        def task_ok() -> str:
            result = bringup.run("task", TASK, "--connect-timeout", "60", "--timeout", "240", timeout=300)
            done = [line for line in result.stdout.splitlines() if line.startswith("done:")]
            assert done, result.stdout[-2000:] + result.stderr[-2000:]
            (run,) = (folder / "runs").iterdir()
            assert (run / "report.md").is_file() and (run / "events.jsonl").is_file(), list(run.iterdir())
            return f"exit {result.returncode}, {done[-1]}; run folder {run.name}"

        bringup.step("task", task_ok)

        def node_stops() -> str:
            node = bringup.children[-1]
            node.send_signal(signal.SIGINT)
            code = node.wait(timeout=30)
            log = (folder / "node.log").read_text(encoding="utf-8")
            assert code == 0 and "Traceback" not in log and "context is invalid" not in log, log[-2000:]
            return "exit 0, no traceback"

        bringup.step("node, Ctrl-C", node_stops)
    finally:
        bringup.stop_children()
    print(f"total {time.monotonic() - bringup.started:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
