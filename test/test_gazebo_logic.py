"""gz_manipulation's decisions without ROS: the sim's checks on observed poses, the controller."""

from __future__ import annotations

import math

import pytest

from harness_ros_sim.gazebo.manipulation import (
    GAZEBO_ROBOT,
    PLACE_DROP_M,
    DriveController,
    NavigationPlan,
    ObservedWorld,
    PlacePlan,
    blocked_ahead,
    compose,
    gazebo_world_spec,
    scan_problem,
)
from harness_ros_sim.gazebo.robot_sdf import LIDAR_MOUNT_M
from harness_ros_sim.sim.spec import apartment_spec
from harness_ros_sim.sim.world import Outcome, Pose2D


def observed(x: float, y: float, yaw: float) -> ObservedWorld:
    world = ObservedWorld(gazebo_world_spec(apartment_spec()))
    world.observe_robot(Pose2D(x, y, yaw))
    for obj in apartment_spec().objects:
        surface = apartment_spec().surface(obj.surface)
        assert surface is not None
        world.observe_object(obj.id, obj.x, obj.y, surface.height + obj.height / 2)
    return world


def drive(controller: DriveController, pose: Pose2D, dt: float = 0.05, limit_s: float = 30.0) -> Pose2D:
    """A unicycle following the controller's commands until it says done."""
    t = 0.0
    while not controller.done:
        v, w = controller.command(pose)
        assert abs(v) <= controller.linear_speed + 1e-9 and abs(w) <= controller.angular_speed + 1e-9
        yaw = pose.yaw + w * dt
        pose = Pose2D(pose.x + v * math.cos(yaw) * dt, pose.y + v * math.sin(yaw) * dt, yaw)
        t += dt
        assert t < limit_s, f"no convergence: {controller.phase} at {pose}"
    return pose


def test_unknown_poses_refuse_instead_of_guessing() -> None:
    world = ObservedWorld(gazebo_world_spec(apartment_spec()))
    outcome = world.plan_navigation("kitchen")
    assert isinstance(outcome, Outcome) and "robot pose unknown" in outcome.message
    world.observe_robot(Pose2D(2.95, 3.0, math.pi))
    failure = world.pick_failure("red_cup")
    assert failure is not None and failure.message == "object not visible: no pose of red_cup from Gazebo yet"


def test_pick_reports_the_sims_failures() -> None:
    world = observed(2.4 + 0.55, 3.0, math.pi)  # the kitchen table's default standoff
    failure = world.pick_failure("red_cup")
    assert failure is not None
    assert failure.message == f"object out of reach: 0.91 m > {GAZEBO_ROBOT['reach_m']:.2f} m"
    behind = world.pick_failure("yellow_sponge")
    assert behind is not None and behind.message.startswith("object not visible: yellow_sponge is ")
    assert "field of view" in behind.message
    unknown = world.pick_failure("teapot")
    assert unknown is not None and unknown.message.startswith("unknown object 'teapot'")


def test_navigate_plans_where_the_sim_would_park_then_pick_is_in_reach() -> None:
    world = observed(4.0, 3.1, math.pi)
    plan = world.plan_navigation("red_cup")
    assert isinstance(plan, NavigationPlan)
    # Across the table's east edge from the cup: edge gap 0.35 + footprint 0.39 + 0.05.
    assert (plan.goal.x, plan.goal.y) == pytest.approx((2.05 + 0.35 + 0.39 + 0.05, 3.1))
    assert plan.goal.yaw == pytest.approx(math.pi)
    world.observe_robot(plan.goal)
    assert world.pick_failure("red_cup") is None
    outcome = world.navigation_outcome(plan, 1.16, arrived=True)
    assert outcome.success and outcome.message == "arrived at red_cup (kitchen)"
    assert outcome.details["distance_to_target_m"] == pytest.approx(0.79)


def test_navigate_reports_a_blocked_straight_line() -> None:
    world = observed(2.84, 3.1, math.pi)
    outcome = world.plan_navigation("office")
    assert isinstance(outcome, Outcome) and not outcome.success
    assert outcome.message.startswith("path blocked by office_wall_west; areas reachable")
    assert "doorway" in outcome.message
    assert isinstance(world.plan_navigation("doorway"), NavigationPlan)


def test_place_needs_a_held_object_above_the_surface() -> None:
    world = observed(2.84, 3.1, math.pi)
    empty = world.plan_place("kitchen_table", 0.0)
    assert isinstance(empty, Outcome) and empty.message == "gripper is empty: nothing to place"
    world.set_holding("red_cup")
    world.observe_object("red_cup", 2.05, 3.1, 0.75 + 0.3 + 0.05)  # lifted 0.3 m
    assert world.objects["red_cup"].on == "gripper"
    far = world.plan_place("kitchen_counter", 0.3)
    assert isinstance(far, Outcome) and far.message.startswith("surface out of reach: red_cup is held ")
    assert "navigate_to kitchen_counter first" in far.message
    plan = world.plan_place("kitchen_table", 0.3)
    assert isinstance(plan, PlacePlan)
    # Lowered so the cup's bottom is PLACE_DROP_M above the table top.
    assert plan.lift_m == pytest.approx(0.3 - (0.75 + 0.3 - (0.75 + PLACE_DROP_M)))
    world.set_holding(None)
    world.observe_object("red_cup", 2.05, 3.1, 0.75 + 0.05)
    outcome = world.place_outcome(plan)
    assert outcome.success and outcome.message == "placed red_cup on kitchen_table"
    world.observe_object("red_cup", 2.7, 3.1, 0.05)
    fell = world.place_outcome(plan)
    assert not fell.success and fell.message.startswith("red_cup fell: it came to rest on floor")
    assert world.plan_navigation("red_cup").message.startswith("red_cup is on the floor")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("start", "goal"),
    [
        (Pose2D(5.0, 1.5, math.pi), Pose2D(2.5, 1.5, math.pi / 2)),
        (Pose2D(0.0, 0.0, 0.0), Pose2D(-1.0, -0.5, 0.0)),  # goal behind
        (Pose2D(1.0, 1.0, 0.3), Pose2D(1.02, 1.01, -2.0)),  # turn in place
    ],
)
def test_the_controller_converges(start: Pose2D, goal: Pose2D) -> None:
    controller = DriveController(goal, linear_speed=0.5, angular_speed=1.0)
    end = drive(controller, start)
    assert end.distance_to(goal.x, goal.y) <= controller.position_tolerance_m + 0.01
    assert abs(math.atan2(math.sin(end.yaw - goal.yaw), math.cos(end.yaw - goal.yaw))) <= 0.05


def test_odometry_composes_onto_the_spawn_pose() -> None:
    spawn = Pose2D(5.0, 1.5, math.pi)
    pose = compose(spawn, Pose2D(1.0, 0.5, 0.5))
    assert (pose.x, pose.y, pose.yaw) == pytest.approx((4.0, 1.0, 0.5 - math.pi))


def test_blocked_ahead_judges_the_footprint_from_the_lidar_mount() -> None:
    radius, mount = GAZEBO_ROBOT["footprint_radius_m"], LIDAR_MOUNT_M[0]
    # 0.35 m from the lidar (past the 0.25 m stop distance) is 0.60 m from the base centre:
    # 0.21 m from the footprint's front, so the base stops.
    clearance = blocked_ahead([0.35], 0.0, 0.0, half_width_m=radius, stop_m=0.25, mount_x_m=mount)
    assert clearance == pytest.approx(0.25 + 0.35 - radius)
    # Off to the side the circle's front edge is further back: more clearance.
    side = blocked_ahead([0.35], math.radians(20), 0.0, half_width_m=radius, stop_m=0.5, mount_x_m=mount)
    x, y = mount + 0.35 * math.cos(math.radians(20)), 0.35 * math.sin(math.radians(20))
    assert side == pytest.approx(x - math.sqrt(radius**2 - y**2))


def test_blocked_ahead_sees_only_the_corridor_and_the_drive_left() -> None:
    # -90 deg and 45 deg: beside the 0.3 m corridor; 180 deg: behind the base centre.
    ranges = [0.5, 1.0, 0.2]
    assert blocked_ahead(ranges, -math.pi / 2, 3 * math.pi / 4, half_width_m=0.3, stop_m=0.5) is None
    assert blocked_ahead([0.4], 0.0, 0.0, half_width_m=0.3, stop_m=0.5) == pytest.approx(0.1)
    # Something beyond the goal is not in the way: 0.1 m of clearance, 0.05 m left to drive.
    assert blocked_ahead([0.4], 0.0, 0.0, half_width_m=0.3, stop_m=0.5, remaining_m=0.05) is None
    assert blocked_ahead([0.4], 0.0, 0.0, half_width_m=0.3, stop_m=0.5, remaining_m=0.5) == pytest.approx(0.1)


def test_blocked_ahead_stops_for_minus_inf_and_ignores_no_returns() -> None:
    # REP 117: -inf is an object closer than the lidar can measure.
    inf = math.inf
    assert blocked_ahead([inf, -inf, inf], -0.1, 0.1, half_width_m=0.39, stop_m=0.25, mount_x_m=0.25) == 0.0
    assert blocked_ahead([inf, math.nan, 0.0], -0.1, 0.1, half_width_m=0.39, stop_m=0.25) is None


def test_a_missing_stale_or_future_scan_cannot_clear_the_path() -> None:
    assert scan_problem(None, 100.0, 0.5) == "no lidar scan received: cannot check the path ahead"
    stale = scan_problem(98.0, 100.0, 0.5)
    assert stale == "lidar scan is 2.00 s old (max 0.5 s): cannot check the path ahead"
    future = scan_problem(101.0, 100.0, 0.5)
    assert future is not None and "stamped 1.00 s ahead of the clock" in future
    assert scan_problem(99.8, 100.0, 0.5) is None
