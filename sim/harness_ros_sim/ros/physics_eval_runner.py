"""``harness-ros eval --robot stretch3-physics``: the learning eval's two arms on the physics robot.

One ``stretch3_physics`` process (Stretch 3 in MuJoCo) serves the evaluation; before every
episode it is reset through ``/sim/reset`` to its one scene, and success is read from its
``/sim/ground_truth`` after the task (the cup on the kitchen counter, the gripper empty),
never from the model's report. The harness node runs config/robots/stretch3_physics.yaml,
a fresh process per episode and arm; *memory on* keeps one memory folder across the
episodes, *memory off* starts each with an empty one (but for the operator's map, below),
as in the learning suite.

Without ``--model`` the decisions are the scripted physics fetch
(``harness_ros_sim.physics.scripted``) served by a loopback model server: the scripted demo
policy drives by place names, Stretch 3's config by poses. It checks the machinery and
measures no learning. Writes physics_eval.json and physics_eval.md after every pair.

The config's ``evaluator.kind: model`` judges the task's goal from the cameras; every
evaluated tool there has a deterministic check (the pose check, the grasp check). With a
model that takes no images (``--model local/1.5b``) and no evaluator model of its own, the
node runs with ``evaluator.kind: checks`` instead (``evaluator_parameters``): the checks
alone, no vision model needed; success is read from the ground truth either way.

Both arms start with the operator's map: before an episode, a memory folder without a
WORLD.md gets one naming the scene's two places with the poses the robot stops at
(``operator_world``; ``PHYSICS_PLACES``). Stretch 3 drives by pose (navigate_to_pose) and
the instruction names places; a real operator writes those poses once for their map. It
is given, not learnt: every memory-off folder starts with it too.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from harness_ros.config import load_config
from harness_ros.errors import HarnessError
from harness_ros.task_api import TaskResult
from harness_ros_sim.learning_eval import SCRIPTED_DISCLAIMER, Arm, read_jsonl
from harness_ros_sim.physics.scripted import PHYSICS_PLACES
from harness_ros_sim.ros.children import (
    ROS_ENV_KEYS,
    child_env,
    prepare_workdir,
    scoped_environ,
)
from harness_ros_sim.ros.eval_runner import EvalClient, EvalOptions, EvalRunner, Write

__all__ = [
    "PHYSICS_JSON",
    "PHYSICS_MD",
    "PhysicsEvalRunner",
    "evaluator_parameters",
    "operator_world",
    "physics_success",
    "seed_operator_places",
]

PHYSICS_JSON = "physics_eval.json"
PHYSICS_MD = "physics_eval.md"
PHYSICS_LABEL = "scripted physics fetch (a loopback server), not a language model"
_OBJECT, _TARGET = "red_cup", "kitchen_counter"
_LOOPBACK_KEY_ENV = "HARNESS_EVAL_LOOPBACK_KEY"
OPERATOR_EVIDENCE = "operator's map"


def physics_success(state: dict[str, Any]) -> tuple[bool, str]:
    """The fetch's post-condition on the physics robot's ground truth."""
    objects = state.get("objects")
    entry = objects.get(_OBJECT) if isinstance(objects, dict) else None
    on = entry.get("on") if isinstance(entry, dict) else None
    holding = (state.get("robot") or {}).get("holding")
    ok = on == _TARGET and not holding
    return ok, f"{_OBJECT} on {on!r} (wanted {_TARGET!r}), gripper holding {holding or 'nothing'}"


def operator_world() -> str:
    """WORLD.md as the operator of the physics scene writes it: the fetch's two places, each
    with the pose the robot stops at to work there (``PHYSICS_PLACES``)."""
    from harness_ros.memory.world import render_entry
    from harness_ros.memory.world_contracts import Pose, WorldEntry

    lines = [
        "# World",
        "",
        "The operator's map of the physics scene (harness-ros eval wrote it): where the robot",
        "stops to work at each place (x y yaw-in-radians map). Given, not learnt.",
        "",
        "## Places",
    ]
    for name, (x, y, yaw) in PHYSICS_PLACES.items():
        pose = Pose(x, y, math.radians(yaw), "map")
        entry = WorldEntry("place", name, "surface", pose=pose, state="confirmed", evidence=OPERATOR_EVIDENCE)
        lines.append(render_entry(entry))
    return "\n".join(lines) + "\n"


def seed_operator_places(memory: Path) -> bool:
    """Give ``memory`` the operator's map when it has no WORLD.md yet (the memory-on arm's
    folder keeps what it has learnt since); whether it wrote one."""
    from harness_ros.memory.world import WORLD_FILE

    path = memory / WORLD_FILE
    if path.exists():
        return False
    memory.mkdir(parents=True, exist_ok=True)
    path.write_text(operator_world(), encoding="utf-8")
    return True


def evaluator_parameters(config_path: Path, model: str, api_base: str | None = None) -> dict[str, str]:
    """The node parameters that let ``model`` run ``config_path``'s evaluator: with
    ``evaluator.kind: model`` judging on the main model (no ``evaluator.model``) and a main
    model that takes no images, ``evaluator.kind: checks`` (the deterministic checks only,
    no model); otherwise none."""
    from harness_ros.evaluation import CHECKS_KIND
    from harness_ros.model.settings import model_takes_images
    from harness_ros.plugins import model_provider

    config = load_config(config_path)
    evaluator = config.evaluator
    if evaluator.kind != "model" or evaluator.model not in (None, model):
        return {}
    settings = config.model if api_base is None else config.model.model_copy(update={"api_base": api_base})
    if model_takes_images(settings, model, model_provider):
        return {}
    return {"evaluator.kind": CHECKS_KIND}


class PhysicsEvalRunner(EvalRunner):
    def __init__(self, options: EvalOptions, write: Write) -> None:
        super().__init__(options, write)
        self.rows: list[dict[str, Any]] = []
        self.evaluator_kind = "model"

    def _config_path(self) -> Path:
        if self.options.config is not None:
            return super()._config_path()
        from harness_ros.paths import default_config_path

        return default_config_path("robots/stretch3_physics.yaml")

    def _decisions(self) -> str:
        return PHYSICS_LABEL if self.scripted else super()._decisions()

    def _start_sim(self) -> None:
        command = [
            sys.executable, "-m", "harness_ros_sim.ros.physics_node", "--ros-args",
            "-p", f"speed:={float(self.options.sim_speed)!r}",
            "-p", "image_width:=160", "-p", "image_height:=120", "-p", "rate_hz:=2.0",
        ]  # fmt: skip
        self._launch_sim("physics robot", command, "physics.log")

    def _loopback_parameters(self, url: str) -> dict[str, str]:
        return {
            "model.model": "openai/loopback",
            "model.api_base": url,
            "model.api_key_env": _LOOPBACK_KEY_ENV,
            "model.max_retries": "0",
            "model.vision": "true",
        }

    def _episode_on_physics(self, arm: Arm, episode: int, instruction: str, memory: Path) -> dict[str, Any]:
        client = self.client
        assert client is not None
        gone = self._gone()
        if gone is not None:
            raise HarnessError(gone)
        client.reset_scene()
        started = time.monotonic()
        task_id, end, events = client.run_task(
            instruction, timeout_s=self.task_timeout_s, alive=self._gone, on_event=self._print_event
        )
        wall = time.monotonic() - started
        success, check = physics_success(client.state_after(time.time()))
        run_dir = TaskResult(task_id, end, tuple(events)).run_dir
        run_events = read_jsonl(run_dir / "events.jsonl") if run_dir is not None else []
        results = [e.get("data") or {} for e in run_events or events if e.get("type") == "tool_result"]
        failed_picks = sum(
            1
            for r in results
            if r.get("tool") == "pick_object" and not (r.get("result") or {}).get("success", False)
        )
        turns = sum(1 for e in run_events or events if e.get("type") == "turn")
        self.out(
            f"    -> {'SUCCESS' if success else 'FAILURE'} by ground truth ({check}); harness status "
            f"{end.get('status')}, {turns} turns, {failed_picks} failed pick(s), {wall:.1f} s"
        )
        return {
            "arm": arm.value,
            "episode": episode,
            "task_id": task_id,
            "status": end.get("status"),
            "success": success,
            "check": check,
            "failed_picks": failed_picks,
            "turns": turns,
            "wall_s": round(wall, 1),
            "memory_dir": str(memory),
        }

    def _write(self, instruction: str, started: float) -> dict[str, Any]:
        arms: dict[str, Any] = {}
        for arm in (Arm.MEMORY_ON, Arm.MEMORY_OFF):
            rows = [r for r in self.rows if r["arm"] == arm.value]
            arms[arm.value] = {
                "episodes": len(rows),
                "fetches_done": sum(r["success"] for r in rows),
                "failed_picks": sum(r["failed_picks"] for r in rows),
                "turns": sum(r["turns"] for r in rows),
            }
        data = {
            "robot": "stretch3-physics",
            "instruction": instruction,
            "episodes": self.options.episodes,
            "decisions": self._decisions(),
            "evaluator_kind": self.evaluator_kind,
            "operator_places": {name: list(pose) for name, pose in PHYSICS_PLACES.items()},
            "measures_learning": not self.scripted,
            "disclaimer": SCRIPTED_DISCLAIMER if self.scripted else None,
            "arms": arms,
            "episodes_run": self.rows,
            "wall_s_total": round(time.time() - started, 1),
        }
        (self.workdir / PHYSICS_JSON).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        lines = [
            "# Learning eval on the physics robot (Stretch 3 in MuJoCo)",
            "",
            f"{instruction!r}, {self.options.episodes} episode(s) per arm, decisions by {self._decisions()}, "
            f"evaluator kind {self.evaluator_kind}. Both arms start with the operator's map "
            f"(WORLD.md: {', '.join(PHYSICS_PLACES)} with the poses to stop at).",
            "",
            "| arm | episodes | fetches done (ground truth) | failed picks | turns |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {name} | {a['episodes']} | {a['fetches_done']} | {a['failed_picks']} | {a['turns']} |"
            for name, a in arms.items()
        ]
        (self.workdir / PHYSICS_MD).write_text("\n".join(lines) + "\n", encoding="utf-8")
        return data

    def run(self) -> int:
        from domain_coordinator import domain_id

        from harness_ros_sim.physics.scripted import PHYSICS_INSTRUCTION, scripted_physics_reply

        self._check_options()
        config = self._config_path()
        prepare_workdir(self.workdir, "eval")
        started = time.time()
        instruction = PHYSICS_INSTRUCTION
        with domain_id() as domain, ExitStack() as stack:
            self.env = child_env(domain, self.logs / "ros", self.options.model)
            extra: dict[str, str] = {}
            if self.scripted:
                from harness_ros.testing.loopback_llm import LoopbackLLMServer

                server = stack.enter_context(LoopbackLLMServer(scripted_physics_reply))
                extra = self._loopback_parameters(server.url)
                self.env[_LOOPBACK_KEY_ENV] = os.environ.get(_LOOPBACK_KEY_ENV, "not-a-secret")
            else:
                assert self.options.model is not None  # not scripted: a model is named
                extra = evaluator_parameters(config, self.options.model, self.options.api_base)
            self.out("harness-ros eval --robot stretch3-physics: the two arms on Stretch 3 in MuJoCo")
            self.out(f"  workdir: {self.workdir}")
            self.out(f"  {self.options.episodes} episode(s) per arm, decisions by {self._decisions()}")
            if self.scripted:
                self.out(f"  NOTE: {SCRIPTED_DISCLAIMER}")
            if "evaluator.kind" in extra:
                self.out(
                    f"  evaluator: kind {extra['evaluator.kind']} ({self.options.model!r} takes no images): "
                    "each tool by its deterministic check (pose, grasp), no vision model"
                )
            self.evaluator_kind = extra.get("evaluator.kind") or load_config(config).evaluator.kind
            with scoped_environ({key: self.env[key] for key in ROS_ENV_KEYS}):
                self.client = EvalClient(domain, reset_service="/sim/reset", parameters=False)
                try:
                    self.out(f"starting the physics robot (logs in {self.logs}) ...")
                    self._start_sim()
                    for episode in range(self.options.episodes):
                        for arm in (Arm.MEMORY_ON, Arm.MEMORY_OFF):
                            folder = self.workdir / arm.value
                            memory = folder / "memory"
                            if arm is Arm.MEMORY_OFF:
                                memory = memory / f"episode-{episode:03d}"
                            label = f"{arm.value}-{episode:03d}"
                            record = folder / "model_calls.jsonl"
                            seed_operator_places(memory)
                            self._start_node(label, memory, folder / "runs", record, config, parameters=extra)
                            self.out(f"  [{arm.label}] episode {episode}: {instruction!r}")
                            self.rows.append(self._episode_on_physics(arm, episode, instruction, memory))
                            self._stop_node()
                        self._write(instruction, started)
                finally:
                    self._stop_children()
        self._write(instruction, started)
        self.out("")
        self.out((self.workdir / PHYSICS_MD).read_text(encoding="utf-8"))
        self.out(f"  physics_eval.json: {self.workdir / PHYSICS_JSON}")
        self.out(f"  logs:              {self.logs}")
        return 0
