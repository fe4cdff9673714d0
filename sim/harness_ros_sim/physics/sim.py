"""Stretch 3 in MuJoCo without ROS: the physics, the joint and base controllers, the
pick / place / navigate behaviours, the lidar and the ground truth.

Everything that changes the world goes through :class:`PhysicsSim`, under its lock. The
physics runs in its own thread (:meth:`PhysicsSim.start`) at ``speed`` times real time
(0: as fast as it can); without the thread, :meth:`PhysicsSim.advance` steps it in the
caller's thread (the tests). Behaviours wait for simulated time, so they take the same
simulated seconds at any speed. Success is what the physics says: a pick succeeded when
the object rose with the gripper, not by a rule on distances.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import mujoco
import numpy as np

from harness_ros_sim.physics.model import (
    ARM_SEGMENTS,
    OBJECTS,
    ROBOT_GROUP,
    SCENE_GROUP,
    SURFACES,
    WHEEL_RADIUS,
    WHEEL_SEPARATION,
    build_model,
)

__all__ = ["ARM_MAX_M", "JOINT_STATE_NAMES", "TRAJECTORY_JOINTS", "Outcome", "PhysicsSim"]

ARM_MAX_M = 0.52
LIFT_MAX_M = 1.1
GRIPPER_OPEN = 0.45
GRIPPER_CLOSED = -0.35
# stretch_driver's joint_states names (stretch_ros2, stretch_core).
JOINT_STATE_NAMES = (
    "joint_lift",
    *ARM_SEGMENTS,
    "wrist_extension",
    "joint_wrist_yaw",
    "joint_wrist_pitch",
    "joint_wrist_roll",
    "joint_head_pan",
    "joint_head_tilt",
    "joint_gripper_finger_left",
    "joint_gripper_finger_right",
    "joint_left_wheel",
    "joint_right_wheel",
)
# What /stretch_controller/follow_joint_trajectory takes, as upstream (position mode).
TRAJECTORY_JOINTS = (
    "joint_lift",
    "joint_arm",
    "wrist_extension",
    "joint_wrist_yaw",
    "joint_wrist_pitch",
    "joint_wrist_roll",
    "joint_head_pan",
    "joint_head_tilt",
    "joint_gripper_finger_left",
    "gripper_aperture",
)
_SINGLE = {
    "joint_lift": "lift",
    "joint_wrist_yaw": "wrist_yaw",
    "joint_wrist_pitch": "wrist_pitch",
    "joint_wrist_roll": "wrist_roll",
    "joint_head_pan": "head_pan",
    "joint_head_tilt": "head_tilt",
}
# gripper_aperture (m between the fingertips) from the finger angle: a linear fit of this
# model's fingertips (0 rad: 0.041 m apart... 0.45 rad: 0.19 m); upstream fits its own.
_APERTURE_PER_RAD = 0.33
_APERTURE_AT_ZERO = 0.041


@dataclass(frozen=True)
class Outcome:
    """How a behaviour ended: ``reason`` is a physical one when it failed."""

    success: bool
    message: str
    held: str = ""
    distance_m: float = 0.0
    stop: str = ""  # why a base behaviour stopped early: "cancelled", "timeout" or "stalled"


Feedback = Callable[[str, float], None]


def _noop(_stage: str, _progress: float) -> None:
    return None


class PhysicsSim:
    """One MuJoCo world: Stretch 3 in the apartment."""

    def __init__(self, *, speed: float = 1.0, width: int = 320, height: int = 240) -> None:
        self.model = build_model(width=width, height=height)
        self.data = mujoco.MjData(self.model)
        self.lock = threading.RLock()
        self.speed = speed
        self._tick = threading.Condition(self.lock)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.base_cmd = (0.0, 0.0)
        self.mode = "position"
        self.held = ""
        self.steps = 0
        self._initial = mujoco.MjData(self.model)
        self._settle()
        mujoco.mj_copyData(self._initial, self.model, self.data)
        self._robot_bodies = {b for b in range(self.model.nbody) if self._is_robot_body(b)}
        self._base_id = self.model.body("base_link").id
        self._lidar_site = self.model.body("laser").id

    # --- the physics thread ------------------------------------------------------------

    def _is_robot_body(self, body: int) -> bool:
        base = int(self.model.body("base_link").id)
        while body not in (0, base):
            body = int(self.model.body_parentid[body])
        return body == base

    def _settle(self) -> None:
        self.set_targets(
            {"joint_lift": 0.2, "joint_arm": 0.0, "gripper_aperture": 0.1, "joint_head_tilt": -0.5}
        )
        for _ in range(500):
            self._step_once()
        self.steps = 0

    def reset(self) -> None:
        with self.lock:
            mujoco.mj_copyData(self.data, self.model, self._initial)
            self.base_cmd = (0.0, 0.0)
            self.held = ""
            self.mode = "position"
            self.set_targets(
                {"joint_lift": 0.2, "joint_arm": 0.0, "gripper_aperture": 0.1, "joint_head_tilt": -0.5}
            )

    def _step_once(self) -> None:
        v, w = self.base_cmd
        left = (v - w * WHEEL_SEPARATION / 2) / WHEEL_RADIUS
        right = (v + w * WHEEL_SEPARATION / 2) / WHEEL_RADIUS
        self.data.actuator("wheel_left").ctrl[0] = left
        self.data.actuator("wheel_right").ctrl[0] = right
        mujoco.mj_step(self.model, self.data)
        self.steps += 1

    def start(self) -> None:
        """Step the physics in its own thread, ``speed`` times real time (0: flat out)."""
        self._thread = threading.Thread(target=self._run, name="physics", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    def _run(self) -> None:
        chunk = 10  # 20 ms of simulated time per lock hold
        wall0, sim0 = time.monotonic(), self.data.time
        while not self._stop.is_set():
            with self.lock:
                for _ in range(chunk):
                    self._step_once()
                sim_t = self.data.time
                self._tick.notify_all()
            if self.speed > 0:
                ahead = (sim_t - sim0) / self.speed - (time.monotonic() - wall0)
                if ahead > 0:
                    time.sleep(ahead)
                elif ahead < -0.5:  # fell behind (a loaded machine): do not sprint to catch up
                    wall0, sim0 = time.monotonic(), sim_t
            else:
                time.sleep(0)

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of simulated time pass (stepping here when no thread runs)."""
        with self.lock:
            end = self.data.time + seconds
            if self._thread is None:
                while self.data.time < end:
                    self._step_once()
                return
            while self.data.time < end and not self._stop.is_set():
                self._tick.wait(timeout=1.0)

    @property
    def time(self) -> float:
        return float(self.data.time)

    def put_object(self, name: str, dx: float, dy: float) -> None:
        """Shift an object on its surface by (dx, dy) m from where the scene puts it."""
        with self.lock:
            spec = next(o for o in OBJECTS if o.name == name)
            joint = self.data.joint(name)
            joint.qpos[0] = spec.x + dx
            joint.qpos[1] = spec.y + dy
            joint.qvel[:] = 0.0
        self.advance(0.2)

    # --- state ---------------------------------------------------------------------------

    def _q(self, joint: str) -> float:
        return float(self.data.joint(joint).qpos[0])

    def joint_positions(self) -> dict[str, float]:
        with self.lock:
            out = {name: self._q(name) for name in JOINT_STATE_NAMES if name != "wrist_extension"}
            out["wrist_extension"] = sum(out[j] for j in ARM_SEGMENTS)
            return out

    def joint_velocities(self) -> dict[str, float]:
        with self.lock:
            out = {n: float(self.data.joint(n).qvel[0]) for n in JOINT_STATE_NAMES if n != "wrist_extension"}
            out["wrist_extension"] = sum(out[j] for j in ARM_SEGMENTS)
            return out

    def aperture(self) -> float:
        return _APERTURE_AT_ZERO + _APERTURE_PER_RAD * self._q("joint_gripper_finger_left")

    def base_pose(self) -> tuple[float, float, float]:
        """Ground truth (x, y, yaw) of base_link in the world (the sim's map and odom)."""
        with self.lock:
            q = self.data.joint("base").qpos
            w, x, y, z = (float(v) for v in q[3:7])
            yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
            return float(q[0]), float(q[1]), yaw

    def base_twist(self) -> tuple[float, float]:
        with self.lock:
            qv = self.data.joint("base").qvel
            _x, _y, yaw = self.base_pose()
            v = float(qv[0]) * math.cos(yaw) + float(qv[1]) * math.sin(yaw)
            return v, float(qv[5])

    def object_position(self, name: str) -> np.ndarray:
        with self.lock:
            return np.array(self.data.body(name).xpos, dtype=float)

    def ground_truth(self) -> dict[str, object]:
        x, y, yaw = self.base_pose()
        with self.lock:
            objects = {
                o.name: {
                    "position": [round(float(v), 4) for v in self.data.body(o.name).xpos],
                    "on": self._support_of(o.name),
                }
                for o in OBJECTS
            }
        return {
            "time": round(self.time, 3),
            "robot": {
                "x": round(x, 4),
                "y": round(y, 4),
                "yaw": round(yaw, 4),
                "holding": self.held,
                "mode": self.mode,
            },
            "joints": {k: round(v, 4) for k, v in self.joint_positions().items()},
            "objects": objects,
        }

    def _contacts_of(self, body_name: str) -> set[str]:
        """Names of the bodies touching ``body_name`` now."""
        bid = self.model.body(body_name).id
        out: set[str] = set()
        for c in self.data.contact[: self.data.ncon]:
            b1, b2 = int(self.model.geom_bodyid[c.geom1]), int(self.model.geom_bodyid[c.geom2])
            if bid in (b1, b2):
                other = b2 if b1 == bid else b1
                out.add(self.model.body(other).name or "floor")
        return out

    def _support_of(self, obj: str) -> str:
        touching = self._contacts_of(obj)
        for s in SURFACES:
            if s.name in touching:
                return s.name
        if "world" in touching or "floor" in touching:
            return "floor"
        return "gripper" if touching & {"link_gripper_fingertip_left", "link_gripper_fingertip_right"} else ""

    def robot_scene_contacts(self) -> set[str]:
        """Scene things the robot touches now, the floor aside."""
        out: set[str] = set()
        for c in self.data.contact[: self.data.ncon]:
            b1, b2 = int(self.model.geom_bodyid[c.geom1]), int(self.model.geom_bodyid[c.geom2])
            r1, r2 = b1 in self._robot_bodies, b2 in self._robot_bodies
            if r1 != r2:
                other = b2 if r1 else b1
                if other != 0:
                    out.add(self.model.body(other).name)
        return out

    def touching_text(self) -> str:
        return ", ".join(sorted(self.robot_scene_contacts())) or "nothing in the scene"

    def moving(self, threshold: float = 1e-3) -> bool:
        with self.lock:
            return bool(float(np.max(np.abs(self.data.qvel))) > threshold)

    # --- control ------------------------------------------------------------------------

    def set_targets(self, targets: Mapping[str, float]) -> None:
        """Position targets by stretch_driver's joint names (TRAJECTORY_JOINTS)."""
        with self.lock:
            for name, value in targets.items():
                if name in ("joint_arm", "wrist_extension"):
                    ext = min(max(value, 0.0), ARM_MAX_M)
                    for seg in ARM_SEGMENTS:
                        self.data.actuator(f"arm_{seg[-2:]}").ctrl[0] = ext / 4
                elif name == "gripper_aperture":
                    angle = (value - _APERTURE_AT_ZERO) / _APERTURE_PER_RAD
                    self._gripper(angle)
                elif name == "joint_gripper_finger_left":
                    self._gripper(value)
                elif name in _SINGLE:
                    self.data.actuator(_SINGLE[name]).ctrl[0] = value
                else:
                    raise KeyError(name)

    def _gripper(self, angle: float) -> None:
        angle = min(max(angle, -0.6), 0.6)
        self.data.actuator("gripper_left").ctrl[0] = angle
        self.data.actuator("gripper_right").ctrl[0] = angle

    def position_of(self, name: str) -> float:
        if name in ("joint_arm", "wrist_extension"):
            return self.joint_positions()["wrist_extension"]
        if name == "gripper_aperture":
            with self.lock:
                return self.aperture()
        return self.joint_positions()[name]

    def move_joints(
        self,
        targets: Mapping[str, float],
        *,
        timeout_s: float = 6.0,
        tolerance: float = 0.01,
        feedback: Feedback = _noop,
        stage: str = "moving",
    ) -> dict[str, float]:
        """Command ``targets`` and wait (simulated time) until reached or stalled;
        returns each joint's remaining error."""
        self.set_targets(targets)
        start = self.time
        errors: dict[str, float] = {}
        while self.time - start < timeout_s:
            self.advance(0.1)
            errors = {n: abs(self.position_of(n) - t) for n, t in targets.items()}
            feedback(stage, min(1.0, (self.time - start) / timeout_s))
            if all(e <= tolerance for e in errors.values()):
                break
            if self.time - start > 1.0 and not self.moving(2e-3):
                break  # stopped short: stalled on contact or at a limit
        return errors

    # --- navigation ---------------------------------------------------------------------

    def navigate(
        self,
        x: float,
        y: float,
        yaw: float,
        *,
        feedback: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] = lambda: False,
        stall_s: float = 2.0,
    ) -> Outcome:
        """Rotate toward the goal, drive, rotate to ``yaw``; abort when progress stops."""
        legs: list[tuple[str, Callable[[], tuple[float, float, float]]]] = []

        def turn_to(target: Callable[[], float]) -> Callable[[], tuple[float, float, float]]:
            def cmd() -> tuple[float, float, float]:
                err = _wrap(target() - self.base_pose()[2])
                return 0.0, max(-0.6, min(0.6, 2.0 * err)), abs(err)

            return cmd

        def heading() -> float:
            px, py, _ = self.base_pose()
            return math.atan2(y - py, x - px)

        def drive() -> tuple[float, float, float]:
            px, py, pyaw = self.base_pose()
            dist = math.hypot(x - px, y - py)
            err = _wrap(math.atan2(y - py, x - px) - pyaw)
            v = max(0.0, min(0.3, 0.8 * dist)) * max(0.0, math.cos(err))
            return v, max(-0.5, min(0.5, 1.5 * err)) if dist > 0.05 else 0.0, dist

        px, py, _ = self.base_pose()
        if math.hypot(x - px, y - py) > 0.05:
            legs += [("turning", turn_to(heading)), ("driving", drive)]
        legs.append(("aligning", turn_to(lambda: yaw)))
        total = math.hypot(x - px, y - py)
        for name, leg in legs:
            tol = 0.03
            best, best_t, t0 = math.inf, self.time, self.time
            while True:
                if cancelled():
                    self.base_cmd = (0.0, 0.0)
                    return Outcome(False, "cancelled")
                v, w, err = leg()
                if err <= tol:
                    break
                with self.lock:
                    self.base_cmd = (v, w)
                self.advance(0.05)
                if err < best - 0.01:
                    best, best_t = err, self.time
                elif self.time - best_t > stall_s:
                    self.base_cmd = (0.0, 0.0)
                    touching = sorted(self.robot_scene_contacts())
                    why = f" (touching {', '.join(touching)})" if touching else ""
                    bx, by, _ = self.base_pose()
                    return Outcome(
                        False,
                        f"stalled while {name}: no progress for {stall_s:.1f} s at ({bx:.2f}, {by:.2f}), "
                        f"{math.hypot(x - bx, y - by):.2f} m from the goal{why}",
                    )
                if self.time - t0 > 60.0:
                    self.base_cmd = (0.0, 0.0)
                    return Outcome(False, f"timed out while {name}")
                if feedback is not None:
                    bx, by, _ = self.base_pose()
                    feedback(math.hypot(x - bx, y - by))
        with self.lock:
            self.base_cmd = (0.0, 0.0)
        self.advance(0.3)
        bx, by, byaw = self.base_pose()
        return Outcome(
            True,
            f"reached ({bx:.2f}, {by:.2f}, yaw {byaw:.2f}): {math.hypot(x - bx, y - by):.3f} m and "
            f"{abs(_wrap(yaw - byaw)):.3f} rad from the goal after {total:.2f} m",
        )

    def _halt(self) -> None:
        """Zero the base's velocity command."""
        with self.lock:
            self.base_cmd = (0.0, 0.0)

    def _stopped(self, stop: str, progress: str) -> Outcome:
        """Halt after ``_stop_reason`` said ``stop`` (cancelled or out of time)."""
        self._halt()
        return Outcome(False, f"{stop} after {progress}", stop=stop.split(":", maxsplit=1)[0])

    def _stalled(self, message: str, distance_m: float) -> Outcome:
        """Halt after no progress: ``message`` and what the robot touches, if anything."""
        self._halt()
        touching = sorted(self.robot_scene_contacts())
        why = f" (touching {', '.join(touching)})" if touching else ""
        return Outcome(False, f"{message}{why}", distance_m=distance_m, stop="stalled")

    def shift_along_axis(
        self,
        distance: float,
        *,
        tolerance: float = 0.005,
        stall_s: float = 2.0,
        speed: float = 0.1,
        time_allowance_s: float = 60.0,
        feedback: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> Outcome:
        """Drive straight along the base's own axis by ``distance`` m (negative: backwards),
        holding the heading, to ``tolerance``; abort when progress stops. Nav2's
        drive_on_heading and backup, and the pick's line-up (finer than ``navigate``)."""
        bx0, by0, yaw0 = self.base_pose()
        best, best_t, t0 = math.inf, self.time, self.time

        def along() -> float:
            bx, by, _ = self.base_pose()
            return (bx - bx0) * math.cos(yaw0) + (by - by0) * math.sin(yaw0)

        while True:
            err = distance - along()
            if abs(err) <= tolerance:
                break
            stop = _stop_reason(cancelled(), self.time - t0, time_allowance_s)
            if stop:
                return self._stopped(stop, f"{along():.2f} m of {distance:.2f} m")
            yaw_err = _wrap(yaw0 - self.base_pose()[2])
            v = max(-speed, min(speed, 2.0 * err))
            if abs(v) < 0.02:
                v = math.copysign(0.02, err)
            with self.lock:
                self.base_cmd = (v, max(-0.3, min(0.3, 2.0 * yaw_err)))
            self.advance(0.02)
            if feedback is not None:
                feedback(along())
            if abs(err) < best - 0.003:
                best, best_t = abs(err), self.time
            elif self.time - best_t > stall_s:
                return self._stalled(
                    f"stalled after {along():.2f} m of {distance:.2f} m: no progress for {stall_s:.1f} s",
                    distance_m=abs(along()),
                )
        self._halt()
        self.advance(0.2)
        return Outcome(True, f"drove {along():.3f} m of {distance:.3f} m", distance_m=abs(along()))

    def turn_by(
        self,
        angle: float,
        *,
        tolerance: float = 0.02,
        stall_s: float = 2.0,
        time_allowance_s: float = 60.0,
        feedback: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> Outcome:
        """Turn in place by ``angle`` rad (positive: left), as Nav2's spin; abort when stalled."""
        turned = 0.0
        last = self.base_pose()[2]
        best, best_t, t0 = math.inf, self.time, self.time
        while True:
            err = angle - turned
            if abs(err) <= tolerance:
                break
            stop = _stop_reason(cancelled(), self.time - t0, time_allowance_s)
            if stop:
                return self._stopped(stop, f"turning {turned:.2f} of {angle:.2f} rad")
            w = max(-0.6, min(0.6, 2.0 * err))
            if abs(w) < 0.05:
                w = math.copysign(0.05, err)
            with self.lock:
                self.base_cmd = (0.0, w)
            self.advance(0.02)
            yaw = self.base_pose()[2]
            turned += _wrap(yaw - last)
            last = yaw
            if feedback is not None:
                feedback(turned)
            if abs(err) < best - 0.005:
                best, best_t = abs(err), self.time
            elif self.time - best_t > stall_s:
                return self._stalled(
                    f"stalled after turning {turned:.2f} of {angle:.2f} rad",
                    distance_m=turned,
                )
        self._halt()
        self.advance(0.2)
        return Outcome(True, f"turned {turned:.3f} of {angle:.3f} rad", distance_m=turned)

    # --- manipulation -------------------------------------------------------------------

    def _in_base(self, point: np.ndarray) -> tuple[float, float]:
        bx, by, byaw = self.base_pose()
        dx, dy = float(point[0]) - bx, float(point[1]) - by
        c, s = math.cos(byaw), math.sin(byaw)
        return c * dx + s * dy, -s * dx + c * dy

    def _grasp_reach0(self) -> tuple[float, float, float]:
        """The grasp centre in the base frame at zero extension and lift: (x, -y, z)."""
        with self.lock:
            gc = np.array(self.data.body("link_grasp_center").xpos)
            ext = sum(self._q(j) for j in ARM_SEGMENTS)
            lift = self._q("joint_lift")
        gx, gy = self._in_base(gc)
        return gx, -gy - ext, float(gc[2]) - lift

    def pick(self, obj: str, feedback: Feedback = _noop) -> Outcome:
        if obj not in {o.name for o in OBJECTS}:
            return Outcome(False, f"unknown object {obj!r}; known: {', '.join(o.name for o in OBJECTS)}")
        if self.held:
            return Outcome(False, f"the gripper already holds {self.held}", held=self.held)
        spec = next(o for o in OBJECTS if o.name == obj)
        pos = self.object_position(obj)
        ox, oy = self._in_base(pos)
        distance = math.hypot(ox, oy)
        gx, reach0, z0 = self._grasp_reach0()
        need = -oy - reach0
        if oy > 0 or need > ARM_MAX_M or need < 0.0:
            return Outcome(
                False,
                f"out of reach: {obj} needs {need:.2f} m of the arm's 0..{ARM_MAX_M} m on its right side",
                distance_m=distance,
            )
        if abs(ox - gx) > 0.3:
            return Outcome(
                False,
                f"out of reach: {obj} is {ox - gx:+.2f} m along the base from the arm's line "
                "(0.30 m at most)",
                distance_m=distance,
            )
        # Line the arm up by driving the base along its own axis.
        if abs(ox - gx) > 0.01:
            feedback("aligning", 0.05)
            moved = self.shift_along_axis(ox - gx)
            if not moved.success:
                return Outcome(
                    False,
                    f"collided: the base could not line up with {obj}: {moved.message}",
                    distance_m=distance,
                )
            ox, oy = self._in_base(self.object_position(obj))
            need = -oy - reach0
        lift = float(pos[2]) - z0
        if not 0.0 <= lift <= LIFT_MAX_M - 0.12:
            return Outcome(
                False,
                f"out of reach: {obj} at {pos[2]:.2f} m needs the lift at {lift:.2f} m",
                distance_m=distance,
            )
        feedback("reaching", 0.1)
        self.move_joints(
            {
                "joint_wrist_yaw": 0.0,
                "joint_wrist_pitch": 0.0,
                "joint_wrist_roll": 0.0,
                "gripper_aperture": 0.16,
            },
            timeout_s=2.0,
            feedback=feedback,
            stage="reaching",
        )
        self.move_joints({"joint_arm": 0.0}, timeout_s=4.0)
        err = self.move_joints(
            {"joint_lift": lift + 0.01}, timeout_s=5.0, feedback=feedback, stage="reaching"
        )
        err.update(
            self.move_joints(
                {"joint_arm": need + 0.01}, timeout_s=6.0, tolerance=0.01, feedback=feedback, stage="reaching"
            )
        )
        short = max(err.values())
        if short > 0.03:
            touching = self.touching_text()
            self.move_joints({"joint_arm": 0.0}, timeout_s=4.0)
            return Outcome(
                False,
                f"collided: the arm stopped {short:.2f} m short of {obj} (touching {touching})",
                distance_m=distance,
            )
        feedback("closing", 0.5)
        self.move_joints(
            {"joint_gripper_finger_left": GRIPPER_CLOSED},
            timeout_s=1.5,
            tolerance=0.005,
            feedback=feedback,
            stage="closing",
        )
        self.advance(0.3)
        with self.lock:
            on_object = self._contacts_of(obj)
        fingers = on_object & {
            "link_gripper_fingertip_left",
            "link_gripper_fingertip_right",
            "link_gripper_finger_left",
            "link_gripper_finger_right",
        }
        if len(fingers) < 2:
            closed_cm = self.aperture() * 100
            self.move_joints({"gripper_aperture": 0.16, "joint_arm": 0.0}, timeout_s=4.0)
            return Outcome(
                False,
                f"missed: the fingers closed to {closed_cm:.1f} cm without holding {obj} between them",
                distance_m=distance,
            )
        feedback("lifting", 0.7)
        z_before = float(self.object_position(obj)[2])
        self.move_joints({"joint_lift": lift + 0.11}, timeout_s=4.0, feedback=feedback, stage="lifting")
        self.advance(0.5)
        rose = float(self.object_position(obj)[2]) - z_before
        if rose < 0.07:
            self.move_joints({"gripper_aperture": 0.16}, timeout_s=1.0)
            self.move_joints({"joint_arm": 0.0}, timeout_s=4.0)
            return Outcome(
                False,
                f"slipped: {obj} rose {rose * 100:.1f} cm while the gripper rose 10 cm",
                distance_m=distance,
            )
        self.held = obj
        self.move_joints({"joint_arm": 0.05}, timeout_s=5.0, feedback=feedback, stage="lifting")
        self.advance(0.3)
        if float(self.object_position(obj)[2]) - z_before < 0.05:
            self.held = ""
            return Outcome(
                False, f"slipped: {obj} fell out of the gripper while the arm retracted", distance_m=distance
            )
        return Outcome(
            True,
            f"picked {obj}: it rose {rose * 100:.1f} cm with the gripper ({spec.mass_kg * 1000:.0f} g)",
            held=obj,
            distance_m=distance,
        )

    def place(self, surface: str, feedback: Feedback = _noop) -> Outcome:
        spec = next((s for s in SURFACES if s.name == surface), None)
        if spec is None:
            return Outcome(
                False, f"unknown surface {surface!r}; known: {', '.join(s.name for s in SURFACES)}"
            )
        obj = self.held
        if not obj:
            return Outcome(False, "the gripper is empty")
        # The nearest point of the surface's top along the arm's line, 8 cm in from its edge.
        gx, reach0, z0 = self._grasp_reach0()
        bx, by, byaw = self.base_pose()
        best: tuple[float, float] | None = None
        for t in np.linspace(reach0, reach0 + ARM_MAX_M + 0.15, 60):
            wx = bx + math.cos(byaw) * gx + math.sin(byaw) * t
            wy = by + math.sin(byaw) * gx - math.cos(byaw) * t
            if abs(wx - spec.x) <= spec.half_x - 0.05 and abs(wy - spec.y) <= spec.half_y - 0.05:
                best = (float(t), math.hypot(wx - bx, wy - by))
                break
        if best is None:
            return Outcome(
                False,
                f"out of reach: no part of {surface}'s top lies on the arm's line within {ARM_MAX_M} m",
                held=obj,
            )
        t, distance = best
        need = min(t + 0.03 - reach0, ARM_MAX_M)
        half = next(o.half_height for o in OBJECTS if o.name == obj)
        hold_above = self.object_position(obj)[2] - float(self.data.body("link_grasp_center").xpos[2])
        lift_top = spec.height + half - hold_above - z0
        if lift_top + 0.06 > LIFT_MAX_M:
            return Outcome(
                False, f"out of reach: {surface} at {spec.height:.2f} m is above the lift", held=obj
            )
        feedback("reaching", 0.1)
        self.move_joints({"joint_lift": lift_top + 0.05}, timeout_s=5.0, feedback=feedback, stage="reaching")
        err = self.move_joints({"joint_arm": need}, timeout_s=6.0, feedback=feedback, stage="reaching")
        if max(err.values()) > 0.03:
            return Outcome(
                False,
                f"collided: the arm stopped {max(err.values()):.2f} m short over {surface} "
                f"(touching {self.touching_text()})",
                held=obj,
            )
        self.move_joints({"joint_lift": lift_top + 0.005}, timeout_s=3.0, feedback=feedback, stage="reaching")
        feedback("releasing", 0.6)
        self.move_joints({"gripper_aperture": 0.16}, timeout_s=1.5, feedback=feedback, stage="releasing")
        self.advance(0.3)
        feedback("retracting", 0.8)
        self.move_joints(
            {"joint_lift": lift_top + 0.08}, timeout_s=3.0, feedback=feedback, stage="retracting"
        )
        self.move_joints({"joint_arm": 0.0}, timeout_s=6.0, feedback=feedback, stage="retracting")
        self.advance(0.5)
        with self.lock:
            support = self._support_of(obj)
        self.held = ""
        if support != surface:
            return Outcome(
                False,
                f"slipped: {obj} ended on {support or 'nothing'} instead of {surface}",
                distance_m=distance,
            )
        return Outcome(True, f"placed {obj} on {surface}", held=obj, distance_m=distance)

    def stow(self) -> None:
        self.move_joints(
            {
                "gripper_aperture": 0.05,
                "joint_wrist_yaw": 3.0,
                "joint_wrist_pitch": 0.0,
                "joint_wrist_roll": 0.0,
            },
            timeout_s=3.0,
        )
        self.move_joints({"joint_arm": 0.0}, timeout_s=5.0)
        self.move_joints({"joint_lift": 0.2}, timeout_s=5.0)

    # --- lidar --------------------------------------------------------------------------

    def scan(self, beams: int = 360, range_max: float = 12.0) -> tuple[np.ndarray, float]:
        """Ranges of a planar scan at the lidar's mount (RPLidar A1 on Stretch), from
        ``mj_ray_multi`` over the scene's geometry (not the robot's own); angle_min."""
        with self.lock:
            origin = np.array(self.data.xpos[self._lidar_site])
            frame = np.array(self.data.xmat[self._lidar_site]).reshape(3, 3)
            angles = -math.pi + np.arange(beams) * (2 * math.pi / beams)
            local = np.stack([np.cos(angles), np.sin(angles), np.zeros(beams)], axis=1)
            dirs = (frame @ local.T).T
            geomid = np.full(beams, -1, dtype=np.int32)
            dist = np.full(beams, -1.0)
            group = np.zeros(6, dtype=np.uint8)
            group[SCENE_GROUP] = 1
            mujoco.mj_multiRay(
                self.model,
                self.data,
                origin,
                dirs.flatten(),
                group,
                1,
                -1,
                geomid,
                dist,
                None,
                beams,
                range_max,
            )
        ranges = np.where(dist < 0, np.inf, dist)
        return ranges.astype(np.float32), -math.pi


def _stop_reason(cancelled: bool, elapsed: float, allowance: float) -> str:
    if cancelled:
        return "cancelled"
    if elapsed > allowance:
        return f"timeout: out of its time allowance ({allowance:.0f} s)"
    return ""


def _wrap(angle: float) -> float:
    return (angle + math.pi) % (2 * math.pi) - math.pi


_ = ROBOT_GROUP
