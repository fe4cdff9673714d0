"""The ``gz_manipulation`` node: the Python sim's typed actions served against Gazebo.

Serves harness_sim_msgs actions ``gz/navigate_to``, ``gz/pick_object`` and
``gz/place_object`` (relative names) with the sim's checks and failure messages
(``harness_ros_sim.gazebo.manipulation``), executed through the topics that
sim/config/gazebo_bridge.yaml bridges:

    reads    odom (nav_msgs/Odometry), model_pose/<model> (geometry_msgs/PoseStamped,
             world frame), scan (sensor_msgs/LaserScan),
             harness_robot/grasp/<object>/state (std_msgs/String: attached | detached)
    writes   cmd_vel (geometry_msgs/Twist), lift/cmd_pos (std_msgs/Float64),
             harness_robot/grasp/<object>/attach and /detach (std_msgs/Empty),
             gz/ground_truth (std_msgs/String JSON in the Python sim's format, from
             Gazebo's poses: ``evaluator.kind: sim`` judges Gazebo runs with it)

navigate_to drives ``cmd_vel`` with ``DriveController`` on the robot's world pose (its
PosePublisher topic, else odometry composed onto the spawn pose) and stops when the
lidar sees something in the base's path (or has no fresh scan). pick_object checks visibility and reach on the
observed poses, attaches the object (DetachableJoint) and raises the lift to carry it.
place_object checks the held object is above the surface, lowers it, detaches it and
reports where it came to rest. Gazebo's DetachableJoint attaches every object when the
robot spawns; the node detaches any object reported attached that it does not hold.
Nav2 is not used: the base drives straight lines like the Python sim.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from geometry_msgs.msg import PoseStamped, Twist
from harness_sim_msgs.action import NavigateTo, PickObject, PlaceObject
from nav_msgs.msg import Odometry
from pydantic import BaseModel, ConfigDict, Field
from rclpy.action import ActionServer
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import LaserScan
from std_msgs.msg import Empty, Float64, String

from harness_ros.ros.spin import ros_args_only, spin_node_process
from harness_ros_sim.gazebo.bridge import ROS_TOPICS, ros_pose_topic
from harness_ros_sim.gazebo.manipulation import (
    DriveController,
    NavigationPlan,
    ObservedWorld,
    PlacePlan,
    blocked_ahead,
    compose,
    gazebo_world_spec,
    scan_problem,
    yaw_from_quaternion,
)
from harness_ros_sim.gazebo.robot_sdf import LIDAR_MOUNT_M, LIFT_MAX_M, ROBOT_NAME, grasp_topics
from harness_ros_sim.ros.node_support import (
    STATE_QOS,
    accepting_action_server,
    declare_parameters,
)
from harness_ros_sim.sim.spec import world_spec_by_name
from harness_ros_sim.sim.world import Outcome, Pose2D

__all__ = ["ACTIONS", "GzManipulationConfig", "GzManipulationNode", "main"]

_ACTION_NAMES = {"NavigateTo": "navigate_to", "PickObject": "pick_object", "PlaceObject": "place_object"}


ACTIONS: dict[str, Any] = {
    "gz/navigate_to": NavigateTo,
    "gz/pick_object": PickObject,
    "gz/place_object": PlaceObject,
}


class GzManipulationConfig(BaseModel):
    """The node's parameters, validated once at start-up."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    world: str = Field(default="apartment", min_length=1)
    robot_name: str = Field(default=ROBOT_NAME, min_length=1)
    spawn_x: float = Field(default=float("nan"), description="nan: the world spec's start pose")
    spawn_y: float = float("nan")
    spawn_yaw: float = float("nan")
    linear_speed: float = Field(default=0.5, gt=0)
    angular_speed: float = Field(default=1.0, gt=0)
    control_hz: float = Field(default=20.0, gt=0, le=200)
    position_tolerance_m: float = Field(default=0.05, gt=0)
    navigate_timeout_s: float = Field(default=120.0, gt=0)
    stop_distance_m: float = Field(default=0.25, ge=0)
    scan_max_age_s: float = Field(default=0.5, gt=0)
    carry_lift_m: float = Field(default=0.3, ge=0, le=LIFT_MAX_M)
    grasp_timeout_s: float = Field(default=5.0, gt=0)
    settle_timeout_s: float = Field(default=5.0, gt=0)


_DESCRIPTIONS: dict[str, str] = {
    "world": "World spec (built-in name or YAML) the Gazebo world was generated from.",
    "robot_name": "Gazebo model name of the robot (its model_pose/<name> topic).",
    "spawn_x": "Spawn x in the world (odometry origin); nan uses the world spec's start pose.",
    "spawn_y": "Spawn y in the world (odometry origin); nan uses the world spec's start pose.",
    "spawn_yaw": "Spawn yaw in the world (odometry origin); nan uses the world spec's start pose.",
    "linear_speed": "Top linear speed sent on cmd_vel (m/s).",
    "angular_speed": "Top angular speed sent on cmd_vel (rad/s).",
    "control_hz": "Rate of the navigation controller and of action feedback.",
    "position_tolerance_m": "Distance from the goal at which navigation stops driving.",
    "navigate_timeout_s": "navigate_to fails after this long without arriving.",
    "stop_distance_m": (
        "navigate_to stops when the lidar sees something in the base's path this close to the "
        "footprint (0: off, and no scan is needed)."
    ),
    "scan_max_age_s": "navigate_to stops when the newest scan is older than this (its stamp vs. the clock).",
    "carry_lift_m": "Lift position while carrying an object (0 to 0.40 m).",
    "grasp_timeout_s": "How long to wait for the DetachableJoint to report attached/detached.",
    "settle_timeout_s": "How long to wait for a lift move or a released object to come to rest.",
}


class GzManipulationNode(Node):
    """One ``ObservedWorld`` fed by Gazebo's topics, changed through three action servers."""

    def __init__(self, *, parameter_overrides: list[Parameter] | None = None) -> None:
        super().__init__("gz_manipulation", parameter_overrides=parameter_overrides or [])
        self.config = self._read_parameters()
        spec = gazebo_world_spec(
            world_spec_by_name(self.config.world),
            linear_speed=self.config.linear_speed,
            angular_speed=self.config.angular_speed,
        )
        robot = spec.robot
        c = self.config
        self.spawn = Pose2D(
            robot.x if math.isnan(c.spawn_x) else c.spawn_x,
            robot.y if math.isnan(c.spawn_y) else c.spawn_y,
            robot.yaw if math.isnan(c.spawn_yaw) else c.spawn_yaw,
        )
        self.world = ObservedWorld(spec)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._busy: str | None = None
        self._stopping = threading.Event()
        self._ground_truth_robot = False
        self._lift_m = 0.0
        self._scan: LaserScan | None = None
        self._grasp_state: dict[str, str] = {}
        self._pose_count: dict[str, int] = {}

        sensors = MutuallyExclusiveCallbackGroup()
        self._cmd_vel = self.create_publisher(Twist, ROS_TOPICS["cmd_vel"].lstrip("/"), 10)
        self._lift = self.create_publisher(Float64, ROS_TOPICS["lift"].lstrip("/"), 10)
        self.create_subscription(
            Odometry, ROS_TOPICS["odometry"].lstrip("/"), self._on_odometry, 10, callback_group=sensors
        )
        self.create_subscription(
            LaserScan,
            ROS_TOPICS["scan"].lstrip("/"),
            self._on_scan,
            qos_profile_sensor_data,
            callback_group=sensors,
        )
        self.create_subscription(
            PoseStamped,
            ros_pose_topic(c.robot_name).lstrip("/"),
            self._on_robot_pose,
            10,
            callback_group=sensors,
        )
        self._attach: dict[str, Any] = {}
        self._detach: dict[str, Any] = {}
        for obj in spec.objects:
            topics = {k: v.lstrip("/") for k, v in grasp_topics(obj.id).items()}
            self._attach[obj.id] = self.create_publisher(Empty, topics["attach"], 10)
            self._detach[obj.id] = self.create_publisher(Empty, topics["detach"], 10)
            self.create_subscription(
                String,
                topics["state"],
                lambda m, i=obj.id: self._on_grasp_state(i, m),
                10,
                callback_group=sensors,
            )
            self.create_subscription(
                PoseStamped,
                ros_pose_topic(obj.id).lstrip("/"),
                lambda m, i=obj.id: self._on_object_pose(i, m),
                10,
                callback_group=sensors,
            )
        # DetachableJoint attaches every object when the robot spawns and says so once,
        # maybe before this node listens: release them until each reports detached.
        self._release_timer = self.create_timer(1.0, self._release_unheld, callback_group=sensors)
        self._truth = self.create_publisher(String, "gz/ground_truth", STATE_QOS)
        self.create_timer(0.5, self._publish_truth, callback_group=sensors)
        actions = ReentrantCallbackGroup()
        self._servers = [
            self._server(NavigateTo, "gz/navigate_to", self._navigate, actions),
            self._server(PickObject, "gz/pick_object", self._pick, actions),
            self._server(PlaceObject, "gz/place_object", self._place, actions),
        ]
        self.get_logger().info(
            f"gz_manipulation ready: world {spec.name!r}, robot {c.robot_name!r}, spawn "
            f"({self.spawn.x:.2f}, {self.spawn.y:.2f}, {self.spawn.yaw:.2f})"
        )

    def _read_parameters(self) -> GzManipulationConfig:
        return declare_parameters(self, GzManipulationConfig, _DESCRIPTIONS, "gz_manipulation")

    # -- observations ------------------------------------------------------------------

    def _on_robot_pose(self, message: PoseStamped) -> None:
        p, q = message.pose.position, message.pose.orientation
        with self._changed:
            self._ground_truth_robot = True
            self.world.observe_robot(Pose2D(p.x, p.y, yaw_from_quaternion(q.x, q.y, q.z, q.w)))
            self._changed.notify_all()

    def _on_odometry(self, message: Odometry) -> None:
        p, q = message.pose.pose.position, message.pose.pose.orientation
        with self._changed:
            if self._ground_truth_robot:
                return  # the world pose from Gazebo does not drift; odometry does
            relative = Pose2D(p.x, p.y, yaw_from_quaternion(q.x, q.y, q.z, q.w))
            self.world.observe_robot(compose(self.spawn, relative))
            self._changed.notify_all()

    def _on_scan(self, message: LaserScan) -> None:
        with self._changed:
            self._scan = message
            self._changed.notify_all()

    def _on_object_pose(self, object_id: str, message: PoseStamped) -> None:
        p = message.pose.position
        with self._changed:
            self.world.observe_object(object_id, p.x, p.y, p.z)
            self._pose_count[object_id] = self._pose_count.get(object_id, 0) + 1
            self._changed.notify_all()

    def _on_grasp_state(self, object_id: str, message: String) -> None:
        with self._changed:
            self._grasp_state[object_id] = message.data
            held = self.world.holding
            self._changed.notify_all()
        if message.data == "attached" and object_id != held:
            # DetachableJoint attaches on spawn: release what the robot was not asked to hold.
            self.get_logger().info(f"{object_id} attached without a grasp: detaching it")
            self._detach[object_id].publish(Empty())

    def _release_unheld(self) -> None:
        with self._lock:
            loose = [
                i for i in self._detach if i != self.world.holding and self._grasp_state.get(i) != "detached"
            ]
        for object_id in loose:
            if self._detach[object_id].get_subscription_count() > 0:
                self._detach[object_id].publish(Empty())
        if not loose:
            self._release_timer.cancel()

    def _publish_truth(self) -> None:
        with self._lock:
            state = self.world.ground_truth()
            state["robot"]["busy"] = _ACTION_NAMES.get(self._busy) if self._busy else None
        state["stamp"] = self.get_clock().now().nanoseconds / 1e9
        self._truth.publish(String(data=json.dumps(state, sort_keys=True)))

    def _wait(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: predicate() or self._stopping.is_set(), timeout_s) and (
                not self._stopping.is_set()
            )

    # -- actions -------------------------------------------------------------------------

    def _server(self, action_type: Any, name: str, run: Callable[..., Outcome], group: Any) -> ActionServer:
        def execute(goal_handle: ServerGoalHandle) -> Any:
            return self._execute(goal_handle, action_type, run)

        return accepting_action_server(self, action_type, name, execute, group)

    def _execute(self, goal_handle: ServerGoalHandle, action_type: Any, run: Callable[..., Outcome]) -> Any:
        name = action_type.__name__
        with self._lock:
            busy = self._busy
            if busy is None:
                self._busy = name
        if busy is not None:
            outcome = Outcome(False, f"robot is busy with {busy}; wait for it or cancel it", {})
        else:
            try:
                outcome = run(goal_handle)
            finally:
                with self._lock:
                    self._busy = None
        self.get_logger().info(f"{name} -> {'success' if outcome.success else 'failure'}: {outcome.message}")
        fields = action_type.Goal.get_fields_and_field_types()
        arguments = {key: getattr(goal_handle.request, key) for key in fields}
        with self._lock:
            self.world.record(_ACTION_NAMES[name], arguments, outcome)
        self._publish_truth()
        if goal_handle.is_cancel_requested and not outcome.success:
            goal_handle.canceled()
        elif outcome.success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return _fill(
            action_type.Result(), {**outcome.details, "success": outcome.success, "message": outcome.message}
        )

    def _stop_base(self) -> None:
        self._cmd_vel.publish(Twist())

    def _pose_known(self) -> None:
        """Just after start-up the first pose may still be on its way: give it a moment."""
        self._wait(lambda: self.world.robot_seen, self.config.settle_timeout_s)

    def _navigate(self, goal_handle: ServerGoalHandle) -> Outcome:
        goal = goal_handle.request
        self._pose_known()
        if self.config.stop_distance_m > 0:
            # Just after start-up the first scan may still be on its way, as the pose may.
            self._wait(lambda: self._scan is not None, self.config.settle_timeout_s)
        with self._lock:
            plan = self.world.plan_navigation(goal.target, goal.standoff_m if goal.standoff_m > 0 else None)
        if isinstance(plan, Outcome):
            return plan
        return self._drive(goal_handle, plan)

    def _path_problem(self, remaining_m: float) -> str | None:
        """Why the base must not drive forward now (None when the lidar clears the path):
        no scan, a stale one, or a return in the footprint's path within the stop distance."""
        scan = self._scan
        stamp = None if scan is None else scan.header.stamp.sec + scan.header.stamp.nanosec / 1e9
        now = self.get_clock().now().nanoseconds / 1e9
        problem = scan_problem(stamp, now, self.config.scan_max_age_s)
        if problem is not None or scan is None:
            return problem
        clearance = blocked_ahead(
            list(scan.ranges),
            scan.angle_min,
            scan.angle_increment,
            half_width_m=self.world.spec.robot.footprint_radius_m,
            stop_m=self.config.stop_distance_m,
            mount_x_m=LIDAR_MOUNT_M[0],
            remaining_m=remaining_m,
        )
        if clearance is None:
            return None
        return f"path blocked by an obstacle {clearance:.2f} m ahead of the base (lidar)"

    def _drive(self, goal_handle: ServerGoalHandle, plan: NavigationPlan) -> Outcome:
        c = self.config
        controller = DriveController(
            plan.goal,
            linear_speed=c.linear_speed,
            angular_speed=c.angular_speed,
            position_tolerance_m=c.position_tolerance_m,
        )
        period = 1.0 / c.control_hz
        deadline = time.monotonic() + c.navigate_timeout_s
        travelled, last = 0.0, plan.start
        total = max(plan.start.distance_to(plan.goal.x, plan.goal.y), 1e-6)
        why = ""
        try:
            while True:
                with self._lock:
                    pose = self.world.pose
                travelled += last.distance_to(pose.x, pose.y)
                last = pose
                linear, angular = controller.command(pose)
                if controller.done:
                    break
                if goal_handle.is_cancel_requested or self._stopping.is_set():
                    why = f"cancelled at {1 - controller.distance(pose) / total:.0%}"
                    break
                if time.monotonic() > deadline:
                    why = (
                        f"stopped short of {plan.target}: {controller.distance(pose):.2f} m from the goal "
                        f"after {c.navigate_timeout_s:.0f} s"
                    )
                    break
                if linear > 0 and c.stop_distance_m > 0:
                    problem = self._path_problem(controller.distance(pose))
                    if problem is not None:
                        why = problem
                        break
                self._cmd_vel.publish(Twist(linear=_vector(linear), angular=_vector(0.0, z=angular)))
                goal_handle.publish_feedback(
                    NavigateTo.Feedback(
                        progress=float(min(1.0, max(0.0, 1 - controller.distance(pose) / total))),
                        distance_remaining_m=float(controller.distance(pose)),
                    )
                )
                self._stopping.wait(period)
        finally:
            self._stop_base()
        with self._lock:
            return self.world.navigation_outcome(plan, travelled, arrived=controller.done, why=why)

    def _pick(self, goal_handle: ServerGoalHandle) -> Outcome:
        object_id = goal_handle.request.object_id
        self._pose_known()
        with self._lock:
            failure = self.world.pick_failure(object_id)
            if failure is not None:
                return failure
            state = self.world.objects[object_id]
            distance = self.world.pose.distance_to(state.x, state.y)
            z0 = state.z
        goal_handle.publish_feedback(PickObject.Feedback(progress=0.2, stage="closing"))
        with self._lock:
            self._grasp_state.pop(object_id, None)
            self.world.set_holding(object_id)  # before the state arrives: it is not auto-detached
        self._attach[object_id].publish(Empty())
        if not self._wait(
            lambda: self._grasp_state.get(object_id) == "attached", self.config.grasp_timeout_s
        ):
            with self._lock:
                self.world.set_holding(None)
            message = (
                f"grasp failed: Gazebo did not report {object_id} attached within "
                f"{self.config.grasp_timeout_s:.0f} s (is the bridge running?)"
            )
            return Outcome(False, message, {"held_object_id": "", "distance_m": distance})
        goal_handle.publish_feedback(PickObject.Feedback(progress=0.6, stage="lifting"))
        rise = self.config.carry_lift_m - self._lift_m
        self._set_lift(self.config.carry_lift_m)
        if rise > 0.05:
            # Confirmed by the object's own pose rising; a stuck lift is reported, not fatal.
            self._wait(lambda: self.world.objects[object_id].z >= z0 + rise / 2, self.config.settle_timeout_s)
        with self._lock:
            return self.world.pick_outcome(object_id, distance)

    def _place(self, goal_handle: ServerGoalHandle) -> Outcome:
        surface_id = goal_handle.request.surface_id
        with self._lock:
            plan = self.world.plan_place(surface_id, self._lift_m)
        if isinstance(plan, Outcome):
            return plan
        return self._release(goal_handle, plan)

    def _release(self, goal_handle: ServerGoalHandle, plan: PlacePlan) -> Outcome:
        surface = self.world.spec.surface(plan.surface_id)
        assert surface is not None
        goal_handle.publish_feedback(PlaceObject.Feedback(progress=0.2, stage="reaching"))
        self._set_lift(plan.lift_m)
        self._wait(
            lambda: self.world.objects[plan.object_id].z <= surface.height + 0.06,
            self.config.settle_timeout_s,
        )
        goal_handle.publish_feedback(PlaceObject.Feedback(progress=0.5, stage="releasing"))
        with self._lock:
            self._grasp_state.pop(plan.object_id, None)
            self.world.set_holding(None)
            seen = self._pose_count.get(plan.object_id, 0)
        self._detach[plan.object_id].publish(Empty())
        if not self._wait(
            lambda: self._grasp_state.get(plan.object_id) == "detached", self.config.grasp_timeout_s
        ):
            with self._lock:
                self.world.set_holding(plan.object_id)
            message = f"release failed: Gazebo did not report {plan.object_id} detached"
            return Outcome(False, message, {"placed_object_id": "", "distance_m": plan.distance_m})
        goal_handle.publish_feedback(PlaceObject.Feedback(progress=0.8, stage="retracting"))

        # Judged from poses reported after the release (PosePublisher at 10 Hz): a few,
        # so an object that slides off the edge is seen falling, then resting.
        def settled() -> bool:
            fresh = self._pose_count.get(plan.object_id, 0) >= seen + 3
            return fresh and self.world.support_of(*self.world.object_position(plan.object_id)) != "air"

        self._wait(settled, self.config.settle_timeout_s)
        with self._lock:
            return self.world.place_outcome(plan)

    def _set_lift(self, position_m: float) -> None:
        self._lift_m = min(max(position_m, 0.0), LIFT_MAX_M)
        self._lift.publish(Float64(data=float(self._lift_m)))

    def destroy_node(self) -> None:
        stopping: threading.Event | None = getattr(self, "_stopping", None)
        if stopping is not None:
            stopping.set()
            with self._changed:
                self._changed.notify_all()
        for server in getattr(self, "_servers", ()):
            server.destroy()
        super().destroy_node()


def _vector(x: float, *, z: float = 0.0) -> Any:
    from geometry_msgs.msg import Vector3

    return Vector3(x=float(x), y=0.0, z=float(z))


def _fill(message: Any, values: Mapping[str, Any]) -> Any:
    """Set the fields of ``message`` that ``values`` names; other keys are ignored."""
    fields = message.get_fields_and_field_types()
    for key, value in values.items():
        if key in fields:
            setattr(message, key, float(value) if fields[key] in {"float", "double"} else value)
    return message


def run(*, ros_args: list[str] | None = None) -> int:
    return spin_node_process("gz_manipulation", GzManipulationNode, ros_args)


def main(args: list[str] | None = None) -> int:
    """``ros2 run harness_ros gz_manipulation --ros-args -p use_sim_time:=true``"""
    ros_args = ros_args_only("gz_manipulation", args)
    return 2 if ros_args is None else run(ros_args=ros_args)


if __name__ == "__main__":
    sys.exit(main())
