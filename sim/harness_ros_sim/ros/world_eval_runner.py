"""``harness-ros eval --suite moved-objects``: does the world memory save the robot trips?

The moved-objects suite (``learning_eval.world_eval``) in two arms, world memory on and
off (``memory.world``); memory of lessons is on in both, so only the world memory
differs. Each arm keeps one memory folder across its episodes. Before every episode the
sim is reset (``~/reset``) to the same world file in both arms: the suite's moves so far
and every earlier fetch done, whatever the arm did. That reset is "someone else" moving
objects between tasks; what it changed against the ground truth the arm's previous
episode ended with is recorded (``moved_at``), so an entry that became wrong by it is
counted as outdated, never as a contradicted fact. The arms take turns episode by
episode, as in the learning suite. Success is read from the sim's ground truth.

Writes world_eval.json and world_eval.md (the per-arm table) after every pair.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from harness_ros.errors import HarnessError
from harness_ros.memory.world import WORLD_FILE
from harness_ros.task_api import TaskResult
from harness_ros_sim.learning_eval import SCRIPTED_DISCLAIMER, read_jsonl, world_yaml
from harness_ros_sim.learning_eval.world_eval import (
    WORLD_ARMS,
    WORLD_ON,
    Fetch,
    WorldArmSummary,
    WorldEpisode,
    moved_by_others,
    moved_object_suite,
    placed_world,
    placements_before,
    render_world_table,
    summarize_world_arm,
    world_metrics,
)
from harness_ros_sim.ros.children import ROS_ENV_KEYS, child_env, prepare_workdir, scoped_environ
from harness_ros_sim.ros.eval_runner import EvalClient, EvalOptions, EvalRunner, Write

__all__ = ["WORLD_JSON", "WORLD_MD", "WorldEvalRunner"]

WORLD_JSON = "world_eval.json"
WORLD_MD = "world_eval.md"
_SLIP_PROBABILITY = 0.0
"""Grasps never slip in this suite: it measures finding objects, not holding them."""


class WorldEvalRunner(EvalRunner):
    def __init__(self, options: EvalOptions, write: Write) -> None:
        super().__init__(options, write)
        self.episodes: dict[str, list[WorldEpisode]] = {arm: [] for arm in WORLD_ARMS}
        self.rows: list[dict[str, Any]] = []
        self._left: dict[str, dict[str, Any] | None] = dict.fromkeys(WORLD_ARMS)
        """The ground truth each arm's previous episode ended with."""
        self._moved_at: dict[str, dict[str, float]] = {arm: {} for arm in WORLD_ARMS}

    def _world_file(self, fetches: tuple[Fetch, ...], index: int) -> tuple[Path, dict[str, str]]:
        where = placements_before(fetches, index)
        path = self.workdir / "scenarios" / f"moved-{index:03d}.yaml"
        fetch = fetches[index]
        moves = ", ".join(f"{name} -> {surface}" for name, surface in fetch.moves) or "none"
        header = f"# episode {index}: {fetch.instruction}\n# moved by someone else first: {moves}\n"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(header + world_yaml(placed_world(where)), encoding="utf-8")
        except OSError as err:
            raise HarnessError(f"cannot write the world file {str(path)!r}: {err.strerror or err}") from None
        return path, where

    def _seed(self, index: int) -> int:
        return self.options.seed * 1000 + index

    def _world_episode(
        self, arm: str, fetch: Fetch, world: Path, where: dict[str, str], memory: Path
    ) -> WorldEpisode:
        client = self.client
        assert client is not None
        gone = self._gone()
        if gone is not None:
            raise HarnessError(gone)
        reset_at = time.time()
        client.reset_sim(world, self._seed(fetch.episode), _SLIP_PROBABILITY)
        left = self._left[arm]
        moved = moved_by_others(left, where) if left is not None else ()
        for name in moved:
            self._moved_at[arm][name] = reset_at
        task_id, end, events = client.run_task(
            fetch.instruction, timeout_s=self.task_timeout_s, alive=self._gone, on_event=self._print_event
        )
        truth = client.state_after(time.time())
        self._left[arm] = truth
        run_dir = TaskResult(task_id, end, tuple(events)).run_dir
        run_events = read_jsonl(run_dir / "events.jsonl") if run_dir is not None else []
        world_path = memory / WORLD_FILE
        world_text = world_path.read_text(encoding="utf-8") if world_path.is_file() else None
        episode = world_metrics(fetch, run_events or events, world_text, truth, self._moved_at[arm])
        self.out(
            f"    -> fetch {'DONE' if episode.fetch_done else 'NOT done'} by ground truth; "
            f"{episode.navigate_calls} navigate_to, {episode.turns} turns, "
            f"{episode.stale_detected} stale, {len(episode.contradicted)} contradicted, "
            f"{len(episode.outdated)} outdated; moved by someone else first: {', '.join(moved) or 'none'}"
        )
        self.rows.append(
            {
                "arm": arm,
                "episode": fetch.episode,
                "task_id": task_id,
                "status": end.get("status"),
                "moved_by_others": list(moved),
                **episode.to_dict(),
            }
        )
        return episode

    def _summaries(self) -> list[WorldArmSummary]:
        return [summarize_world_arm(arm, self.episodes[arm]) for arm in WORLD_ARMS]

    def _write(self, fetches: tuple[Fetch, ...], started: float) -> tuple[Path, Path]:
        summaries = self._summaries()
        data = {
            "suite": "moved-objects",
            "seed": self.options.seed,
            "episodes": self.options.episodes,
            "decisions": self._decisions(),
            "measures_learning": not self.scripted,
            "disclaimer": SCRIPTED_DISCLAIMER if self.scripted else None,
            "slip_probability": _SLIP_PROBABILITY,
            "fetches": [fetch.to_dict() for fetch in fetches],
            "summaries": {s.arm: s.to_dict() for s in summaries},
            "episodes_run": self.rows,
            "wall_s_total": round(time.time() - started, 1),
        }
        json_path, md_path = self.workdir / WORLD_JSON, self.workdir / WORLD_MD
        lines = [
            "# World memory: the moved-objects suite",
            "",
            f"Seed {self.options.seed}, {self.options.episodes} episode(s) per arm, "
            f"decisions by {self._decisions()}.",
        ]
        if self.scripted:
            lines.append(f"\nNOTE: {SCRIPTED_DISCLAIMER}")
        lines += ["", render_world_table(summaries), ""]
        json_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        md_path.write_text("\n".join(lines), encoding="utf-8")
        return json_path, md_path

    def run(self) -> int:
        from domain_coordinator import domain_id

        self._check_options()
        config = self._config_path()
        prepare_workdir(self.workdir, "eval")
        started = time.time()
        fetches = moved_object_suite(self.options.seed, self.options.episodes)
        with domain_id() as domain:
            self.env = child_env(domain, self.logs / "ros", self.options.model)
            self.out("harness-ros eval --suite moved-objects: does the world memory save trips?")
            self.out(f"  workdir: {self.workdir}")
            self.out(
                f"  {self.options.episodes} episode(s) per arm, suite seed {self.options.seed}, "
                f"decisions by {self._decisions()}"
            )
            if self.scripted:
                self.out(f"  NOTE: {SCRIPTED_DISCLAIMER}")
            with scoped_environ({key: self.env[key] for key in ROS_ENV_KEYS}):
                self.client = EvalClient(domain)
                try:
                    self.out(f"starting the simulated robot (logs in {self.logs}) ...")
                    self._start_sim()
                    for index, fetch in enumerate(fetches):
                        world, where = self._world_file(fetches, index)
                        for arm in WORLD_ARMS:
                            folder = self.workdir / arm
                            memory = folder / "memory"
                            self._start_node(
                                f"{arm}-{index:03d}", memory, folder / "runs", folder / "model_calls.jsonl",
                                config, parameters={"memory.world": "true" if arm == WORLD_ON else "false"},
                            )  # fmt: skip
                            self.out(f"  [{arm}] episode {index}: {fetch.instruction!r}")
                            self.episodes[arm].append(self._world_episode(arm, fetch, world, where, memory))
                            self._stop_node()
                        self._write(fetches, started)
                finally:
                    self._stop_children()
        json_path, md_path = self._write(fetches, started)
        self.out("")
        self.out(render_world_table(self._summaries()))
        self.out("")
        self.out(f"  world_eval.json: {json_path}")
        self.out(f"  world_eval.md:   {md_path}")
        for arm in WORLD_ARMS:
            self.out(f"  {arm + ':':10} {self.workdir / arm} (runs/<task>/report.html, memory/WORLD.md)")
        self.out(f"  scenarios:  {self.workdir / 'scenarios'}")
        self.out(f"  logs:       {self.logs}")
        return 0
