"""The ``stretch3_physics`` node: Stretch 3 in MuJoCo, on stretch_ros2's names and types.

The ROS side of ``harness_ros_sim.physics`` (the model and the physics, without ROS).

Publishes (as stretch_driver, realsense2_camera and rplidar_ros do on the robot):
    /camera/color/image_raw, /camera/color/camera_info              head D435i (sideways)
    /camera/aligned_depth_to_color/image_raw (16UC1 mm), .../camera_info
    /gripper_camera/color/image_rect_raw, /gripper_camera/color/camera_info   gripper D405
    /gripper_camera/aligned_depth_to_color/image_raw, .../camera_info
    /scan (sensor_msgs/LaserScan, frame laser), /odom (nav_msgs/Odometry), /joint_states
    /amcl_pose (geometry_msgs/PoseWithCovarianceStamped, map: the pose AMCL gives on the robot)
    /sim/ground_truth (std_msgs/String JSON: base pose, joints, objects and what they rest on;
                      transient local, for an evaluator: the robot itself never reads it)
Serves:
    /stretch_controller/follow_joint_trajectory  control_msgs/FollowJointTrajectory (position mode)
    /navigate_to_pose                            nav2_msgs/NavigateToPose (navigation mode)
    /spin, /drive_on_heading, /backup            nav2_msgs Spin, DriveOnHeading, BackUp (navigation mode)
    /stow_the_robot, /switch_to_navigation_mode, /switch_to_position_mode   std_srvs/Trigger
    /sim/pick_object, /sim/place_object          harness_sim_msgs (physics decides success)
    /sim/reset                                   std_srvs/Trigger
Subscribes /stretch/cmd_vel (geometry_msgs/Twist, navigation mode), as stretch_driver.

Physics steps in its own thread (``speed`` times real time). One render thread renders
the cameras at ``rate_hz`` only when something moved; otherwise the last frames go out
again with fresh stamps.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from control_msgs.action import FollowJointTrajectory
from geometry_msgs.msg import PoseWithCovarianceStamped, Twist
from harness_sim_msgs.action import PickObject, PlaceObject
from nav2_msgs.action import BackUp, DriveOnHeading, NavigateToPose, Spin
from nav_msgs.msg import Odometry
from pydantic import BaseModel, ConfigDict, Field
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import CameraInfo, Image, JointState, LaserScan
from std_msgs.msg import Header, String
from std_srvs.srv import Trigger

import harness_ros_sim.physics  # noqa: F401  (MUJOCO_GL before mujoco is imported: see _render_loop)
from harness_ros.ros.spin import ros_args_only, spin_node_process
from harness_ros_sim.physics.model import GRIPPER_CAMERA, HEAD_CAMERA
from harness_ros_sim.physics.sim import JOINT_STATE_NAMES, TRAJECTORY_JOINTS, Outcome, PhysicsSim
from harness_ros_sim.ros.node_support import (
    SENSOR_QOS,
    STATE_QOS,
    accepting_action_server,
    declare_parameters,
)

__all__ = ["PhysicsNodeConfig", "StretchPhysicsNode", "main", "run_physics"]

# name, MuJoCo camera, colour topic, ROS frame, vertical field of view (degrees)
CAMERAS = (
    ("head", HEAD_CAMERA, "/camera/color/image_raw", "/camera", "camera_color_optical_frame", 42.5),
    (
        "gripper",
        GRIPPER_CAMERA,
        "/gripper_camera/color/image_rect_raw",
        "/gripper_camera",
        "gripper_camera_color_optical_frame",
        58.0,
    ),
)


class PhysicsNodeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rate_hz: float = Field(default=2.0, gt=0, le=30)
    image_width: int = Field(default=320, ge=16, le=1280)
    image_height: int = Field(default=240, ge=16, le=960)
    speed: float = Field(default=1.0, ge=0, le=50)
    state_hz: float = Field(default=20.0, gt=0, le=200)


_DESCRIPTIONS = {
    "rate_hz": "Camera and scan publication rate (frames re-rendered only when something moved).",
    "image_width": "Width of each camera image in pixels (the observation budget's).",
    "image_height": "Height of each camera image in pixels.",
    "speed": "Simulated seconds per wall-clock second (1: real time; 0: as fast as the CPU goes).",
    "state_hz": "Rate of /joint_states, /odom and /sim/ground_truth.",
}


class StretchPhysicsNode(Node):
    def __init__(self, *, parameter_overrides: list[Parameter] | None = None) -> None:
        super().__init__("stretch3_physics", parameter_overrides=parameter_overrides or [])
        self.config = declare_parameters(self, PhysicsNodeConfig, _DESCRIPTIONS, "stretch3_physics")
        cfg = self.config
        self.sim = PhysicsSim(speed=cfg.speed, width=cfg.image_width, height=cfg.image_height)
        self._busy = threading.Lock()  # one motion at a time (trajectory, navigation, pick, place, stow)
        self._stopping = threading.Event()
        self.frames_rendered = 0
        self._pubs: dict[str, Any] = {}
        for name, _cam, topic, prefix, _frame, _fovy in CAMERAS:
            self._pubs[f"{name}/rgb"] = self.create_publisher(Image, topic, SENSOR_QOS)
            self._pubs[f"{name}/rgb_info"] = self.create_publisher(
                CameraInfo, topic.rsplit("/", 1)[0] + "/camera_info", SENSOR_QOS
            )
            self._pubs[f"{name}/depth"] = self.create_publisher(
                Image, f"{prefix}/aligned_depth_to_color/image_raw", SENSOR_QOS
            )
            self._pubs[f"{name}/depth_info"] = self.create_publisher(
                CameraInfo, f"{prefix}/aligned_depth_to_color/camera_info", SENSOR_QOS
            )
        self._scan_pub = self.create_publisher(LaserScan, "/scan", SENSOR_QOS)
        self._odom_pub = self.create_publisher(Odometry, "/odom", 10)
        self._joints_pub = self.create_publisher(JointState, "/joint_states", 10)
        self._truth_pub = self.create_publisher(String, "/sim/ground_truth", STATE_QOS)
        # What AMCL publishes with stretch_nav2 on the robot: the map pose (here the truth).
        self._amcl_pub = self.create_publisher(PoseWithCovarianceStamped, "/amcl_pose", STATE_QOS)
        actions = ReentrantCallbackGroup()
        self._servers = [
            accepting_action_server(
                self,
                FollowJointTrajectory,
                "/stretch_controller/follow_joint_trajectory",
                self._trajectory,
                actions,
            ),
            accepting_action_server(self, NavigateToPose, "/navigate_to_pose", self._navigate, actions),
            accepting_action_server(self, Spin, "/spin", self._spin, actions),
            accepting_action_server(
                self,
                DriveOnHeading,
                "/drive_on_heading",
                lambda h: self._drive(h, DriveOnHeading, 1.0),
                actions,
            ),
            accepting_action_server(self, BackUp, "/backup", lambda h: self._drive(h, BackUp, -1.0), actions),
            accepting_action_server(self, PickObject, "/sim/pick_object", self._pick, actions),
            accepting_action_server(self, PlaceObject, "/sim/place_object", self._place, actions),
        ]
        services = ReentrantCallbackGroup()
        self.create_service(
            Trigger,
            "/switch_to_navigation_mode",
            lambda q, r: self._mode("navigation", r),
            callback_group=services,
        )
        self.create_service(
            Trigger,
            "/switch_to_position_mode",
            lambda q, r: self._mode("position", r),
            callback_group=services,
        )
        self.create_service(Trigger, "/stow_the_robot", self._stow, callback_group=services)
        self.create_service(Trigger, "/sim/reset", self._reset, callback_group=services)
        self.create_subscription(Twist, "/stretch/cmd_vel", self._cmd_vel, 10)
        self.create_timer(
            1.0 / cfg.state_hz, self._publish_state, callback_group=MutuallyExclusiveCallbackGroup()
        )
        self.sim.start()
        self._render_thread = threading.Thread(target=self._render_loop, name="render", daemon=True)
        self._render_thread.start()
        self.get_logger().info(
            f"stretch3_physics ready: {cfg.image_width}x{cfg.image_height} "
            f"at {cfg.rate_hz} Hz, speed {cfg.speed}"
        )

    # --- sensors ------------------------------------------------------------------------

    def _header(self, frame: str) -> Header:
        header = Header()
        header.stamp = self.get_clock().now().to_msg()
        header.frame_id = frame
        return header

    def _camera_info(self, frame: str, fovy_deg: float) -> CameraInfo:
        w, h = self.config.image_width, self.config.image_height
        f = (h / 2) / math.tan(math.radians(fovy_deg) / 2)
        info = CameraInfo(header=self._header(frame), width=w, height=h, distortion_model="plumb_bob")
        info.d = [0.0] * 5
        info.k = [f, 0.0, w / 2, 0.0, f, h / 2, 0.0, 0.0, 1.0]
        info.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
        info.p = [f, 0.0, w / 2, 0.0, 0.0, f, h / 2, 0.0, 0.0, 0.0, 1.0, 0.0]
        return info

    def _render_loop(self) -> None:
        """The one render thread: its own GL context, frames only when something moved."""
        # Imported here, not at the top: the module-level import of harness_ros_sim.physics
        # (sorted after the third-party imports) must set MUJOCO_GL first, or mujoco picks
        # no offscreen backend and no camera frame is ever rendered.
        import mujoco

        cfg = self.config
        renderer = mujoco.Renderer(self.sim.model, cfg.image_height, cfg.image_width)
        depth_renderer = mujoco.Renderer(self.sim.model, cfg.image_height, cfg.image_width)
        depth_renderer.enable_depth_rendering()
        last_qpos: np.ndarray | None = None
        frames: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        period = 1.0 / cfg.rate_hz
        next_t = time.monotonic()
        while not self._stopping.is_set():
            with self.sim.lock:
                qpos = np.array(self.sim.data.qpos)
                moved = last_qpos is None or float(np.max(np.abs(qpos - last_qpos))) > 1e-4
                if moved:
                    for name, cam, *_rest in CAMERAS:
                        renderer.update_scene(self.sim.data, camera=cam)
                        depth_renderer.update_scene(self.sim.data, camera=cam)
                        frames[name] = (renderer.render().copy(), depth_renderer.render().copy())
            if moved:
                last_qpos = qpos
                self.frames_rendered += 1
            for name, _cam, _topic, _prefix, frame, fovy in CAMERAS:
                rgb, depth = frames[name]
                self._publish_image(f"{name}/rgb", frame, rgb, "rgb8")
                depth_mm = np.clip(depth * 1000.0, 0, 65535).astype(np.uint16)
                self._publish_image(f"{name}/depth", frame, depth_mm, "16UC1")
                self._pubs[f"{name}/rgb_info"].publish(self._camera_info(frame, fovy))
                self._pubs[f"{name}/depth_info"].publish(self._camera_info(frame, fovy))
            self._publish_scan()
            next_t += period
            self._stopping.wait(max(0.0, next_t - time.monotonic()))
        renderer.close()
        depth_renderer.close()

    def _publish_image(self, key: str, frame: str, array: np.ndarray, encoding: str) -> None:
        msg = Image(
            header=self._header(frame), height=array.shape[0], width=array.shape[1], encoding=encoding
        )
        msg.is_bigendian = 0
        msg.step = array.strides[0]
        msg.data = array.tobytes()
        self._pubs[key].publish(msg)

    def _publish_scan(self) -> None:
        ranges, angle_min = self.sim.scan()
        msg = LaserScan(header=self._header("laser"))
        msg.angle_min = angle_min
        msg.angle_increment = 2 * math.pi / len(ranges)
        msg.angle_max = angle_min + msg.angle_increment * (len(ranges) - 1)
        msg.range_min, msg.range_max = 0.15, 12.0
        msg.scan_time = 1.0 / self.config.rate_hz
        msg.ranges = ranges.tolist()
        self._scan_pub.publish(msg)

    def _publish_state(self) -> None:
        positions = self.sim.joint_positions()
        velocities = self.sim.joint_velocities()
        js = JointState(header=self._header("base_link"))
        js.name = list(JOINT_STATE_NAMES)
        js.position = [positions[n] for n in JOINT_STATE_NAMES]
        js.velocity = [velocities[n] for n in JOINT_STATE_NAMES]
        self._joints_pub.publish(js)
        x, y, yaw = self.sim.base_pose()
        v, w = self.sim.base_twist()
        odom = Odometry(header=self._header("odom"), child_frame_id="base_link")
        odom.pose.pose.position.x, odom.pose.pose.position.y = x, y
        odom.pose.pose.orientation.z, odom.pose.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
        odom.twist.twist.linear.x, odom.twist.twist.angular.z = v, w
        self._odom_pub.publish(odom)
        amcl = PoseWithCovarianceStamped(header=self._header("map"))
        amcl.pose.pose = odom.pose.pose
        self._amcl_pub.publish(amcl)
        self._truth_pub.publish(String(data=json.dumps(self.sim.ground_truth(), sort_keys=True)))

    # --- services -----------------------------------------------------------------------

    def _mode(self, mode: str, response: Trigger.Response) -> Trigger.Response:
        with self.sim.lock:
            self.sim.mode = mode
            self.sim.base_cmd = (0.0, 0.0)
        response.success, response.message = True, f"Now in {mode} mode."
        return response

    def _stow(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        return self._unless_busy(self.sim.stow, "Stowed.", response)

    def _reset(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        return self._unless_busy(self.sim.reset, "world reset to its initial state", response)

    def _unless_busy(
        self, motion: Callable[[], None], done: str, response: Trigger.Response
    ) -> Trigger.Response:
        """Run ``motion`` and answer ``done``; refused while another motion runs."""
        if not self._busy.acquire(blocking=False):
            response.success, response.message = False, "busy: another motion is running"
            return response
        try:
            motion()
        finally:
            self._busy.release()
        response.success, response.message = True, done
        return response

    def _cmd_vel(self, msg: Twist) -> None:
        if self.sim.mode == "navigation" and not self._busy.locked():
            with self.sim.lock:
                self.sim.base_cmd = (float(msg.linear.x), float(msg.angular.z))

    # --- actions ------------------------------------------------------------------------

    def _trajectory(self, handle: ServerGoalHandle) -> Any:
        result = FollowJointTrajectory.Result()
        traj = handle.request.trajectory
        names = list(traj.joint_names)
        unknown = [n for n in names if n not in TRAJECTORY_JOINTS]
        if self.sim.mode != "position":
            return self._abort(
                handle,
                result,
                -100,
                f"in {self.sim.mode} mode: trajectory goals need position mode "
                "(call /switch_to_position_mode)",
            )
        if unknown or not traj.points:
            why = f"unknown joints {unknown}; known: {list(TRAJECTORY_JOINTS)}" if unknown else "no points"
            return self._abort(
                handle,
                result,
                FollowJointTrajectory.Result.INVALID_JOINTS
                if unknown
                else FollowJointTrajectory.Result.INVALID_GOAL,
                why,
            )
        if not self._busy.acquire(blocking=False):
            return self._abort(
                handle, result, FollowJointTrajectory.Result.INVALID_GOAL, "busy: another motion is running"
            )
        try:
            t0 = self.sim.time
            errors: dict[str, float] = {}
            for point in traj.points:
                if len(point.positions) != len(names):
                    return self._abort(
                        handle,
                        result,
                        FollowJointTrajectory.Result.INVALID_GOAL,
                        "a point's positions do not match joint_names",
                    )
                target = dict(zip(names, (float(p) for p in point.positions), strict=False))
                due = point.time_from_start.sec + point.time_from_start.nanosec * 1e-9
                self.sim.set_targets(target)
                while self.sim.time - t0 < due:
                    self.sim.advance(0.1)
                    self._feedback(handle, names, target)
                errors = self.sim.move_joints(target, timeout_s=3.0, tolerance=0.01)
                self._feedback(handle, names, target)
            worst = max(errors, key=lambda n: errors[n])
            if errors[worst] > 0.03:
                return self._abort(
                    handle,
                    result,
                    FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED,
                    f"{worst} stopped {errors[worst]:.3f} short of its goal "
                    f"(touching {self.sim.touching_text()})",
                )
        finally:
            self._busy.release()
        result.error_code = FollowJointTrajectory.Result.SUCCESSFUL
        result.error_string = "reached"
        handle.succeed()
        return result

    def _feedback(self, handle: ServerGoalHandle, names: list[str], target: dict[str, float]) -> None:
        fb = FollowJointTrajectory.Feedback()
        fb.joint_names = names
        fb.desired.positions = [target[n] for n in names]
        fb.actual.positions = [self.sim.position_of(n) for n in names]
        fb.error.positions = [a - d for a, d in zip(fb.actual.positions, fb.desired.positions, strict=False)]
        handle.publish_feedback(fb)

    @staticmethod
    def _abort(handle: ServerGoalHandle, result: Any, code: int, why: str) -> Any:
        result.error_code = code
        result.error_string = why
        handle.abort()
        return result

    def _navigate(self, handle: ServerGoalHandle) -> Any:
        result = NavigateToPose.Result()
        pose = handle.request.pose.pose
        yaw = (
            2 * math.atan2(pose.orientation.z, pose.orientation.w)
            if (pose.orientation.w or pose.orientation.z)
            else 0.0
        )
        if self.sim.mode != "navigation":
            return self._nav_abort(
                handle, result, f"in {self.sim.mode} mode: navigation needs /switch_to_navigation_mode"
            )
        if not self._busy.acquire(blocking=False):
            return self._nav_abort(handle, result, "busy: another motion is running")
        try:

            def feedback(remaining: float) -> None:
                fb = NavigateToPose.Feedback()
                fb.distance_remaining = float(remaining)
                x, y, _ = self.sim.base_pose()
                fb.current_pose.pose.position.x, fb.current_pose.pose.position.y = x, y
                handle.publish_feedback(fb)

            outcome = self.sim.navigate(
                float(pose.position.x),
                float(pose.position.y),
                yaw,
                feedback=feedback,
                cancelled=lambda: handle.is_cancel_requested,
            )
        finally:
            self._busy.release()
        self.get_logger().info(f"navigate_to_pose: {outcome.message}")
        if outcome.message == "cancelled":
            handle.canceled()
            return result
        if not outcome.success:
            return self._nav_abort(handle, result, outcome.message)
        handle.succeed()
        return result

    @staticmethod
    def _nav_abort(handle: ServerGoalHandle, result: Any, why: str) -> Any:
        if hasattr(result, "error_msg"):  # Kilted's result carries the reason
            result.error_msg = why
        if hasattr(result, "error_code"):
            result.error_code = 1
        handle.abort()
        return result

    def _behaviour(self, handle: ServerGoalHandle, action: Any, run: Any) -> Any:
        """Nav2's behaviour servers (spin, drive_on_heading, backup): navigation mode, one
        motion at a time, a stall or the time allowance ends the goal with Nav2's code."""
        result = action.Result()
        started = self.sim.time
        if self.sim.mode != "navigation":
            outcome = Outcome(False, f"in {self.sim.mode} mode: base motion needs /switch_to_navigation_mode")
            code = "UNKNOWN"
        elif not self._busy.acquire(blocking=False):
            outcome, code = Outcome(False, "busy: another motion is running"), "UNKNOWN"
        else:
            try:
                outcome = run()
            finally:
                self._busy.release()
            code = {"timeout": "TIMEOUT", "stalled": "COLLISION_AHEAD"}.get(outcome.stop, "UNKNOWN")
        elapsed = self.sim.time - started
        result.total_elapsed_time.sec = int(elapsed)
        result.total_elapsed_time.nanosec = int((elapsed % 1.0) * 1e9)
        self.get_logger().info(f"{action.__name__}: {outcome.message}")
        if outcome.success:
            handle.succeed()
            return result
        if outcome.stop == "cancelled":
            handle.canceled()
            return result
        if hasattr(result, "error_msg"):  # Jazzy's and Kilted's results carry the reason
            result.error_msg = outcome.message
        if hasattr(result, "error_code"):
            result.error_code = int(getattr(action.Result, code, 0))
        handle.abort()
        return result

    @staticmethod
    def _allowance(goal: Any) -> float:
        seconds = goal.time_allowance.sec + goal.time_allowance.nanosec * 1e-9
        return seconds if seconds > 0 else 60.0

    def _spin(self, handle: ServerGoalHandle) -> Any:
        goal = handle.request

        def run() -> Outcome:
            def feedback(turned: float) -> None:
                handle.publish_feedback(Spin.Feedback(angular_distance_traveled=float(abs(turned))))

            return self.sim.turn_by(
                float(goal.target_yaw),
                time_allowance_s=self._allowance(goal),
                feedback=feedback,
                cancelled=lambda: handle.is_cancel_requested,
            )

        return self._behaviour(handle, Spin, run)

    def _drive(self, handle: ServerGoalHandle, action: Any, sign: float) -> Any:
        goal = handle.request
        # DriveOnHeading drives target.x (its sign says which way); BackUp backs up by |target.x|.
        distance = float(goal.target.x) if sign > 0 else -abs(float(goal.target.x))
        speed = min(abs(float(goal.speed)) or 0.15, 0.3)

        def run() -> Outcome:
            def feedback(travelled: float) -> None:
                handle.publish_feedback(action.Feedback(distance_traveled=float(abs(travelled))))

            return self.sim.shift_along_axis(
                distance,
                tolerance=0.01,
                speed=speed,
                time_allowance_s=self._allowance(goal),
                feedback=feedback,
                cancelled=lambda: handle.is_cancel_requested,
            )

        return self._behaviour(handle, action, run)

    def _manipulate(self, handle: ServerGoalHandle, action: Any, run: Any) -> Any:
        def feedback(stage: str, progress: float) -> None:
            fb = action.Feedback()
            fb.stage, fb.progress = stage, float(progress)
            handle.publish_feedback(fb)

        if not self._busy.acquire(blocking=False):
            outcome = Outcome(False, "busy: another motion is running")
        else:
            try:
                outcome = run(feedback)
            finally:
                self._busy.release()
        self.get_logger().info(f"{action.__name__}: {outcome.message}")
        return outcome

    def _pick(self, handle: ServerGoalHandle) -> Any:
        outcome = self._manipulate(handle, PickObject, lambda fb: self.sim.pick(handle.request.object_id, fb))
        result = PickObject.Result(
            success=outcome.success, message=outcome.message, distance_m=outcome.distance_m
        )
        result.held_object_id = self.sim.held
        handle.succeed() if outcome.success else handle.abort()
        return result

    def _place(self, handle: ServerGoalHandle) -> Any:
        outcome = self._manipulate(
            handle, PlaceObject, lambda fb: self.sim.place(handle.request.surface_id, fb)
        )
        result = PlaceObject.Result(
            success=outcome.success, message=outcome.message, distance_m=outcome.distance_m
        )
        result.placed_object_id = outcome.held if outcome.success else ""
        handle.succeed() if outcome.success else handle.abort()
        return result

    def destroy_node(self) -> None:
        self._stopping.set()
        self.sim.stop()
        self._render_thread.join(timeout=5.0)
        super().destroy_node()


def run_physics(*, overrides: dict[str, Any] | None = None, ros_args: list[str] | None = None) -> int:
    """Spin a ``stretch3_physics`` node until shutdown; ``overrides`` replace parameter values."""
    parameters = [Parameter(k, value=v) for k, v in (overrides or {}).items()]
    return spin_node_process(
        "stretch3_physics", lambda: StretchPhysicsNode(parameter_overrides=parameters), ros_args
    )


def main(args: list[str] | None = None) -> int:
    """``stretch3_physics --ros-args -p speed:=2.0``"""
    ros_args = ros_args_only("stretch3_physics", args)
    return 2 if ros_args is None else run_physics(ros_args=ros_args)


if __name__ == "__main__":
    sys.exit(main())
