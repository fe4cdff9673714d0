"""The world-memory evaluation's pure core (issue 48, item 5): the moved-objects suite and
the per-arm figures (fetches, navigate_to and turns per fetch, stale, contradicted)."""

from __future__ import annotations

from harness_ros_sim.learning_eval.world_eval import (
    SURFACES,
    moved_object_suite,
    summarize_world_arm,
    world_metrics,
)
from harness_ros_sim.sim.spec import apartment_spec


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
    }
