"""The world-memory evaluation's pure core (issue 48, item 5): the moved-objects suite and
the per-arm figures (fetches, navigate_to and turns per fetch, stale, contradicted)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support.processes import run_orchestrator

from harness_ros.memory.world import WORLD_FILE, WorldDocument
from harness_ros_sim.learning_eval.world_eval import (
    SURFACES,
    moved_by_others,
    moved_object_suite,
    placed_world,
    placements_before,
    summarize_world_arm,
    world_metrics,
)
from harness_ros_sim.sim.spec import apartment_spec
from harness_ros_sim.sim.world import World

CLI = [sys.executable, "-m", "harness_ros.cli"]


def test_the_suite_is_seeded_moves_objects_and_never_names_the_place() -> None:
    suite = moved_object_suite(7, 12)
    assert suite == moved_object_suite(7, 12)  # the same seeds for both arms
    assert suite != moved_object_suite(8, 12)
    assert any(fetch.moves for fetch in suite) and not suite[0].moves
    where = {spec.id: spec.surface for spec in apartment_spec().objects}
    for fetch in suite:
        for moved, surface in fetch.moves:
            assert surface in SURFACES and surface != where[moved]
            where[moved] = surface
        source = where[fetch.object_id]
        assert fetch.target != source
        assert source.replace("_", " ") not in fetch.instruction  # the place is not named
        assert fetch.object_id.replace("_", " ") in fetch.instruction
        assert fetch.target.replace("_", " ") in fetch.instruction
        where[fetch.object_id] = fetch.target


def _events(navigates: int, turns: int, stale: int) -> list[dict[str, object]]:
    events: list[dict[str, object]] = [{"type": "turn", "data": {}} for _ in range(turns)]
    events += [{"type": "tool_result", "data": {"tool": "navigate_to"}} for _ in range(navigates)]
    events.append({"type": "tool_result", "data": {"tool": "navigate_to", "refusal": "safety"}})
    changes = [{"name": "red_cup", "change": "stale"}] * stale + [{"name": "red_cup", "change": "moved"}]
    events.append({"type": "memory_consolidation", "data": {"world": {"changes": changes}}})
    return events


def test_world_metrics_count_and_catch_a_contradicted_fact() -> None:
    fetch = moved_object_suite(7, 3)[0]
    truth = {
        "objects": {fetch.object_id: {"on": fetch.target}, "blue_mug": {"on": "coffee_table"}},
        "gripper": {},
    }
    world = (
        "# World\n\n## Objects\n"
        f"- {fetch.object_id} | where: {fetch.target} | state: confirmed\n"
        "- blue_mug | where: kitchen_counter | state: stale\n"
    )
    ok = world_metrics(fetch, _events(3, 5, 1), world, truth)
    assert (ok.fetch_done, ok.navigate_calls, ok.turns, ok.stale_detected, ok.contradicted) == (
        True,
        3,
        5,
        1,
        (),
    )
    wrong = world.replace("state: stale", "state: confirmed")
    bad = world_metrics(fetch, _events(2, 4, 0), wrong, truth)
    assert bad.contradicted == ("blue_mug: remembered kitchen_counter, true coffee_table",)
    missed = world_metrics(fetch, [], None, {"objects": {fetch.object_id: {"on": "x"}}})
    assert not missed.fetch_done
    summary = summarize_world_arm("world_on", [ok, bad, missed])
    assert summary.to_dict() == {
        "arm": "world_on",
        "episodes": 3,
        "fetches_done": 2,
        "navigate_per_fetch": 2.5,
        "turns_per_fetch": 4.5,
        "stale_detected": 1,
        "contradicted": 1,
        "outdated": 0,
    }


def test_a_fact_someone_else_made_wrong_is_outdated_not_contradicted() -> None:
    fetch = moved_object_suite(7, 3)[0]
    truth = {"objects": {"blue_mug": {"on": "coffee_table"}}, "gripper": {}}
    world = (
        "# World\n\n## Objects\n"
        "- blue_mug | where: kitchen_counter | state: confirmed | confirmed: 2026-12-05T06:00:00Z\n"
    )
    confirmed = WorldDocument.parse(world).objects()[0].confirmed
    assert confirmed is not None
    after_move = world_metrics(fetch, [], world, truth, {"blue_mug": confirmed + 60.0})
    assert (after_move.contradicted, after_move.outdated) == (
        (),
        ("blue_mug: remembered kitchen_counter, true coffee_table",),
    )
    # Confirmed after the move (or in its second), or the object never moved: contradicted.
    for moved_at in (
        {"blue_mug": confirmed - 60.0},
        {"blue_mug": confirmed + 0.5},
        {"red_cup": confirmed + 60},
    ):
        wrong = world_metrics(fetch, [], world, truth, moved_at)
        assert len(wrong.contradicted) == 1 and wrong.outdated == ()
    assert summarize_world_arm("world_on", [after_move]).outdated == 1


def test_both_arms_start_every_episode_from_the_same_placed_world() -> None:
    suite = moved_object_suite(0, 8)
    base = {spec.id: spec for spec in apartment_spec().objects}
    where = {spec.id: spec.surface for spec in apartment_spec().objects}
    placed_elsewhere = 0
    for index, fetch in enumerate(suite):
        where.update(fetch.moves)  # someone else's moves, then the fetch (done by someone if not the robot)
        assert placements_before(suite, index) == where
        spec = placed_world(where)
        assert spec == placed_world(where)  # deterministic: one world file for both arms
        positions = [(o.x, o.y) for o in spec.objects]
        assert len(set(positions)) == len(positions)
        for obj in spec.objects:
            assert obj.surface == where[obj.id]
            if obj.surface == base[obj.id].surface:
                assert (obj.x, obj.y) == (base[obj.id].x, base[obj.id].y)
            elif obj.surface not in ("office_desk", "office_shelf"):  # the office needs the doorway
                # where the robot would place it: picked from the surface's own standoff
                world = World(spec, slip_probability=0.0)
                assert world.navigate_to(obj.surface).success, (index, obj)
                assert world.pick_object(obj.id).success, (index, obj)
                placed_elsewhere += 1
        where[fetch.object_id] = fetch.target
    assert placed_elsewhere >= 3
    with pytest.raises(ValueError, match="unknown surface 'sofa'"):
        placed_world({"red_cup": "sofa"})


def test_what_differs_from_how_an_arm_left_the_world_was_moved_by_someone_else() -> None:
    left = {
        "objects": {"red_cup": {"on": "coffee_table"}, "blue_mug": {"on": "kitchen_counter"}},
        "gripper": {"holding": "green_bottle"},
    }
    where = {"red_cup": "coffee_table", "blue_mug": "office_desk", "green_bottle": "kitchen_table"}
    assert moved_by_others(left, where) == ("blue_mug", "green_bottle")


@pytest.mark.serial
@pytest.mark.ros
@pytest.mark.slow
def test_moved_objects_eval_two_scripted_episodes_per_arm(tmp_path: Path, ros_env: dict[str, str]) -> None:
    """harness-ros eval --suite moved-objects over DDS (sim and nodes as processes): the
    arms differ only in memory.world; someone else's move between the tasks leaves the
    world-on arm's WORLD.md with an outdated fact, never a contradicted one."""
    pytest.importorskip("harness_sim_msgs", reason="build it first: scripts/build_interfaces.sh .venv")
    workdir = tmp_path / "eval"
    # Seed 218: the red cup to the coffee table; then someone moves it to the office desk
    # and the robot fetches the green bottle (both fetches within the scripted policy's reach).
    result = run_orchestrator(
        [
            *CLI,
            "eval",
            "--suite",
            "moved-objects",
            "--episodes",
            "2",
            "--seed",
            "218",
            "--sim-speed",
            "8",
            "--workdir",
            str(workdir),
        ],
        env=ros_env,
        timeout=170,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    starts = [line.split(":")[0].strip() for line in result.stdout.splitlines() if "] episode " in line]
    assert starts == [
        "[world_on] episode 0",
        "[world_off] episode 0",
        "[world_on] episode 1",
        "[world_off] episode 1",
    ]
    data = json.loads((workdir / "world_eval.json").read_text())
    assert data["fetches"] == [fetch.to_dict() for fetch in moved_object_suite(218, 2)]
    assert data["measures_learning"] is False
    rows = {(row["arm"], row["episode"]): row for row in data["episodes_run"]}
    for arm in ("world_on", "world_off"):
        summary = data["summaries"][arm]
        assert summary["fetches_done"] == 2 and summary["contradicted"] == 0, summary
        assert summary["navigate_per_fetch"] == 2.0
        assert rows[(arm, 1)]["moved_by_others"] == ["red_cup"]
        assert summary["turns_per_fetch"] == sum(rows[(arm, i)]["turns"] for i in (0, 1)) / 2
    # Only memory.world differs: the world-on arm remembers, the world-off arm writes no WORLD.md.
    on = WorldDocument.parse((workdir / "world_on" / "memory" / WORLD_FILE).read_text())
    assert {e.name: (e.where, e.state) for e in on.objects()} == {
        "red_cup": ("coffee_table", "confirmed"),
        "green_bottle": ("kitchen_table", "confirmed"),
    }
    assert not (workdir / "world_off" / "memory" / WORLD_FILE).exists()
    assert data["summaries"]["world_on"]["outdated"] == 1
    assert rows[("world_on", 1)]["outdated"] == ["red_cup: remembered coffee_table, true office_desk"]
    assert data["summaries"]["world_off"]["outdated"] == 0
    table = (workdir / "world_eval.md").read_text()
    assert "| world_on | 2 | 2 | 2 | " in table and "contradicted (must be 0)" in table
