"""What ``gz_manipulation`` decides, without ROS: the sim's checks against Gazebo's poses.

``ObservedWorld`` is the Python sim's ``World`` whose robot and object states are set
from what Gazebo reports (the robot and object poses of the PosePublisher topic, or
odometry), so navigate/pick/place fail for the same reasons and with the same
messages as in the Python sim: "path blocked by office_wall_west; ...", "object not
visible: ...", "object out of reach: 0.91 m > 0.85 m", "gripper is empty: ...". Only
the execution differs: Gazebo's base is driven by ``DriveController`` on ``cmd_vel``,
a grasp is a DetachableJoint attach, and a place is a detach with the object above the
surface, judged afterwards from where the object came to rest.

Frame: the map is Gazebo's world frame (the world SDF is generated from the same spec).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness_ros_sim.gazebo.robot_sdf import LIFT_MAX_M
from harness_ros_sim.sim.spec import BoxSpec, WorldSpec
from harness_ros_sim.sim.world import Activity, Outcome, Pose2D, World

__all__ = [
    "GAZEBO_ROBOT",
    "PLACE_DROP_M",
    "DriveController",
    "NavigationPlan",
    "ObservedWorld",
    "PlacePlan",
    "blocked_ahead",
    "compose",
    "gazebo_world_spec",
    "scan_problem",
    "wrap",
    "yaw_from_quaternion",
]

GAZEBO_ROBOT: dict[str, float] = {
    "footprint_radius_m": 0.39,  # profile: circumscribed radius of the 0.60 x 0.50 m base
    "reach_m": 0.85,  # profile: 0.85 m reach; reliable grasps up to 0.90 m ahead
    "gripper_x": 0.55,  # profile: ready pose x = 0.55, z = 0.90 (the model's gripper_link)
    "gripper_z": 0.90,
    "linear_speed": 0.5,  # profile top speeds; the DiffDrive limits in the model
    "angular_speed": 1.0,
    "view_fov_deg": 80.0,  # the head camera's horizontal_fov 1.396 rad
    "view_range_m": 4.0,  # profile: depth valid to 4.0 m
}
"""The Gazebo robot's numbers where they differ from the Python sim's robot."""

PLACE_DROP_M = 0.03
"""Height of the held object's bottom above the surface when it is released."""

SURFACE_HEIGHT_TOLERANCE_M = 0.05
"""An object whose bottom is this close to a surface's top and inside it rests on it."""


def gazebo_world_spec(spec: WorldSpec, **robot: float) -> WorldSpec:
    """``spec`` with the Gazebo robot's numbers (``GAZEBO_ROBOT``, then ``robot`` overrides)."""
    return spec.model_copy(update={"robot": spec.robot.model_copy(update={**GAZEBO_ROBOT, **robot})})


def wrap(angle: float) -> float:
    return math.atan2(math.sin(angle), math.cos(angle))


def yaw_from_quaternion(x: float, y: float, z: float, w: float) -> float:
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def compose(origin: Pose2D, relative: Pose2D) -> Pose2D:
    """``relative`` (e.g. odom -> base_link) expressed in ``origin``'s frame (map -> odom)."""
    c, s = math.cos(origin.yaw), math.sin(origin.yaw)
    return Pose2D(
        origin.x + c * relative.x - s * relative.y,
        origin.y + s * relative.x + c * relative.y,
        wrap(origin.yaw + relative.yaw),
    )


def blocked_ahead(
    ranges: list[float],
    angle_min: float,
    angle_increment: float,
    *,
    half_width_m: float,
    stop_m: float,
    mount_x_m: float = 0.0,
    remaining_m: float = math.inf,
) -> float | None:
    """Clearance (m) from the footprint to the nearest lidar return in its path, if it is
    closer than ``stop_m`` and than ``remaining_m`` (the drive left: something beyond the
    goal is not in the way), else None.

    The base is a circle of radius ``half_width_m`` driving forward along +x; the lidar
    sits ``mount_x_m`` ahead of its centre (each return is moved into the base frame
    before it is judged). REP 117: ``-inf`` is an object closer than the sensor can
    measure, so it is taken at the lidar itself (clearance 0); ``+inf`` (nothing within
    range), NaN (no valid measurement) and zero or negative ranges are no returns.
    """
    nearest: float | None = None
    for i, reading in enumerate(ranges):
        if reading == -math.inf:
            distance = 0.0
        elif math.isfinite(reading) and reading > 0.0:
            distance = reading
        else:
            continue
        angle = angle_min + i * angle_increment
        x, y = mount_x_m + distance * math.cos(angle), distance * math.sin(angle)
        if x <= 0.0 or abs(y) > half_width_m:
            continue  # behind the base centre, or beside the corridor the base sweeps
        # The circle's front edge at lateral offset y; a return inside it touches the base.
        clearance = max(0.0, x - math.sqrt(half_width_m**2 - y**2))
        nearest = clearance if nearest is None else min(nearest, clearance)
    if nearest is not None and nearest < min(stop_m, remaining_m):
        return nearest
    return None


def scan_problem(stamp_s: float | None, now_s: float, max_age_s: float) -> str | None:
    """Why a scan cannot be trusted to clear the path (None when it can): there is none,
    or it is older than ``max_age_s`` by the node's clock (or stamped that far ahead)."""
    if stamp_s is None:
        return "no lidar scan received: cannot check the path ahead"
    age = now_s - stamp_s
    if age > max_age_s:
        return f"lidar scan is {age:.2f} s old (max {max_age_s:g} s): cannot check the path ahead"
    if age < -max_age_s:
        return f"lidar scan is stamped {-age:.2f} s ahead of the clock: cannot check the path ahead"
    return None


@dataclass(frozen=True)
class NavigationPlan:
    target: str
    goal: Pose2D
    start: Pose2D


@dataclass(frozen=True)
class PlacePlan:
    object_id: str
    surface_id: str
    lift_m: float
    """Lift position that brings the object's bottom ``PLACE_DROP_M`` above the surface."""
    distance_m: float


class ObservedWorld(World):
    """The sim's world model with its state taken from Gazebo instead of simulated."""

    def __init__(self, spec: WorldSpec) -> None:
        super().__init__(spec, slip_probability=0.0)
        self.seen: set[str] = set()
        self.robot_seen = False

    # -- observations ----------------------------------------------------------------

    def observe_robot(self, pose: Pose2D) -> None:
        self.pose = Pose2D(pose.x, pose.y, wrap(pose.yaw))
        self.robot_seen = True
        self.version += 1

    def observe_object(self, object_id: str, x: float, y: float, z_centre: float) -> bool:
        """Set an object's state from its model pose (the cylinder's centre); False if unknown."""
        state = self.objects.get(object_id)
        if state is None:
            return False
        state.x, state.y, state.z = x, y, z_centre - state.spec.height / 2
        state.on = "gripper" if self.holding == object_id else self.support_of(x, y, state.z)
        self.seen.add(object_id)
        self.version += 1
        return True

    def support_of(self, x: float, y: float, z_bottom: float) -> str:
        """Id of the surface an object at (x, y) with its bottom at ``z_bottom`` rests on, or 'floor'."""
        for box in self.spec.boxes:
            x0, y0, x1, y1 = box.bounds
            inside = box.kind == "surface" and x0 <= x <= x1 and y0 <= y <= y1
            if inside and abs(z_bottom - box.height) <= SURFACE_HEIGHT_TOLERANCE_M:
                return box.id
        return "floor" if z_bottom <= SURFACE_HEIGHT_TOLERANCE_M else "air"

    def set_holding(self, object_id: str | None) -> None:
        if self.holding is not None and self.holding in self.objects:
            held = self.objects[self.holding]
            held.on = self.support_of(held.x, held.y, held.z)
        self.holding = object_id
        if object_id is not None:
            self.objects[object_id].on = "gripper"
        self.version += 1

    def object_position(self, object_id: str) -> tuple[float, float, float]:
        # Observed, not simulated: a held object is where Gazebo says it is.
        state = self.objects[object_id]
        return state.x, state.y, state.z

    def record(self, action: str, arguments: dict[str, object], outcome: Outcome) -> None:
        """Log an action that ran in Gazebo, as the sim logs its own (``ground_truth()['actions']``)."""
        finished = Activity.failed(action, arguments, outcome)
        self._record(finished)

    # -- navigate_to -----------------------------------------------------------------

    def plan_navigation(self, target: str, standoff_m: float | None = None) -> NavigationPlan | Outcome:
        """The goal pose of ``navigate_to(target)`` from here, or the sim's failure."""
        if not self.robot_seen:
            return Outcome(False, "robot pose unknown: no pose or odometry from Gazebo yet", {})
        state = self.objects.get(target)
        if state is not None and state.on not in {"gripper"} and self.spec.surface(state.on) is None:
            # The sim parks next to an object's surface; one that fell has none.
            area = self.area_of(state.x, state.y) or "an area"
            return Outcome(False, f"{target} is on the {state.on}, not on a surface: navigate_to {area}", {})
        activity = self.start_navigate(target, standoff_m)
        if activity.done:
            assert activity.outcome is not None
            return activity.outcome
        # The sim's plan ends in the goal pose; Gazebo drives there instead of the sim.
        self.active = None
        last = activity.stages[-1]
        goal = last.pose_at(1.0) if last.pose_at is not None else self.pose
        return NavigationPlan(target, goal, self.pose)

    def target_distance(self, target: str) -> float:
        """Distance from the base centre to ``target`` as the sim measures it."""
        area = next((a for a in self.spec.areas if a.name == target), None)
        if area is not None:
            return self.pose.distance_to(area.x, area.y)
        surface = self.spec.surface(target)
        if surface is not None:
            x0, y0, x1, y1 = surface.bounds
            return math.hypot(
                max(x0 - self.pose.x, 0.0, self.pose.x - x1), max(y0 - self.pose.y, 0.0, self.pose.y - y1)
            )
        state = self.objects.get(target)
        return self.pose.distance_to(state.x, state.y) if state is not None else float("nan")

    def navigation_outcome(
        self, plan: NavigationPlan, travelled_m: float, *, arrived: bool, why: str = ""
    ) -> Outcome:
        details = {
            "final_x": self.pose.x,
            "final_y": self.pose.y,
            "final_yaw": self.pose.yaw,
            "distance_travelled_m": travelled_m,
            "distance_to_target_m": self.target_distance(plan.target),
        }
        if not arrived:
            return Outcome(False, why, details)
        area = self.area_of(self.pose.x, self.pose.y)
        message = f"arrived at {plan.target}" + (f" ({area})" if area and area != plan.target else "")
        return Outcome(True, message, details)

    # -- pick_object -----------------------------------------------------------------

    def pick_failure(self, object_id: str) -> Outcome | None:
        """Why ``pick_object(object_id)`` cannot start (the sim's messages), or None."""
        if not self.robot_seen:
            return Outcome(False, "robot pose unknown: no pose or odometry from Gazebo yet", {})
        if object_id in self.objects and object_id not in self.seen:
            message = f"object not visible: no pose of {object_id} from Gazebo yet"
            return Outcome(False, message, {"held_object_id": self.holding or ""})
        return self._pick_failure(object_id)

    def pick_outcome(self, object_id: str, distance_m: float) -> Outcome:
        return Outcome(True, f"picked {object_id}", {"held_object_id": object_id, "distance_m": distance_m})

    # -- place_object ----------------------------------------------------------------

    def plan_place(self, surface_id: str, lift_m: float) -> PlacePlan | Outcome:
        """How to put the held object on ``surface_id`` (the lift is at ``lift_m`` now), or why not."""
        held = self.holding
        if held is None:
            return Outcome(False, "gripper is empty: nothing to place", {"placed_object_id": ""})
        surface = self.spec.surface(surface_id)
        if surface is None:
            known = ", ".join(b.id for b in self.spec.boxes if b.kind == "surface")
            return Outcome(
                False, f"unknown surface {surface_id!r}; surfaces: {known}", {"placed_object_id": ""}
            )
        state = self.objects[held]
        px, py = self._place_point(surface, state.spec.radius)
        distance = self.pose.distance_to(px, py)
        failed: dict[str, float | str] = {"placed_object_id": "", "distance_m": distance}
        hidden = self.visibility(px, py)
        if hidden is not None:
            return Outcome(False, f"surface not visible: {surface_id} is {hidden}", failed)
        outside = _outside(surface, state.x, state.y, state.spec.radius)
        if outside > 0:
            message = (
                f"surface out of reach: {held} is held {outside:.2f} m outside {surface_id}; "
                f"navigate_to {surface_id} first"
            )
            return Outcome(False, message, failed)
        if state.z < surface.height - 0.01:
            below = surface.height - state.z
            message = f"surface out of reach: {held} is held {below:.2f} m below the top of {surface_id}"
            return Outcome(False, message, failed)
        lowered = lift_m - (state.z - (surface.height + PLACE_DROP_M))
        return PlacePlan(held, surface_id, min(max(lowered, 0.0), LIFT_MAX_M), distance)

    def place_outcome(self, plan: PlacePlan) -> Outcome:
        """Judge a place from where the released object came to rest (observed after the detach)."""
        state = self.objects[plan.object_id]
        details: dict[str, float | str] = {"placed_object_id": plan.object_id, "distance_m": plan.distance_m}
        on = self.support_of(state.x, state.y, state.z)
        if on == plan.surface_id:
            return Outcome(True, f"placed {plan.object_id} on {plan.surface_id}", details)
        where = "in the air" if on == "air" else f"on {on}"
        at = f"({state.x:.2f}, {state.y:.2f}, {state.z:.2f})"
        message = f"{plan.object_id} fell: it came to rest {where} at {at}, not on {plan.surface_id}"
        return Outcome(False, message, details)


def _outside(surface: BoxSpec, x: float, y: float, inset: float) -> float:
    """How far (x, y) is outside the surface shrunk by ``inset`` (0 inside)."""
    x0, y0, x1, y1 = surface.bounds
    x0, y0, x1, y1 = x0 + inset, y0 + inset, x1 - inset, y1 - inset
    return math.hypot(max(x0 - x, 0.0, x - x1), max(y0 - y, 0.0, y - y1))


class DriveController:
    """Turn to face the goal, drive to it correcting the heading, turn to the goal's yaw.

    ``command(pose)`` returns (linear m/s, angular rad/s) for a differential drive and
    sets ``done`` once within ``position_tolerance_m`` and ``yaw_tolerance_rad``.
    """

    def __init__(
        self,
        goal: Pose2D,
        *,
        linear_speed: float,
        angular_speed: float,
        position_tolerance_m: float = 0.05,
        yaw_tolerance_rad: float = 0.05,
        gain_linear: float = 1.0,
        gain_angular: float = 2.0,
    ) -> None:
        self.goal = goal
        self.linear_speed = linear_speed
        self.angular_speed = angular_speed
        self.position_tolerance_m = position_tolerance_m
        self.yaw_tolerance_rad = yaw_tolerance_rad
        self.gain_linear = gain_linear
        self.gain_angular = gain_angular
        self.phase = "turning"
        self.done = False

    def _turn(self, error: float) -> float:
        # At least 10% of full speed: a proportional turn alone would crawl to the goal.
        speed = min(self.angular_speed, max(0.1 * self.angular_speed, self.gain_angular * abs(error)))
        return math.copysign(speed, error)

    def distance(self, pose: Pose2D) -> float:
        return pose.distance_to(self.goal.x, self.goal.y)

    def command(self, pose: Pose2D) -> tuple[float, float]:
        distance = self.distance(pose)
        heading = math.atan2(self.goal.y - pose.y, self.goal.x - pose.x)
        if self.phase in {"turning", "driving"} and distance <= self.position_tolerance_m:
            self.phase = "aligning"
        if self.phase == "turning":
            error = wrap(heading - pose.yaw)
            if abs(error) <= self.yaw_tolerance_rad:
                self.phase = "driving"
            else:
                return 0.0, self._turn(error)
        if self.phase == "driving":
            error = wrap(heading - pose.yaw)
            if abs(error) > math.radians(45):
                self.phase = "turning"  # overshot or pushed off the line: face the goal again
                return 0.0, self._turn(error)
            speed = min(self.linear_speed, max(0.1 * self.linear_speed, self.gain_linear * distance))
            angular = max(-self.angular_speed, min(self.angular_speed, self.gain_angular * error))
            return speed * math.cos(error), angular
        error = wrap(self.goal.yaw - pose.yaw)
        if abs(error) <= self.yaw_tolerance_rad:
            self.phase = "done"
            self.done = True
            return 0.0, 0.0
        return 0.0, self._turn(error)
