"""One tool call, from the model's request to the result the model reads back.

Order: argument checks -> the server wait -> the tool's prerequisites (service calls
the harness makes itself, each a ``prerequisite`` event) -> pre-execution hooks ->
cancellation check -> execution (feedback streamed as events) -> run_id rule and
evaluation -> compact result.
Every refusal is a failure envelope the model can recover from, never an exception.
A call refused before it ran carries ``refusal`` (its kind, ``REFUSAL_KINDS``): memory
records it as a refusal, never as evidence that the tool failed on the robot. A tool
that refuses on its own, before acting (arguments it cannot map onto a goal, a server
that is not up), says so with ``failure(reason, refusal=<kind>)``.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

from harness_ros.context import compact_value
from harness_ros.evaluation import EvaluationGate, Verdict, VerdictStatus
from harness_ros.events import (
    EventPayload,
    HarnessEvent,
    PrerequisitePayload,
    SafetyPayload,
    ToolCallPayload,
    ToolFeedbackPayload,
    VerdictPayload,
)
from harness_ros.hooks import HookAction, HookDecision, PreExecutionHook, blocking_decision, run_hooks
from harness_ros.model.contracts import ToolCall
from harness_ros.observation.contracts import Observation, ObservationSource
from harness_ros.skills.contracts import LOAD_SKILL
from harness_ros.tools import CancelToken, ToolRegistry, ToolSpec, failure, normalize_envelope

__all__ = ["REFUSAL_KINDS", "CallOutcome", "ToolCallRunner", "skill_hint"]

logger = logging.getLogger(__name__)

EmitFn = Callable[[EventPayload], HarnessEvent]
"""``emit(payload)`` -> the HarnessEvent to yield."""

_STOP_GRACE_S = 5.0


_Job = tuple[Callable[[], None], Callable[[], None]]
"""A tool call to run and what to do once the thread is free again."""


class _ToolThread:
    """A daemon thread that runs one tool call at a time and is kept between calls.

    Starting a thread for every call cost about a millisecond a turn (the start
    handshake waits for the new thread to be scheduled). A thread whose tool was
    abandoned is retired: it ends when that tool returns, and the next call gets a
    new one, so a hung tool never delays another.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.busy = False
        threading.Thread(target=self._serve, name="harness-tool", daemon=True).start()

    def submit(self, job: Callable[[], None], done: Callable[[], None]) -> None:
        """Run ``job``, then ``done`` (after the thread is free again, so the next call
        that ``done`` lets through finds it idle)."""
        self.busy = True
        self._jobs.put((job, done))

    def retire(self) -> None:
        self._jobs.put(None)

    def _serve(self) -> None:
        while (item := self._jobs.get()) is not None:
            job, done = item
            try:
                job()
            finally:
                self.busy = False
                done()


"""How long a cancelled tool may take to return before the harness stops waiting."""
_FEEDBACK_MIN_INTERVAL_S = 0.2

REFUSAL_KINDS = (
    "unknown_tool",
    "invalid_arguments",
    "server_unavailable",
    "blocked",
    "rewritten_invalid",
    "cancelled_before_execution",
    "held_by_experience",
    "held_finish",
    "prerequisite_failed",
)
"""Why a call did not run: argument validation, a hook's block (safety filter, approval
denied), a missing server, a hook's rewrite that no longer validates, a cancellation, the
tool's own experience ledger (a step to take before its first call in a task was not
taken: the call is answered with that step once, and runs when made again), or a
``finish_task`` giving up right after a robot call refused for its arguments or one that
succeeded (answered once a task with what that call did; called again, it ends the task),
or a prerequisite of the tool (a mode switch the harness makes first) that failed."""


@dataclass(frozen=True)
class CallOutcome:
    """What the model gets back (``content``) and what memory records."""

    content: dict[str, Any]
    arguments: dict[str, Any] | None
    malformed: bool = False
    executed: bool = False
    cancelled: bool = False
    verdict: Verdict | None = None
    elapsed_s: float | None = None
    refusal: str | None = None
    """One of ``REFUSAL_KINDS`` when the call was refused before it ran, else None."""


def skill_hint(name: str, skill_names: Sequence[str], loaded: str | None = None) -> str | None:
    """What to say when a model calls a skill by name as if it were a tool.

    Small models do this (the 1.5B called ``recover_failed_grasp`` after a failed pick,
    from the Skill Catalog's ``recover-failed-grasp``): the refusal then names the tool
    that reads the skill instead of leaving the model to guess again. The skill already
    ``loaded`` is not offered again: read as a load, the 1.5B called it ten times in a row,
    each answered "already loaded"."""
    skill = skill_named(name, skill_names)
    if skill is None:
        return None
    if skill == loaded:
        return (
            f"{name!r} is the loaded skill, not a tool: its instructions are in your context; "
            "call a tool it names"
        )
    return f"{name!r} is a skill, not a tool: call {LOAD_SKILL} with name {skill!r} to read it"


def skill_named(name: str, skill_names: Sequence[str]) -> str | None:
    """The skill ``name`` means (``recover_failed_grasp`` is ``recover-failed-grasp``), or None."""
    key = name.strip().lower().replace("_", "-")
    return next((skill for skill in skill_names if skill.lower() == key), None)


class ToolCallRunner:
    """Runs tool calls for one harness; stateless between calls except the gate."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        hooks: Sequence[PreExecutionHook],
        gate: EvaluationGate | None,
        observations: ObservationSource | None,
        post_execution_wait_s: float,
        skill_names: Sequence[str] = (),
        loaded_skill: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._registry = registry
        self._loaded_skill = loaded_skill
        self._tool_thread: _ToolThread | None = None
        self._tool_thread_lock = threading.Lock()
        self._skill_names = tuple(skill_names)
        self._hooks = tuple(hooks)
        self._gate = gate
        self._observations = observations
        self._post_execution_wait_s = post_execution_wait_s

    def check(self, call: ToolCall) -> str | None:
        """Why the call is malformed (for the model), or None."""
        if self._registry.get(call.name) is None:
            known = ", ".join(self._registry.names()) or "none"
            hint = skill_hint(call.name, self._skill_names, self._loaded_skill())
            return f"unknown tool {call.name!r}; known tools: {known}" + (f"; {hint}" if hint else "")
        if call.arguments is None:
            snippet = call.arguments_json[:200]
            return f"arguments of {call.name!r} are not a JSON object: {snippet!r}"
        return self._registry.validate(call.name, call.arguments)

    def run(
        self,
        call: ToolCall,
        *,
        cancel: CancelToken,
        observation: Observation | None,
        emit: EmitFn,
        stop_by: float,
    ) -> Generator[Any, None, CallOutcome]:
        """Yields events; returns the outcome. ``stop_by`` is a ``time.monotonic()`` bound."""
        problem = self.check(call)
        if problem is not None:
            kind = "unknown_tool" if self._registry.get(call.name) is None else "invalid_arguments"
            return CallOutcome(failure(problem), call.arguments, malformed=True, refusal=kind)
        tool = self._registry.get(call.name)
        assert tool is not None and call.arguments is not None  # checked above
        spec = tool.spec
        arguments = dict(call.arguments)
        yield emit(ToolCallPayload(tool=spec.name, call_id=call.id, arguments=arguments))

        # A tool whose server may be slow to appear waits for it here, before the hooks:
        # the base-motion filter's clearance reading must be the last thing before the goal.
        wait_until_ready = getattr(tool, "wait_until_ready", None)
        if wait_until_ready is not None:
            problem = wait_until_ready(cancel)
            if problem is not None:
                return CallOutcome(failure(problem), arguments, refusal="server_unavailable")

        # Prerequisites (a robot mode switch) come before the hooks, so the base-motion
        # filter's clearance reading stays the last thing before the goal.
        for prerequisite in getattr(tool, "prerequisites", ()):
            refused = yield from self._prerequisite(spec, call.id, prerequisite, cancel, emit)
            if refused is not None:
                return CallOutcome(refused, arguments, refusal="prerequisite_failed")

        arguments, decisions = run_hooks(self._hooks, spec, arguments, observation)
        for decision in decisions:
            yield emit(_decision_payload(spec, decision))
        blocked = blocking_decision(decisions)
        if blocked is not None:
            reason = blocked.reason or f"blocked by {blocked.hook or 'a safety hook'}"
            return CallOutcome(failure(reason, blocked_by=blocked.hook), arguments, refusal="blocked")
        problem = self._registry.validate(spec.name, arguments)
        if problem is not None:  # a hook rewrote the call into something invalid: fail closed
            refused = failure(f"rewritten call refused: {problem}")
            return CallOutcome(refused, arguments, refusal="rewritten_invalid")

        if cancel.cancelled:
            reason = f"not executed: {cancel.reason or 'cancelled'}"
            return CallOutcome(
                failure(reason), arguments, cancelled=True, refusal="cancelled_before_execution"
            )
        started = time.monotonic()
        result = yield from self._execute(spec, arguments, cancel=cancel, emit=emit, stop_by=stop_by)
        elapsed = round(time.monotonic() - started, 3)

        verdict: Verdict | None = None
        # A cancelled task ends now: waiting for a post-execution observation would only delay it.
        if spec.evaluated and result.get("success") is True and not cancel.cancelled:
            run_id = result.get("run_id")
            if not isinstance(run_id, str) or not run_id.strip():
                result = failure(
                    f"tool {spec.name!r} reported success without a run_id, so it cannot be evaluated"
                )
            elif self._gate is not None:
                verdict = self._evaluate(spec, run_id, arguments, tool)
                yield emit(VerdictPayload(tool=spec.name, run_id=run_id, verdict=verdict.to_dict()))
        content = compact_value(result)
        if verdict is not None:
            if verdict.status is VerdictStatus.FAILURE:
                reported = {k: v for k, v in content.items() if k != "success"}
                content = failure(
                    f"post-condition not met: {verdict.failure_reason or 'evaluator reported failure'}",
                    run_id=verdict.run_id,
                    tool_reported=reported,
                )
            content["verdict"] = verdict.to_dict()
        refusal = result.get("refusal") if result.get("success") is False else None
        if refusal not in REFUSAL_KINDS:
            refusal = None
        return CallOutcome(
            content, arguments, executed=refusal is None, verdict=verdict, elapsed_s=elapsed, refusal=refusal
        )

    def _prerequisite(
        self, spec: ToolSpec, call_id: str, prerequisite: Any, cancel: CancelToken, emit: EmitFn
    ) -> Generator[Any, None, dict[str, Any] | None]:
        """Make one prerequisite call (``prerequisite.run(cancel)``, an envelope; it names
        its ``service``), record it as an event; a failure envelope when it failed."""
        service = str(getattr(prerequisite, "service", "") or "a prerequisite service")
        started = time.monotonic()
        try:
            envelope = normalize_envelope(prerequisite.run(cancel))
        except Exception as err:  # a prerequisite should not raise; fail the call anyway
            logger.exception("prerequisite %r of %r raised", service, spec.name)
            envelope = failure(f"{type(err).__name__}: {err}")
        ok = envelope["success"] is True
        reply = envelope.get("result")
        message = reply.get("message") if isinstance(reply, dict) else None
        reason = None if ok else compact_value(envelope["reason"])
        yield emit(
            PrerequisitePayload(
                tool=spec.name,
                call_id=call_id,
                service=service,
                success=ok,
                elapsed_s=round(time.monotonic() - started, 3),
                reason=reason,
                message=compact_value(message.strip())
                if ok and isinstance(message, str) and message.strip()
                else None,
            )
        )
        if ok:
            return None
        return failure(
            f"prerequisite call to service {service!r} failed, so {spec.name!r} was not executed: {reason}",
            prerequisite=service,
        )

    def _evaluate(self, spec: ToolSpec, run_id: str, arguments: dict[str, Any], tool: Any) -> Verdict:
        assert self._gate is not None
        ended_at = time.monotonic()  # an arm pose measured before this is no evidence
        observation = self.post_execution_observation()
        # What was asked, in robot terms: the binding computes it from the arguments alone.
        requested_pose = None
        requested = getattr(tool, "requested_pose", None)
        if callable(requested):
            try:
                requested_pose = requested(arguments)
            except Exception:  # no requested pose: a pose check then fails closed
                logger.exception("requested pose of %r failed", spec.name)
        return self._gate.judge(
            spec, run_id, observation, arguments=arguments, requested_pose=requested_pose, ended_at=ended_at
        )

    def post_execution_observation(self) -> Observation:
        """A fresh observation (waiting up to ``post_execution_wait_s``) for an evaluator."""
        source = self._observations
        if source is None:
            return Observation(time=time.time(), notes=("no observation source is configured",))
        try:
            return source.observe_after(source.now(), self._post_execution_wait_s)
        except Exception as err:  # the evaluator then judges on what it has (fail closed)
            logger.exception("post-execution observation failed")
            return Observation(time=time.time(), notes=(f"post-execution observation failed: {err}",))

    def _idle_tool_thread(self) -> _ToolThread:
        with self._tool_thread_lock:
            thread = self._tool_thread
            if thread is None or thread.busy:
                if thread is not None:
                    thread.retire()  # still running an abandoned tool: it ends after that
                thread = self._tool_thread = _ToolThread()
            return thread

    def _execute(
        self, spec: ToolSpec, arguments: dict[str, Any], *, cancel: CancelToken, emit: EmitFn, stop_by: float
    ) -> Generator[Any, None, dict[str, Any]]:
        # The tool runs in its own thread so its feedback can be yielded as events
        # while it works, and so a tool that ignores cancellation cannot hold the task.
        updates: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        box: dict[str, dict[str, Any]] = {}

        def sink(tool: str, feedback: dict[str, Any]) -> None:
            updates.put(dict(feedback))

        def work() -> None:
            try:
                box["result"] = self._registry.execute(spec.name, arguments, cancel=cancel, feedback=sink)
            except Exception as err:  # the registry should not raise; be safe anyway
                logger.exception("tool %r raised", spec.name)
                box["result"] = failure(f"tool {spec.name!r} raised {type(err).__name__}: {err}")

        worker = self._idle_tool_thread()
        worker.submit(work, lambda: updates.put(None))
        last_feedback = 0.0
        give_up: float | None = None
        while True:
            now = time.monotonic()
            if give_up is None and (cancel.cancelled or now >= stop_by):
                if not cancel.cancelled:
                    cancel.cancel(f"tool {spec.name!r} ran past the task wall time")
                give_up = now + _STOP_GRACE_S
            if give_up is not None and now >= give_up:
                logger.error("tool %r did not return after cancellation; abandoning it", spec.name)
                worker.retire()
                return failure(f"tool {spec.name!r} did not return after cancellation ({cancel.reason})")
            try:
                # A short poll: an operator cancel must start the grace period even when
                # the tool ignores its CancelToken and sends no feedback.
                item = updates.get(timeout=0.1)
            except queue.Empty:
                continue
            if item is None:
                break
            if now - last_feedback >= _FEEDBACK_MIN_INTERVAL_S:
                last_feedback = now
                yield emit(ToolFeedbackPayload(tool=spec.name, feedback=compact_value(item)))
        return normalize_envelope(box.get("result"))


def _decision_payload(spec: ToolSpec, decision: HookDecision) -> SafetyPayload:
    rewrite = decision.action is HookAction.REWRITE
    return SafetyPayload(
        tool=spec.name,
        hook=decision.hook,
        action=decision.action.value,
        reason=decision.reason,
        arguments=decision.arguments if rewrite else None,
    )
