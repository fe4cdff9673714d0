"""The sim's deterministic evaluator: pure judging of ground truth, and over a real topic."""

from __future__ import annotations

import json
import math
import threading
from typing import Any

import pytest

from harness_ros.evaluation.contracts import VerdictStatus
from harness_ros.observation.contracts import Observation
from harness_ros_sim.sim import Pose2D, World, apartment_spec

pytestmark = pytest.mark.ros


def _state(world: World, stamp: float = 0.0) -> dict[str, Any]:
    return {**world.ground_truth(), "stamp": stamp}


def test_judge_checks_the_world_state_of_each_tool() -> None:
    from harness_ros_sim.ros.sim.evaluator import GroundTruthJudge

    judge = GroundTruthJudge()
    world = World(apartment_spec(), seed=0)
    assert world.navigate_to("kitchen_table").success
    nav = judge.judge("navigate_to", _state(world), None)
    assert nav.ok, nav
    assert "base stopped at (2.95, 3.00)" in nav.evidence
    assert not world.pick_object("red_cup").success  # out of reach: nothing held
    pick = judge.judge("pick_object", _state(world), None)
    assert not pick.ok and "holds None, not 'red_cup'" in pick.reason
    assert world.navigate_to("red_cup").success and world.pick_object("red_cup").success
    assert judge.judge("pick_object", _state(world), "red_cup").ok
    assert world.navigate_to("coffee_table").success and world.place_object("coffee_table").success
    place = judge.judge("place_object", _state(world), "red_cup")
    assert place.ok and "red_cup is on 'coffee_table'" in place.evidence
    assert not judge.judge("place_object", _state(world), None).ok  # nothing seen in the gripper
    assert not judge.judge("open_door", _state(world), None).ok


def test_judge_fails_a_navigation_that_stopped_far_from_its_target() -> None:
    from harness_ros_sim.ros.sim.evaluator import GroundTruthJudge

    world = World(apartment_spec(), seed=0)
    assert world.navigate_to("red_cup").success
    state = _state(world)
    state["robot"] = {**state["robot"], "x": 8.0, "y": 1.0, "area": "living_room"}
    check = GroundTruthJudge().judge("navigate_to", state, None)
    assert not check.ok and "from red_cup" in check.reason
    state["robot"]["busy"] = "navigate_to"
    assert "still busy" in GroundTruthJudge().judge("navigate_to", state, None).reason


def test_next_to_an_object_means_within_the_reach_the_pick_applies() -> None:
    from harness_ros_sim.ros.sim.evaluator import GroundTruthJudge

    world = World(apartment_spec(), seed=0)
    assert world.navigate_to("kitchen").success and world.navigate_to("blue_mug").success
    state = _state(world)
    near = GroundTruthJudge().judge("navigate_to", state, None)
    assert near.ok and "0.55 m from blue_mug at (0.45, 2.40) (arm's reach 0.75 m)" in near.evidence
    # Where the sim used to park, on the counter's far side: 0.95 m, and the pick would fail.
    state["robot"] = {**state["robot"], "x": 0.45, "y": 1.45}
    far = GroundTruthJudge().judge("navigate_to", state, None)
    assert not far.ok
    assert far.reason == "the base stopped 0.95 m from blue_mug, beyond the arm's reach (0.75 m)"
    world.pose = Pose2D(0.45, 1.45, math.pi / 2)
    assert world.pick_object("blue_mug").message == "object out of reach: 0.95 m > 0.75 m"
    # The reach is the world's own (Gazebo's robot reaches 0.85 m), never assumed.
    state["robot"]["reach_m"] = 0.96
    assert GroundTruthJudge().judge("navigate_to", state, None).ok
    del state["robot"]["reach_m"]
    missing = GroundTruthJudge().judge("navigate_to", state, None)
    assert not missing.ok and "robot.reach_m" in missing.reason


def test_next_to_a_surface_means_its_nearest_edge_within_reach() -> None:
    from harness_ros_sim.ros.sim.evaluator import GroundTruthJudge

    world = World(apartment_spec(), seed=0)
    assert world.navigate_to("kitchen_table").success  # 0.55 m off the table's east edge
    state = _state(world)
    check = GroundTruthJudge().judge("navigate_to", state, None)
    assert check.ok and "0.55 m from the nearest edge of kitchen_table" in check.evidence
    state["robot"] = {**state["robot"], "x": 2.4 + 0.8}  # 0.80 m off the edge
    far = GroundTruthJudge().judge("navigate_to", state, None)
    assert not far.ok and far.reason.startswith("the base stopped 0.80 m from kitchen_table, beyond")
    # A standoff asked beyond the reach is judged as asked.
    world = World(apartment_spec(), seed=0)
    assert world.navigate_to("kitchen_table", standoff_m=1.0).success
    asked = GroundTruthJudge().judge("navigate_to", _state(world), None)
    assert asked.ok and "standoff 1.00 m asked" in asked.evidence


def test_evaluator_judges_fresh_ground_truth_from_the_topic(ros_context: Any) -> None:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import String

    from harness_ros_sim.ros.sim.evaluator import GROUND_TRUTH_QOS, SimGroundTruthEvaluator

    node = rclpy.create_node("evaluator_test", context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        empty = SimGroundTruthEvaluator(node, "/test/no_truth", wait_s=0.3)
        verdict = empty.evaluate(
            tool="pick_object", run_id="r0", post_condition="held", observation=Observation(0)
        )
        assert verdict.status is VerdictStatus.FAILURE and verdict.failure_reason == (
            "no ground truth on '/test/no_truth'"
        )

        evaluator = SimGroundTruthEvaluator(node, "/test/ground_truth", wait_s=5.0)
        publisher = node.create_publisher(String, "/test/ground_truth", GROUND_TRUTH_QOS)
        world = World(apartment_spec(), seed=0)
        assert world.navigate_to("red_cup").success and world.pick_object("red_cup").success
        now = node.get_clock().now().nanoseconds / 1e9

        # A state from before the tool's end, then a fresh one: only the fresh one counts.
        # Transient local: the evaluator gets the latest even if it matches after publication.
        publisher.publish(String(data=json.dumps(_state(World(apartment_spec()), now - 10))))
        publisher.publish(String(data=json.dumps(_state(world, now + 5.0))))
        verdict = evaluator.evaluate(
            tool="pick_object", run_id="r1", post_condition="held", observation=Observation(0)
        )
        assert verdict.status is VerdictStatus.SUCCESS, verdict
        assert verdict.run_id == "r1"
        assert "gripper holds 'red_cup'" in verdict.evidence
    finally:
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
