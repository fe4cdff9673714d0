"""The ``sim_robot`` node: the simulated mobile manipulator on ROS 2 topics and actions.

Publishes (relative names, so a namespace or remapping moves them):
    sim/front/image_raw, sim/torso/image_raw, sim/wrist/image_raw   sensor_msgs/Image rgb8
    sim/depth/image_raw    sensor_msgs/Image 16UC1 (mm), the torso camera's depth
    sim/scan               sensor_msgs/LaserScan, 360 beams, frame base_link
    sim/ground_truth       std_msgs/String JSON (World.ground_truth()), reliable +
                           transient local: late joiners get the latest state
Serves harness_sim_msgs actions sim/navigate_to, sim/pick_object, sim/place_object
with feedback and cancellation, and ``~/reset`` (std_srvs/Trigger): back to the initial
state of the world named by the ``world`` parameter, with the ``seed`` and
``slip_probability`` parameters as they are now (set them first, then call it;
refused while an action runs). Sensor topics are reliable, keep-last 1: they match
best-effort and reliable subscribers alike. Frames are re-rendered only when the
world changed; otherwise the last frames go out again with fresh stamps.

Each period is split into slots (front | torso + depth | wrist | scan + ground truth),
published ``1 / (rate_hz * 4)`` apart: a burst of all four images (845 KB at 320x240)
overflows Fast DDS's shared-memory segment, which then recycles the first image before
the subscriber has read it (bench/bench_sim_freshness.py: front 3.6/s, others 5/s).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from harness_sim_msgs.action import NavigateTo, PickObject, PlaceObject
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rclpy.action import ActionServer
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import Image, LaserScan
from std_msgs.msg import Header, String
from std_srvs.srv import Trigger

from harness_ros.errors import ConfigError
from harness_ros.ros.spin import ros_args_only, spin_node_process
from harness_ros_sim.ros.node_support import (
    SENSOR_QOS,
    STATE_QOS,
    accepting_action_server,
    declare_parameters,
    parameter_problems,
)
from harness_ros_sim.sim.render import CAMERA_MOUNTS, Renderer
from harness_ros_sim.sim.spec import world_spec_by_name
from harness_ros_sim.sim.world import Activity, Outcome, World

__all__ = ["SimNodeConfig", "SimRobotNode", "main", "run_sim"]

FRAME_IDS: dict[str, str] = {name: f"{name}_camera_optical_frame" for name in CAMERA_MOUNTS}
DEPTH_CAMERA = "torso"
SCAN_FRAME = "base_link"
PUBLISH_SLOTS: tuple[tuple[str, ...], ...] = (("front",), ("torso", "depth"), ("wrist",), ("scan", "state"))
"""What each slot of a period publishes. The torso camera and its depth share a slot
(one stamp: an RGB-D pair); no slot holds two RGB frames."""


class SimNodeConfig(BaseModel):
    """The node's parameters, validated once at start-up."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    world: str = Field(default="apartment", min_length=1)
    seed: int = 0
    rate_hz: float = Field(default=5.0, gt=0, le=60)
    image_width: int = Field(default=640, ge=16, le=4096)
    image_height: int = Field(default=480, ge=16, le=4096)
    slip_probability: float = Field(default=0.5, ge=0, le=1)
    time_scale: float = Field(default=1.0, gt=0, le=100)
    feedback_hz: float = Field(default=10.0, gt=0, le=100)
    labels: bool = True


_DESCRIPTIONS: dict[str, str] = {
    "world": "Built-in world name (apartment) or path to a YAML world file.",
    "seed": "Seed of the grasp-slip randomness; the same seed replays the same slips.",
    "rate_hz": "Rate of camera, depth, scan and ground-truth publication.",
    "image_width": "Width of every camera image in pixels.",
    "image_height": "Height of every camera image in pixels.",
    "slip_probability": "Probability that grasping a slippery object slips (0..1).",
    "time_scale": "Simulated seconds per wall-clock second while actions run (tests go faster).",
    "feedback_hz": "Rate of action feedback and of simulation steps during an action.",
    "labels": "Draw object and surface ids into the camera images.",
}


class SimRobotNode(Node):
    """Owns one ``World``; renders it on a timer and changes it through three action servers."""

    def __init__(self, *, parameter_overrides: list[Parameter] | None = None) -> None:
        super().__init__("sim_robot", parameter_overrides=parameter_overrides or [])
        self.config = self._read_parameters()
        spec = world_spec_by_name(self.config.world)
        self._world = World(spec, seed=self.config.seed, slip_probability=self.config.slip_probability)
        self._renderer = Renderer(
            self.config.image_width, self.config.image_height, labels=self.config.labels
        )
        # One lock around the world: action threads step it, the timer renders it.
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._rendered_version = -1
        self._published_state_version = -1
        self._last_state_time = 0.0
        self._frames: dict[str, Image] = {}
        self._scan = LaserScan()

        self._image_pubs = {
            name: self.create_publisher(Image, f"sim/{name}/image_raw", SENSOR_QOS) for name in CAMERA_MOUNTS
        }
        self._depth_pub = self.create_publisher(Image, "sim/depth/image_raw", SENSOR_QOS)
        self._scan_pub = self.create_publisher(LaserScan, "sim/scan", SENSOR_QOS)
        self._state_pub = self.create_publisher(String, "sim/ground_truth", STATE_QOS)

        self._slot = 0
        self._timer = self.create_timer(
            1.0 / (self.config.rate_hz * len(PUBLISH_SLOTS)),
            self._publish_slot,
            callback_group=MutuallyExclusiveCallbackGroup(),
        )
        actions = ReentrantCallbackGroup()
        self._servers = [
            self._action_server(NavigateTo, "sim/navigate_to", self._navigate, actions),
            self._action_server(PickObject, "sim/pick_object", self._pick, actions),
            self._action_server(PlaceObject, "sim/place_object", self._place, actions),
        ]
        self._reset_srv = self.create_service(
            Trigger, "~/reset", self._on_reset, callback_group=MutuallyExclusiveCallbackGroup()
        )
        self._publish_state()
        self.get_logger().info(
            f"sim_robot ready: world {spec.name!r}, seed {self.config.seed}, "
            f"{self.config.image_width}x{self.config.image_height} at {self.config.rate_hz} Hz"
        )

    def _read_parameters(self) -> SimNodeConfig:
        return declare_parameters(self, SimNodeConfig, _DESCRIPTIONS, "sim_robot")

    def _action_server(
        self,
        action_type: Any,
        name: str,
        start: Callable[[World, Any], Activity],
        group: ReentrantCallbackGroup,
    ) -> ActionServer:
        def execute(goal_handle: ServerGoalHandle) -> Any:
            return self._execute(goal_handle, action_type, start)

        return accepting_action_server(self, action_type, name, execute, group)

    # -- reset -------------------------------------------------------------------------

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = self._reset()
        if response.success:
            self._publish_state()
        self.get_logger().info(f"reset: {response.message}")
        return response

    def _reset(self) -> tuple[bool, str]:
        """Re-read ``world``, ``seed`` and ``slip_probability`` and restart the world from them."""
        values = {name: self.get_parameter(name).value for name in ("world", "seed", "slip_probability")}
        try:
            config = SimNodeConfig.model_validate({**self.config.model_dump(), **values})
            spec = world_spec_by_name(config.world)
        except ValidationError as err:
            return False, f"invalid sim_robot parameters: {parameter_problems(err)}"
        except ConfigError as err:
            return False, str(err)
        with self._lock:
            try:
                self._world.reset(spec, seed=config.seed)
            except RuntimeError as err:
                return False, str(err)
            self._world.slip_probability = config.slip_probability
            version = self._world.version
        self.config = config
        return True, f"world {spec.name!r} ({config.world}), seed {config.seed}, version {version}"

    # -- actions -----------------------------------------------------------------------

    @staticmethod
    def _navigate(world: World, goal: Any) -> Activity:
        return world.start_navigate(goal.target, goal.standoff_m if goal.standoff_m > 0 else None)

    @staticmethod
    def _pick(world: World, goal: Any) -> Activity:
        return world.start_pick(goal.object_id)

    @staticmethod
    def _place(world: World, goal: Any) -> Activity:
        return world.start_place(goal.surface_id)

    def _execute(
        self, goal_handle: ServerGoalHandle, action_type: Any, start: Callable[..., Activity]
    ) -> Any:
        # Busy or impossible goals are still accepted: the result says why, which a
        # language model can act on, unlike a bare rejection.
        with self._lock:
            activity = start(self._world, goal_handle.request)
        self.get_logger().info(f"{activity.action} {activity.arguments} started")
        period = 1.0 / self.config.feedback_hz
        last = time.monotonic()
        while not activity.done:
            if goal_handle.is_cancel_requested or self._stopping.is_set():
                with self._lock:
                    self._world.cancel()
                if goal_handle.is_cancel_requested:
                    goal_handle.canceled()
                else:
                    goal_handle.abort()
                return self._finish(action_type, activity)
            self._stopping.wait(period)
            now = time.monotonic()
            with self._lock:
                self._world.step((now - last) * self.config.time_scale)
                feedback = activity.feedback()
            last = now
            goal_handle.publish_feedback(_fill(action_type.Feedback(), feedback))
        assert activity.outcome is not None
        if activity.outcome.success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return self._finish(action_type, activity)

    def _finish(self, action_type: Any, activity: Activity) -> Any:
        outcome = activity.outcome or Outcome(False, "stopped")
        self.get_logger().info(
            f"{activity.action} {activity.arguments} -> {'success' if outcome.success else 'failure'}: "
            f"{outcome.message}"
        )
        self._publish_state()
        return _fill(
            action_type.Result(),
            {**outcome.details, "success": outcome.success, "message": outcome.message},
        )

    # -- publishing --------------------------------------------------------------------

    def _publish_slot(self) -> None:
        """Publish the next slot of the period; a period starts with a render if the world changed."""
        slot, self._slot = self._slot, (self._slot + 1) % len(PUBLISH_SLOTS)
        if slot == 0:
            with self._lock:
                if self._world.version != self._rendered_version:
                    self._render()
        stamp = self.get_clock().now().to_msg()
        for name in PUBLISH_SLOTS[slot]:
            if name == "state":
                self._publish_state()
            elif name == "scan":
                self._scan.header.stamp = stamp
                self._scan_pub.publish(self._scan)
            else:
                frame = self._frames[name]
                frame.header.stamp = stamp
                (self._depth_pub if name == "depth" else self._image_pubs[name]).publish(frame)

    def _render(self) -> None:
        """Render every view of the current world into reusable messages (lock held)."""
        world = self._world
        for name in CAMERA_MOUNTS:
            view = self._renderer.render(world, name)
            self._frames[name] = _image(view.rgb, "rgb8", FRAME_IDS[name])
            if name == DEPTH_CAMERA:
                self._frames["depth"] = _image(view.depth_mm(), "16UC1", FRAME_IDS[name])
        scan = self._renderer.scan(world)
        self._scan = LaserScan(
            header=Header(frame_id=SCAN_FRAME),
            angle_min=scan.angle_min,
            angle_max=scan.angle_max,
            angle_increment=scan.angle_increment,
            time_increment=0.0,
            scan_time=1.0 / self.config.rate_hz,
            range_min=scan.range_min,
            range_max=scan.range_max,
            ranges=scan.ranges.tolist(),
        )
        self._rendered_version = world.version

    def _publish_state(self) -> None:
        """Ground truth on every change, and at least once per second for late checks."""
        with self._lock:
            version = self._world.version
            due = time.monotonic() - self._last_state_time >= 1.0
            if version == self._published_state_version and not due:
                return
            state = self._world.ground_truth()
        state["stamp"] = self.get_clock().now().nanoseconds / 1e9
        self._state_pub.publish(String(data=json.dumps(state, sort_keys=True)))
        self._published_state_version = version
        self._last_state_time = time.monotonic()

    def destroy_node(self) -> None:
        # rclpy's context shutdown also calls this on a node whose __init__ failed half-way
        # (a bad parameter, an unknown world): stop and destroy only what was built.
        stopping: threading.Event | None = getattr(self, "_stopping", None)
        if stopping is not None:
            stopping.set()
        for server in getattr(self, "_servers", ()):
            server.destroy()
        reset_srv = getattr(self, "_reset_srv", None)
        if reset_srv is not None:
            self.destroy_service(reset_srv)
        super().destroy_node()


def _image(pixels: np.ndarray, encoding: str, frame_id: str) -> Image:
    height, width = pixels.shape[:2]
    return Image(
        header=Header(frame_id=frame_id),
        height=height,
        width=width,
        encoding=encoding,
        is_bigendian=0,
        step=width * pixels.itemsize * (pixels.shape[2] if pixels.ndim == 3 else 1),
        # tobytes(): assigning the ndarray itself is ~100x slower in rclpy.
        data=np.ascontiguousarray(pixels).tobytes(),
    )


def _fill(message: Any, values: Mapping[str, Any]) -> Any:
    """Set the fields of ``message`` that ``values`` names; other keys are ignored."""
    fields = message.get_fields_and_field_types()
    for key, value in values.items():
        if key in fields:
            kind = fields[key]
            setattr(message, key, float(value) if kind in {"float", "double"} else value)
    return message


def run_sim(*, overrides: Mapping[str, Any] | None = None, ros_args: list[str] | None = None) -> int:
    """Spin a ``sim_robot`` until shutdown; ``overrides`` replace parameter values."""
    parameters = [Parameter(name, value=value) for name, value in (overrides or {}).items()]
    return spin_node_process("sim_robot", lambda: SimRobotNode(parameter_overrides=parameters), ros_args)


def main(args: list[str] | None = None) -> int:
    """``ros2 run harness_ros sim_robot --ros-args -p seed:=3``"""
    ros_args = ros_args_only("sim_robot", args)
    return 2 if ros_args is None else run_sim(ros_args=ros_args)


if __name__ == "__main__":
    sys.exit(main())
