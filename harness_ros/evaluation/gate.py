"""The evaluation gate: the harness's single entry to an evaluator after a tool ran.

It applies the rules no evaluator may relax: a ``run_id`` is required, ``process``
is accepted only for segment tools and only ``max_segments`` times in a row per
``run_id``, and anything malformed or raised becomes a ``failure`` verdict. At a task's
end it also asks an evaluator that can judge whole goals (``evaluate_task``) whether
the goal holds, under the same rules (``process`` is never a task verdict).
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from harness_ros.config import ToolEvidenceConfig
from harness_ros.evaluation.arm_pose import ArmPose
from harness_ros.evaluation.contracts import EvaluatorProtocol, Verdict, VerdictStatus, parse_verdict
from harness_ros.evaluation.evidence import (
    Evidence,
    Pose2D,
    RobotStateSource,
    StateReading,
    bounded_arguments,
    check_arm_pose,
    check_pose,
)
from harness_ros.evaluation.grasp import check_grasp
from harness_ros.observation.contracts import Observation
from harness_ros.tools.contracts import ToolSpec

__all__ = ["EvaluationGate"]

logger = logging.getLogger(__name__)

_AFTER_END_POLL_S = 0.02


class EvaluationGate:
    """Validates every verdict fail-closed and bounds consecutive ``process`` verdicts."""

    def __init__(
        self,
        evaluator: EvaluatorProtocol,
        *,
        max_segments: int,
        evidence: Mapping[str, ToolEvidenceConfig] | None = None,
        state: RobotStateSource | None = None,
    ) -> None:
        if max_segments < 1:
            raise ValueError(f"max_segments must be >= 1, got {max_segments!r}")
        self._evaluator = evaluator
        self._max_segments = max_segments
        self._evidence = dict(evidence or {})
        self._state = state
        self._segments: dict[str, int] = {}
        self._lock = threading.Lock()

    def judge(
        self,
        spec: ToolSpec,
        run_id: str,
        observation: Observation,
        *,
        arguments: Mapping[str, Any] | None = None,
        requested_pose: Pose2D | ArmPose | None = None,
        ended_at: float | None = None,
    ) -> Verdict:
        """The verdict on ``spec``'s post-condition. ``arguments`` (what the model asked,
        bounded to their validated values: ``bounded_arguments``) and ``requested_pose``
        (the pose the goal asked for: the base's, or the end effector's for an arm) go to
        the evaluator with the state sources the tool's ``evaluator.evidence`` entry names;
        with a ``pose_check`` or ``arm_pose_check`` there, the measured pose decides, with a
        ``grasp_check`` the measured finger joint, and no evaluator is asked. ``ended_at``
        (``time.monotonic()`` when the tool ended): an arm pose or a finger joint measured
        before it is no evidence."""
        run_id = run_id.strip() if isinstance(run_id, str) else ""
        if not run_id:
            return Verdict(
                VerdictStatus.FAILURE, "", f"tool {spec.name!r} returned no run_id, so it cannot be evaluated"
            )
        post_condition = (spec.post_condition or "").strip()
        if not post_condition:
            return Verdict(
                VerdictStatus.FAILURE, run_id, f"tool {spec.name!r} has no post-condition to check"
            )
        evidence = self._tool_evidence(spec, arguments or {}, requested_pose, ended_at)
        if evidence.pose_check is not None:
            # Numbers are compared, not left to a model: the pose check is the verdict.
            check = evidence.pose_check
            status = VerdictStatus.SUCCESS if check.holds else VerdictStatus.FAILURE
            return self._settle(
                Verdict(status, run_id, None if check.holds else check.reason, f"pose check: {check.reason}")
            )
        if evidence.grasp_check is not None:
            # The finger joint's measured position is the verdict, as the pose check's is.
            grasp = evidence.grasp_check
            status = VerdictStatus.SUCCESS if grasp.holds else VerdictStatus.FAILURE
            return self._settle(
                Verdict(status, run_id, None if grasp.holds else grasp.reason, f"grasp check: {grasp.reason}")
            )
        extra = {"evidence": evidence} if _accepts_evidence(self._evaluator.evaluate) else {}
        try:
            raw = self._evaluator.evaluate(
                tool=spec.name, run_id=run_id, post_condition=post_condition, observation=observation, **extra
            )
        except Exception as err:  # an evaluator fault is a failed check, not a crash
            logger.exception("evaluator raised for tool %r run %r", spec.name, run_id)
            return self._settle(
                Verdict(VerdictStatus.FAILURE, run_id, f"evaluator raised {type(err).__name__}")
            )
        # Re-validate whatever came back: the segment rule and the run_id are the gate's.
        payload = raw.to_dict() if isinstance(raw, Verdict) else raw
        verdict = parse_verdict(payload, run_id=run_id, allow_process=spec.segment)
        return self._settle(verdict)

    @property
    def judges_tasks(self) -> bool:
        """Whether the evaluator can be asked about a whole task's goal."""
        return callable(getattr(self._evaluator, "evaluate_task", None))

    def judge_task(
        self, goal: str, revisions: Sequence[str], run_id: str, observation: Observation
    ) -> Verdict | None:
        """The goal's verdict, or None when the evaluator cannot judge it (no task check,
        or it says so). Anything malformed or raised is a failure verdict (fail closed)."""
        evaluate_task = getattr(self._evaluator, "evaluate_task", None)
        if not callable(evaluate_task):
            return None
        extra: dict[str, Any] = {}
        if _accepts_evidence(evaluate_task):
            # The goal may concern anything the robot did: every configured source is read.
            state = self._read_state(self._state.state_names() if self._state is not None else ())
            extra["evidence"] = Evidence(state=state)
        try:
            raw = evaluate_task(
                goal=goal, revisions=tuple(revisions), run_id=run_id, observation=observation, **extra
            )
        except Exception as err:  # an evaluator fault is a failed check, not a crash
            logger.exception("evaluator raised judging the goal of task %r", run_id)
            return Verdict(VerdictStatus.FAILURE, run_id, f"evaluator raised {type(err).__name__}")
        if raw is None:
            return None
        payload = raw.to_dict() if isinstance(raw, Verdict) else raw
        return parse_verdict(payload, run_id=run_id, allow_process=False)

    def _tool_evidence(
        self,
        spec: ToolSpec,
        arguments: Mapping[str, Any],
        requested: Pose2D | ArmPose | None,
        ended_at: float | None = None,
    ) -> Evidence:
        requested_pose = requested if isinstance(requested, Pose2D) else None
        requested_arm = requested if isinstance(requested, ArmPose) else None
        config = self._evidence.get(spec.name)
        names = list(config.state) if config is not None else []
        check_config = config.pose_check if config is not None else None
        if check_config is not None:
            names += [n for n in (check_config.source, check_config.speed_source) if n and n not in names]
        arm_config = config.arm_pose_check if config is not None else None
        grasp_config = config.grasp_check if config is not None else None
        after = arm_config or grasp_config  # a check of a reading measured after the tool ended
        if after is not None and after.source not in names:
            names.append(after.source)
        since_end, state = self._read_after(
            names, after.source if after else None, after.wait_s if after else 0.0, ended_at
        )
        check = grasp = None
        readings = {r.source: r for r in state}
        if check_config is not None:
            speed = readings.get(check_config.speed_source) if check_config.speed_source else None
            check = check_pose(requested_pose, readings.get(check_config.source), check_config, speed)
        elif arm_config is not None:
            check = check_arm_pose(
                requested_arm, readings.get(arm_config.source), arm_config, since_end_s=since_end
            )
        elif grasp_config is not None:
            grasp = check_grasp(readings.get(grasp_config.source), grasp_config, since_end_s=since_end)
        return Evidence(
            tool=spec.name,
            # Only validated values, bounded: the acting model's free text never reaches an evaluator.
            arguments=bounded_arguments(arguments, spec.input_schema),
            argument_schema=spec.input_schema,
            requested_pose=requested_pose,
            requested_arm_pose=requested_arm,
            state=state,
            pose_check=check,
            grasp_check=grasp,
        )

    def _read_after(
        self, names: Sequence[str], after: str | None, wait_s: float, ended_at: float | None
    ) -> tuple[float | None, tuple[StateReading, ...]]:
        """The readings, and how long ago the tool ended when they were read. With a check
        that needs source ``after`` measured after the tool ended (an arm pose check, a
        grasp check), waits up to ``wait_s`` for such a reading (the last one before may
        show the arm before it arrived, the fingers before they closed)."""
        deadline = time.monotonic() + wait_s
        pause = threading.Event()  # never set: a bounded pause between reads
        while True:
            # Before reading: a reading older than this was measured before the tool ended.
            since_end = None if ended_at is None else max(0.0, time.monotonic() - ended_at)
            state = self._read_state(names)
            if after is None or since_end is None or time.monotonic() >= deadline:
                return since_end, state
            reading = next((r for r in state if r.source == after), None)
            if reading is not None and reading.age_s is not None and reading.age_s <= since_end:
                return since_end, state
            pause.wait(_AFTER_END_POLL_S)

    def _read_state(self, names: Sequence[str]) -> tuple[StateReading, ...]:
        if self._state is None or not names:
            return ()
        try:
            return tuple(self._state.read_state(names))
        except Exception:  # no readings: a pose check then fails closed, a model sees none
            logger.exception("reading robot state %s failed", list(names))
            return ()

    def reset(self, run_id: str | None = None) -> None:
        """Forget segment counts (of one run, or all at task end)."""
        with self._lock:
            if run_id is None:
                self._segments.clear()
            else:
                self._segments.pop(run_id, None)

    def _settle(self, verdict: Verdict) -> Verdict:
        with self._lock:
            if verdict.status is not VerdictStatus.PROCESS:
                self._segments.pop(verdict.run_id, None)
                return verdict
            count = self._segments.get(verdict.run_id, 0) + 1
            if count > self._max_segments:
                self._segments.pop(verdict.run_id, None)
                reason = f"segment limit reached ({self._max_segments} 'process' verdicts in a row)"
                return Verdict(VerdictStatus.FAILURE, verdict.run_id, reason, verdict.evidence)
            self._segments[verdict.run_id] = count
            return verdict


def _accepts_evidence(method: Any) -> bool:
    """Whether an evaluator method takes ``evidence`` (evaluators written before it do not)."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "evidence" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
