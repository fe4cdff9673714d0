"""The Harness: one session, one task at a time, each task an iterator of events.

``run()`` rejects a second task at once (thread-safe) and returns an iterator;
the task advances as the caller reads events (the ROS node reads them in its
task worker thread). ``cancel()`` and ``revise()`` may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness_ros.config import EvaluatorConfig, HarnessLimits, SafetyConfig, TaskApiConfig
from harness_ros.errors import ConfigError, TaskRejectedError
from harness_ros.evaluation import EvaluationGate, EvaluatorProtocol
from harness_ros.evaluation.evidence import RobotStateSource, evidence_tool_problem
from harness_ros.events import EventType, HarnessEvent
from harness_ros.harness.calls import ToolCallRunner
from harness_ros.harness.prompts import decide_prompt
from harness_ros.harness.revision_budget import RevisionBudget
from harness_ros.harness.runlog import RunLog
from harness_ros.harness.task import ActiveTask, TaskRunner
from harness_ros.hooks import BaseMotionSafetyFilter, PreExecutionHook
from harness_ros.model.contracts import ChatModel
from harness_ros.observation.contracts import Clearance, ObservationSource
from harness_ros.operator.contracts import OperatorChannel
from harness_ros.operator.session import Session, TaskSummaryRecorder
from harness_ros.operator.tools import operator_tools
from harness_ros.retention import prune_run_folders
from harness_ros.task_api import TASK_ID_PATTERN
from harness_ros.tools import CancelToken, Tool, ToolRegistry
from harness_ros.tools.finish_task import FinishTaskTool

if TYPE_CHECKING:
    from harness_ros.memory import FileMemory
    from harness_ros.profile import EmbodimentProfile
    from harness_ros.skills import SkillCatalog, SkillSession

__all__ = ["Harness", "new_task_id"]

logger = logging.getLogger(__name__)

# Matched in full: a task id names a run folder, so ``$``'s trailing-newline match is not enough.
_TASK_ID = TASK_ID_PATTERN


def new_task_id() -> str:
    """Sortable and unique: ``20250101T120000-1a2b3c``."""
    return f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"


class Harness:
    """Runs tasks with a model, tools, memory, profile, skills, observations,
    an evaluator and pre-execution hooks."""

    def __init__(
        self,
        *,
        model: ChatModel,
        tools: Sequence[Tool] = (),
        memory: FileMemory | None = None,
        profile: EmbodimentProfile | None = None,
        skills: SkillCatalog | None = None,
        observations: ObservationSource | None = None,
        evaluator: EvaluatorProtocol | None = None,
        hooks: Sequence[PreExecutionHook] = (),
        limits: HarnessLimits | None = None,
        evaluator_config: EvaluatorConfig | None = None,
        post_execution_wait_s: float = 2.0,
        first_frame_timeout_s: float = 0.0,
        runs_dir: Path | None = None,
        system_prompt: str | None = None,
        context_window_tokens: int = 128_000,
        safety: SafetyConfig | None = None,
        unsafe_disable_base_motion_safety_filter: bool = False,
        operator: OperatorChannel | None = None,
        operator_timeout_s: float = 120.0,
        session: Session | None = None,
        model_vision: bool = True,
        robot_state: RobotStateSource | None = None,
        revision_limits: TaskApiConfig | None = None,
    ) -> None:
        self.model = model
        revisions = revision_limits if revision_limits is not None else TaskApiConfig()
        self.revision_budget = RevisionBudget(
            revisions.max_revisions_per_task, revisions.max_revision_chars_per_task
        )
        """Every revision passes it (``revise``), whichever entry point sent it (task_api limits)."""
        self.model_vision = model_vision
        """Whether the model takes images (``model.vision``); False: observations carry text only."""
        self.memory = memory
        self.profile = profile
        self.skills = skills
        self.observations = observations
        self.limits = limits if limits is not None else HarnessLimits()
        self.context_window_tokens = context_window_tokens
        self.first_frame_timeout_s = first_frame_timeout_s
        """Before a task's first decision, how long a FirstFrameSource may wait for its views."""
        self.runs_dir = Path(runs_dir) if runs_dir is not None else None
        self.system_prompt = decide_prompt(
            system_prompt if system_prompt is not None else self.limits.system_prompt
        )
        self.skill_session: SkillSession | None = None
        extra: list[Tool] = []
        if skills is not None and skills.has_skills:
            from harness_ros.skills import SkillSession, skill_tools

            self.skill_session = SkillSession(skills)
            extra = skill_tools(self.skill_session, skills)
        extra += operator_tools(operator, self._current_task_id, operator_timeout_s)
        if memory is not None and memory.world:  # world memory (issue 48): where is X
            from harness_ros.harness.recall_object import RecallObjectTool

            extra.append(RecallObjectTool(memory))
        self.session = session if session is not None else Session()
        # finish_task is a core tool: the model's structured way to end a task with a claim.
        self.registry = ToolRegistry([*tools, *extra, FinishTaskTool()])
        config = evaluator_config if evaluator_config is not None else EvaluatorConfig()
        problem = evidence_tool_problem(config.evidence, self.registry.names())
        if problem is not None:  # plugin tools count too, so this is checked here
            raise ConfigError(problem)
        self.gate = (
            EvaluationGate(
                evaluator, max_segments=config.max_segments, evidence=config.evidence, state=robot_state
            )
            if evaluator is not None
            else None
        )
        self.hooks = _with_base_motion_filter(
            tuple(hooks),
            self.registry,
            observations,
            safety if safety is not None else SafetyConfig(),
            disabled=unsafe_disable_base_motion_safety_filter,
        )
        self.calls = ToolCallRunner(
            self.registry,
            hooks=self.hooks,
            gate=self.gate,
            observations=observations,
            post_execution_wait_s=post_execution_wait_s,
            skill_names=skills.names if skills is not None else (),
            loaded_skill=self.loaded_skill_name,
        )
        self.last_run_dir: Path | None = None
        self._lock = threading.Lock()
        self._active: ActiveTask | None = None

    def loaded_skill_name(self) -> str | None:
        """The name of the skill loaded for the running task, or None."""
        return self.skill_session.loaded_name if self.skill_session is not None else None

    @property
    def busy(self) -> bool:
        with self._lock:
            return self._active is not None

    def run(
        self,
        instruction: str,
        *,
        task_id: str | None = None,
        cancel: CancelToken | None = None,
        session_id: str | None = None,
        new_session: bool = False,
    ) -> Iterator[HarnessEvent]:
        """Start a task; raises ``TaskRejectedError`` now if one is running or the input is bad.

        The returned iterator yields the task's events and ends after ``done``.
        Closing it early ends the task as cancelled.
        """
        if not isinstance(instruction, str) or not instruction.strip():
            raise TaskRejectedError("the instruction is empty")
        task_id = task_id or new_task_id()
        if not isinstance(task_id, str) or not _TASK_ID.fullmatch(task_id) or task_id in {".", ".."}:
            raise TaskRejectedError(f"task id {task_id!r} must match {_TASK_ID.pattern}")
        with self._lock:
            if self._active is not None:
                msg = f"task {self._active.task_id!r} is running; cancel it first (rejected {task_id!r})"
                raise TaskRejectedError(msg)
            runlog = RunLog(self.runs_dir / task_id) if self.runs_dir is not None else None
            if runlog is not None and self.limits.runs_keep > 0:  # retention: harness.runs_keep
                prune_run_folders(runlog.folder.parent, self.limits.runs_keep - 1, spare=runlog.folder)
            _, session_context = self.session.begin_task(session_id=session_id, new_session=new_session)
            active = ActiveTask(task_id, cancel if cancel is not None else CancelToken())
            active.session_context = session_context
            self._active = active
        self.last_run_dir = runlog.folder if runlog is not None else None
        runner = TaskRunner(self, active, instruction, runlog)
        physical = {spec.name for spec in self.registry.specs() if spec.physical}
        recorder = TaskSummaryRecorder(self.session, physical)
        return _EventStream(runner.events(), lambda: self._release(active), observe=recorder)

    def _current_task_id(self) -> str | None:
        with self._lock:
            return self._active.task_id if self._active is not None else None

    def cancel(self, reason: str = "cancelled") -> bool:
        """Cancel the running task (from any thread); False when none is running."""
        with self._lock:
            active = self._active
        if active is None:
            return False
        active.token.cancel(reason)
        return True

    def revise(self, instruction: str) -> str | None:
        """Add an instruction revision; it reaches the model before its next decision.
        None when it was added; else why not (logged, never raised): no task is running,
        empty text, or the task's revision budget is spent (``revision_budget``: a flood of
        revisions would grow every later model request, as they are never compacted)."""
        text = instruction.strip() if isinstance(instruction, str) else ""
        with self._lock:
            active = self._active
        if active is None or not text:
            reason = "no task is running" if text else "empty text"
            logger.warning("instruction revision ignored: %s", reason)
            return reason
        refused = self.revision_budget.admit(active.task_id, text)
        if refused is not None:
            logger.warning("instruction revision refused: %s", refused)
            return refused
        with active.lock:
            active.revisions.append(text)
        return None

    def _release(self, active: ActiveTask) -> None:
        with self._lock:
            if self._active is active:
                self._active = None


def _no_clearance() -> Clearance | None:
    return None


def _with_base_motion_filter(
    hooks: tuple[PreExecutionHook, ...],
    registry: ToolRegistry,
    observations: ObservationSource | None,
    safety: SafetyConfig,
    *,
    disabled: bool,
) -> tuple[PreExecutionHook, ...]:
    """Safe by default: a harness with a base-motion tool always checks clearance.

    The filter goes last, right before execution (approvals may take a while). Without an
    observation source there is no clearance reading, so base motion is blocked.
    """
    has_base_motion = any(spec.base_motion for spec in registry.specs())
    if not has_base_motion or any(isinstance(hook, BaseMotionSafetyFilter) for hook in hooks):
        return hooks
    if disabled:
        logger.warning(
            "UNSAFE: the base-motion safety filter is disabled "
            "(unsafe_disable_base_motion_safety_filter=True): base motion runs without a clearance check"
        )
        return hooks
    read = observations.clearance if observations is not None else _no_clearance
    return (*hooks, BaseMotionSafetyFilter(safety, read))


class _EventStream(Iterator[HarnessEvent]):
    """Frees the harness when the task's events end, the stream is closed, or dropped."""

    def __init__(
        self,
        events: Generator[HarnessEvent, None, None],
        release: Callable[[], None],
        observe: Callable[[HarnessEvent], None] | None = None,
    ) -> None:
        self._events = events
        self._release = release
        self._observe = observe

    def __iter__(self) -> _EventStream:
        return self

    def __next__(self) -> HarnessEvent:
        try:
            event = next(self._events)
        except BaseException:
            self._release()
            raise
        if self._observe is not None:
            try:
                self._observe(event)
            except Exception:  # a summary fault must never end the task
                logger.exception("recording the session summary failed")
        if event.type is EventType.DONE:
            # Everything per-task is finished before ``done``: a new task may start now.
            self._release()
        return event

    def close(self) -> None:
        try:
            self._events.close()
        finally:
            self._release()

    def __del__(self) -> None:
        self.close()
