"""Deterministic evaluation for the simulated robot, from its ground-truth topic.

``SimGroundTruthEvaluator`` implements ``EvaluatorProtocol`` (``evaluator.kind: sim``).
It subscribes to the sim's ground truth (``std_msgs/String`` JSON, reliable and
transient local), waits, with a deadline, for a state stamped after the tool
finished, finds the sim's record of the action that just ran (``actions``) to learn
its target, and checks the post-condition on the world state itself, never on the
action's own success flag:

    pick_object   the gripper holds the requested object
    place_object  the object last seen in the gripper is on the requested surface,
                  and the gripper is empty
    navigate_to   the base is stopped, and in the requested area, or next to the
                  requested surface or object: within the arm's reach (the ground
                  truth's robot.reach_m, the limit pick_object and place_object apply)
                  of the object, or of the surface's nearest edge

Anything it cannot establish is a failure verdict with the reason (fail closed);
the evidence quotes the ground truth it used.

It also judges a whole task's goal (``evaluate_task``): the newest instruction revision,
else the instruction, read completely (``harness_ros_sim.sim.goal.read_goal``: every object it
names with one destination surface, every word understood). The goal holds when every
object rests on its surface and none is in the gripper. A goal it cannot read completely
is not judged (None: the outcome stays unverified), never confirmed on the part it read.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from harness_ros.evaluation.contracts import Verdict, VerdictStatus
from harness_ros.observation.contracts import Observation

if TYPE_CHECKING:
    from rclpy.callback_groups import CallbackGroup
    from rclpy.node import Node

__all__ = ["GROUND_TRUTH_QOS", "GroundTruthJudge", "SimGroundTruthEvaluator", "judge_goal"]

GROUND_TRUTH_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=1,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)

STANDOFF_TOLERANCE_M = 0.1
"""navigate_to with a standoff beyond the arm's reach: how much farther than asked the base
may stop (the Gazebo controller stops within 0.05 m of its goal)."""


@dataclass(frozen=True)
class _Check:
    ok: bool
    reason: str
    evidence: str


def _fmt_xy(entry: Mapping[str, Any]) -> str:
    return f"({float(entry.get('x', 0.0)):.2f}, {float(entry.get('y', 0.0)):.2f})"


class GroundTruthJudge:
    """Pure judging of one ground-truth state (no ROS), for ``SimGroundTruthEvaluator``."""

    def judge(self, tool: str, state: Mapping[str, Any], last_held: str | None) -> _Check:
        record = _latest_record(state, tool)
        version = state.get("version")
        prefix = f"ground truth v{version}"
        if record is None:
            return _Check(False, f"the sim has no record of a {tool} action", prefix)
        arguments = record.get("arguments") or {}
        robot = state.get("robot") or {}
        if robot.get("busy"):
            return _Check(False, f"the robot is still busy with {robot['busy']}", f"{prefix}: busy")
        if tool == "pick_object":
            return self._pick(str(arguments.get("object_id") or ""), state, prefix)
        if tool == "place_object":
            return self._place(str(arguments.get("surface_id") or ""), state, last_held, prefix)
        if tool == "navigate_to":
            return self._navigate(arguments, state, prefix)
        return _Check(False, f"no ground-truth check is defined for tool {tool!r}", prefix)

    @staticmethod
    def _pick(object_id: str, state: Mapping[str, Any], prefix: str) -> _Check:
        holding = (state.get("gripper") or {}).get("holding")
        obj = (state.get("objects") or {}).get(object_id)
        where = f"; {object_id} is on {obj.get('on')!r}" if isinstance(obj, Mapping) else ""
        evidence = f"{prefix}: gripper holds {holding!r}{where}"
        if holding == object_id:
            return _Check(True, "", evidence)
        return _Check(False, f"the gripper holds {holding!r}, not {object_id!r}", evidence)

    @staticmethod
    def _place(surface_id: str, state: Mapping[str, Any], last_held: str | None, prefix: str) -> _Check:
        holding = (state.get("gripper") or {}).get("holding")
        if last_held is None:
            return _Check(False, "no object was seen in the gripper before the place", prefix)
        obj = (state.get("objects") or {}).get(last_held)
        on = obj.get("on") if isinstance(obj, Mapping) else None
        evidence = f"{prefix}: {last_held} is on {on!r}, gripper holds {holding!r}"
        if on == surface_id and holding is None:
            return _Check(True, "", evidence)
        if holding is not None:
            return _Check(False, f"the gripper still holds {holding!r}", evidence)
        return _Check(False, f"{last_held} is on {on!r}, not on {surface_id!r}", evidence)

    @staticmethod
    def _navigate(arguments: Mapping[str, Any], state: Mapping[str, Any], prefix: str) -> _Check:
        """In the requested area, or next to the requested object or surface: within the
        arm's reach (the ground truth's ``robot.reach_m``, the limit pick and place apply)
        of the object, or of the surface's nearest edge. A standoff asked beyond the reach
        is judged as asked (up to ``STANDOFF_TOLERANCE_M`` farther)."""
        target = str(arguments.get("target") or "")
        robot = state.get("robot") or {}
        rx, ry = float(robot.get("x", math.nan)), float(robot.get("y", math.nan))
        where = f"{prefix}: base stopped at {_fmt_xy(robot)} in {robot.get('area') or 'no area'!r}"
        if target in (state.get("areas") or []):
            if robot.get("area") == target:
                return _Check(True, "", where)
            return _Check(False, f"the base is in {robot.get('area')!r}, not in {target!r}", where)
        objects = state.get("objects") or {}
        surfaces = state.get("surfaces") or {}
        if target in objects:
            entry = objects[target]
            distance = math.hypot(float(entry["x"]) - rx, float(entry["y"]) - ry)
            what = f"{target} at {_fmt_xy(entry)}"
        elif target in surfaces:
            entry = surfaces[target]
            if "size_x" not in entry or "size_y" not in entry:
                return _Check(False, f"the ground truth does not give the size of {target}", where)
            dx = max(abs(rx - float(entry["x"])) - float(entry["size_x"]) / 2, 0.0)
            dy = max(abs(ry - float(entry["y"])) - float(entry["size_y"]) / 2, 0.0)
            distance = math.hypot(dx, dy)
            what = f"the nearest edge of {target}"
        else:
            return _Check(False, f"{target!r} is not an area, surface or object of the sim", where)
        reach = robot.get("reach_m")
        if not isinstance(reach, int | float) or not math.isfinite(reach) or reach <= 0:
            return _Check(False, "the ground truth does not give the arm's reach (robot.reach_m)", where)
        standoff = arguments.get("standoff_m")
        asked = float(standoff) if isinstance(standoff, int | float) and math.isfinite(standoff) else 0.0
        evidence = f"{where}, {distance:.2f} m from {what} (arm's reach {reach:.2f} m)"
        if asked > reach:
            limit = asked + STANDOFF_TOLERANCE_M
            if distance <= limit:
                return _Check(True, "", f"{evidence}; standoff {asked:.2f} m asked")
            return _Check(
                False,
                f"the base stopped {distance:.2f} m from {target}, not at the {asked:.2f} m asked",
                evidence,
            )
        if distance <= reach:
            return _Check(True, "", evidence)
        return _Check(
            False,
            f"the base stopped {distance:.2f} m from {target}, beyond the arm's reach ({reach:.2f} m)",
            evidence,
        )


def judge_goal(goal: str, revisions: Sequence[str], state: Mapping[str, Any]) -> _Check | None:
    """Whether the goal holds in ``state``: every placement it asks for, judged together.

    The goal is the newest of ``revisions``, else ``goal``, as the operator's newest answer
    that names something of the world clarifies it (the harness passes each answer as
    "<answer> <goal>"). It must read completely (``harness_ros_sim.sim.goal.read_goal``: each
    object with one destination surface, every word understood), else None (not judged:
    the outcome stays unverified). A goal read in part is never confirmed on the part it
    read."""
    from harness_ros_sim.sim.goal import read_goal

    objects = state.get("objects") if isinstance(state.get("objects"), Mapping) else {}
    surfaces = state.get("surfaces") if isinstance(state.get("surfaces"), Mapping) else {}
    areas = state.get("areas") if isinstance(state.get("areas"), list) else []
    names = ([str(o) for o in objects], [str(s) for s in surfaces], [str(a) for a in areas])
    current, answers = goal.strip(), []
    for revision in revisions:
        text = revision.strip()
        if text.endswith(f" {current}"):
            answers.append(text)
        else:
            current, answers = text, []
    reading = None
    for text in reversed(answers):
        clarified = read_goal(text, *names)
        if clarified.complete:
            reading = clarified
            break
        # An answer about something else ("yes") leaves the goal as it was; one that
        # names the world's things but cannot be read leaves the goal unreadable.
        if read_goal(text[: -len(current)], *names).mentions:
            return None
    reading = reading or read_goal(current, *names)
    if not reading.complete:
        return None
    holding = (state.get("gripper") or {}).get("holding")
    failures: list[str] = []
    seen: list[str] = []
    for placement in reading.placements:
        obj, target = placement.object_id, placement.surface_id
        if placement.kinds:
            # "a cup": met by any object of the kind resting on the surface.
            truth: Mapping[str, Any] = objects or {}
            kind = [str(o) for o in truth if str(o).rsplit("_", 1)[-1] in placement.kinds]
            resting = [o for o in kind if holding != o and (truth.get(o) or {}).get("on") == target]
            seen.append(f"{obj}: {', '.join(resting) or 'none'} on {target!r}")
            if not resting:
                failures.append(f"no object of the kind ({obj}) is on {target!r}")
            continue
        entry = objects.get(obj)
        on = entry.get("on") if isinstance(entry, Mapping) else None
        seen.append(f"{obj} is on {on!r}")
        if holding == obj:
            failures.append(f"{obj} is still in the gripper, not on {target}")
        elif on != target:
            failures.append(f"{obj} is on {on!r}, not on {target!r}")
    evidence = f"ground truth v{state.get('version')}: {', '.join(seen)}, gripper holds {holding!r}"
    if failures:
        return _Check(False, "; ".join(failures), evidence)
    return _Check(True, "", evidence)


def _latest_record(state: Mapping[str, Any], tool: str) -> Mapping[str, Any] | None:
    for record in reversed(state.get("actions") or []):
        if isinstance(record, Mapping) and record.get("action") == tool:
            return record
    return None


class SimGroundTruthEvaluator:
    """``EvaluatorProtocol`` over the sim's ground-truth topic."""

    def __init__(
        self,
        node: Node,
        topic: str = "/sim/ground_truth",
        *,
        wait_s: float = 3.0,
        callback_group: CallbackGroup | None = None,
    ) -> None:
        self._node = node
        self._topic = topic
        self._wait_s = wait_s
        self._cond = threading.Condition()
        self._state: dict[str, Any] | None = None
        self._last_held: str | None = None
        self._judge = GroundTruthJudge()
        self._subscription = node.create_subscription(
            String, topic, self._on_state, GROUND_TRUTH_QOS, callback_group=callback_group
        )

    def _on_state(self, msg: String) -> None:
        try:
            state = json.loads(msg.data)
        except json.JSONDecodeError:
            return
        if not isinstance(state, dict):
            return
        with self._cond:
            self._state = state
            holding = (state.get("gripper") or {}).get("holding")
            if holding:
                self._last_held = str(holding)
            self._cond.notify_all()

    def _now(self) -> float:
        return self._node.get_clock().now().nanoseconds / 1e9

    def _fresh_state(self, after: float) -> tuple[dict[str, Any] | None, str | None, bool]:
        """The newest state stamped at or after ``after`` (waiting up to ``wait_s``), the
        object last seen in the gripper (a place has just emptied it), and whether any
        state arrived at all."""

        def fresh() -> bool:
            return self._state is not None and float(self._state.get("stamp", 0.0)) >= after

        with self._cond:
            self._cond.wait_for(fresh, timeout=self._wait_s)
            state = dict(self._state) if fresh() and self._state is not None else None
            return state, self._last_held, self._state is not None

    def evaluate(self, *, tool: str, run_id: str, post_condition: str, observation: Observation) -> Verdict:
        started = time.monotonic()
        state, last_held, any_state = self._fresh_state(self._now())
        if state is None:
            reason = (
                f"no ground truth newer than the tool's completion on {self._topic!r} "
                f"within {self._wait_s:g} s"
                if any_state
                else f"no ground truth on {self._topic!r}"
            )
            return Verdict(
                VerdictStatus.FAILURE, run_id, reason, f"waited {time.monotonic() - started:.1f} s"
            )
        check = self._judge.judge(tool, state, last_held)
        if check.ok:
            return Verdict(VerdictStatus.SUCCESS, run_id, None, check.evidence)
        return Verdict(VerdictStatus.FAILURE, run_id, check.reason, check.evidence)

    def evaluate_task(
        self, *, goal: str, revisions: Sequence[str], run_id: str, observation: Observation
    ) -> Verdict | None:
        """The goal's verdict from fresh ground truth; None when the goal is not a fetch it reads."""
        started = time.monotonic()
        state, _, any_state = self._fresh_state(self._now())
        if state is None:
            with self._cond:
                known = dict(self._state) if self._state is not None else None
            # Without a fresh state the goal may still be unreadable: then say nothing.
            if known is not None and judge_goal(goal, revisions, known) is None:
                return None
            reason = (
                f"no ground truth newer than the task's end on {self._topic!r} within {self._wait_s:g} s"
                if any_state
                else f"no ground truth on {self._topic!r}"
            )
            return Verdict(
                VerdictStatus.FAILURE, run_id, reason, f"waited {time.monotonic() - started:.1f} s"
            )
        check = judge_goal(goal, revisions, state)
        if check is None:
            return None
        if check.ok:
            return Verdict(VerdictStatus.SUCCESS, run_id, None, check.evidence)
        return Verdict(VerdictStatus.FAILURE, run_id, check.reason, check.evidence)

    def destroy(self) -> None:
        self._node.destroy_subscription(self._subscription)
