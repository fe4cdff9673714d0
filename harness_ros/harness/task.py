"""One task: turns from the instruction to a final report or a termination.

Turn = one model decision + at most one tool execution. Before each decision:
pending instruction revisions, the loaded Skill, a Task Notes snapshot when the
notes changed, the newest Observation, and compaction when the context nears
the window. Exactly one ``done`` event ends every task.

The model ends a task with ``finish_task(outcome, summary)``, or with a plain-text
question for the operator (a reply whose last line ends with ``?``). Any other plain-text
reply (a small model echoing the last tool result, a plan, a report without
``finish_task``) does not end it: the model is reminded to call a tool or ``finish_task``
(``harness.text_reply_reminders`` times in a row), then the task fails as a limit. Only
``finish_task``, a question, a limit or a cancel ends a task. Where the evaluator can judge the
task's goal (``evaluate_task``), the harness asks it (a ``verdict`` event with
``scope: task``), then settles the outcome (``settle_outcome``): the ``done`` event
carries ``status`` (how the task ended) and ``outcome`` (``succeeded``, ``failed``,
``unverified``: what it achieved), with the model's ``claim`` and the ``goal_verdict``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from harness_ros.context import (
    Compactor,
    ContextBuilder,
    EntryKind,
    Message,
    observation_message,
    observation_update,
    request_chars_for_window,
    tool_message,
)
from harness_ros.errors import LLMError
from harness_ros.events import (
    CompactionPayload,
    EventPayload,
    HarnessEvent,
    MemoryNoticePayload,
    NotesPayload,
    ObservationPayload,
    Outcome,
    ReminderPayload,
    RevisionPayload,
    TaskStartedPayload,
    TaskStatus,
    ToolCallPayload,
    ToolResultPayload,
    TurnPayload,
    VerdictPayload,
    event_type_of,
    outcome_for_status,
)
from harness_ros.harness.calls import CallOutcome
from harness_ros.harness.guidance import Hold, TaskGuidance, TaskView
from harness_ros.harness.guidance.reminders import reminder_problems, reminder_text, skill_calls_as_loads
from harness_ros.harness.guidance.reminders import with_skill_hints as _with_skill_hints  # noqa: F401 - tests
from harness_ros.harness.observing import resident_context, take_observation
from harness_ros.harness.replies import (
    ECHO_REPLY_NOTE,
    EMPTY_REPLY_NOTE,
    assistant_message,
    is_operator_question,
    preview,
    reply_data,
    with_ids,
)
from harness_ros.harness.task_state import ActiveTask, TaskEnd, consolidate, remember
from harness_ros.model.contracts import ModelReply, ToolCall, Usage, count_images, profile_of
from harness_ros.model.markers import cut_harness_echo
from harness_ros.observation.contracts import Observation
from harness_ros.skills.contracts import LOAD_SKILL_RESOURCE
from harness_ros.tools import failure
from harness_ros.tools.finish_task import FINISH_TASK, settle_outcome
from harness_ros.trajectory import TrajectoryFold, TrajectoryStep

if TYPE_CHECKING:
    from harness_ros.harness.contracts import TaskHost
    from harness_ros.harness.runlog import RunLog

__all__ = ["ActiveTask", "TaskRunner", "is_operator_question"]

logger = logging.getLogger(__name__)

MAX_MALFORMED_IN_A_ROW = 3
"""Consecutive malformed decisions (bad tool call, empty reply) before the task aborts."""
KEEP_EXCHANGES = 2
"""Exchanges (assistant message + its tool results) compaction keeps verbatim."""


class TaskRunner:
    def __init__(
        self, harness: TaskHost, active: ActiveTask, instruction: str, runlog: RunLog | None
    ) -> None:
        self._h = harness
        self._profile = profile_of(harness.model)
        """``model.profile``, resolved when the model was built: what the guidance reads."""
        self._active = active
        self._instruction = instruction.strip()
        self._runlog = runlog
        self._turn = 0
        self._started = time.monotonic()
        self._deadline = self._started + harness.limits.task_timeout_s
        self._malformed = 0
        self._text_replies = 0
        """Plain-text replies in a row (each got a reminder)."""
        self._calls_as_text = False
        """Whether this task's model has written its calls as text (a small local model)."""
        self._fold = TrajectoryFold(active.task_id)
        """Every emitted event folded: ``trajectory.json`` is written from it, and memory's
        Task Notes get its steps, so both are the fold of ``events.jsonl``."""
        self._new_step: TrajectoryStep | None = None
        """The step the last emitted event added to the trajectory."""
        self._builder: ContextBuilder | None = None
        self._timer: threading.Timer | None = None
        self._finished = False
        self._revisions: list[str] = []
        self._acting = False
        self._guidance = TaskGuidance()
        """The small-model guidance (``harness.guidance``): its parts and this task's holds."""
        self._shown_observation: str | None = None
        """The text of the last observation kept in a text-only model's history."""
        self._tokens = dict.fromkeys(Usage().to_dict(), 0)
        """Decision tokens summed over the task's turns (the done event's ``tokens``)."""

    # ------------------------------------------------------------------ events
    def _emit(self, payload: EventPayload) -> HarnessEvent:
        turn = self._turn or None
        event = HarnessEvent(event_type_of(payload), self._active.task_id, turn=turn, payload=payload)
        if self._runlog is not None:
            self._runlog.write_event(event)
        self._new_step = self._fold.feed_event(event)
        return event

    def events(self) -> Generator[HarnessEvent, None, None]:
        end: TaskEnd | None = None
        try:
            yield self._start()
            yield from self._memory_notices()
            end = yield from self._turns()
        except GeneratorExit:
            # The consumer stopped reading: stop the running tool (a goal must not go on
            # unwatched), then finish quietly (no more yields possible).
            self._active.token.cancel("the event consumer closed the task")
            self._finish(TaskEnd(TaskStatus.CANCELLED, "the event consumer closed the task"))
            raise
        except Exception as err:  # a harness fault ends the task, never the caller
            logger.exception("task %s failed inside the harness", self._active.task_id)
            end = TaskEnd(TaskStatus.ABORTED, f"internal error: {type(err).__name__}: {err}")
        finally:
            self._stop_timer()
        if end is not None:
            yield from self._finish(end)

    # ------------------------------------------------------------------ start
    def _start(self) -> HarnessEvent:
        h = self._h
        self._started = time.monotonic()
        self._deadline = self._started + h.limits.task_timeout_s
        if h.memory is not None:
            h.memory.start_task(self._instruction, task_id=self._active.task_id)
        names = h.registry.names()
        resident = resident_context(h, names)
        self._builder = ContextBuilder(resident, skill_in_history=self._profile.skill_in_history)
        self._builder.history.add_instruction(self._instruction, session=self._active.session_context)
        self._timer = threading.Timer(h.limits.task_timeout_s, self._on_deadline)
        self._timer.daemon = True
        self._timer.start()
        return self._emit(
            TaskStartedPayload(
                instruction=self._instruction,
                model=getattr(h.model, "name", ""),
                tools=tuple(names),
                max_turns=h.limits.max_turns,
                task_timeout_s=h.limits.task_timeout_s,
                run_dir=str(self._runlog.folder) if self._runlog is not None else None,
                memory_dir=str(h.memory.root) if h.memory is not None else None,
            )
        )

    def _memory_notices(self) -> Iterator[HarnessEvent]:
        """What memory could not give the model in full at start (never silent)."""
        if self._h.memory is not None:
            for notice in self._h.memory.take_notices():
                yield self._emit(MemoryNoticePayload.from_data(notice))

    def _on_deadline(self) -> None:
        self._active.timed_out = True
        self._active.token.cancel(f"task wall-time limit of {self._h.limits.task_timeout_s:g} s reached")

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    # ------------------------------------------------------------------ turns
    def _interrupted(self) -> TaskEnd | None:
        token = self._active.token
        if self._active.timed_out or time.monotonic() >= self._deadline:
            limit = self._h.limits.task_timeout_s
            return TaskEnd(TaskStatus.FAILED, f"task wall-time limit of {limit:g} s reached")
        if token.cancelled:
            return TaskEnd(TaskStatus.CANCELLED, token.reason or "cancelled")
        return None

    def _turns(self) -> Generator[HarnessEvent, None, TaskEnd]:
        builder = self._builder
        assert builder is not None
        while True:
            end = self._interrupted()
            if end is not None:
                return end
            if self._turn >= self._h.limits.max_turns:
                limit = self._h.limits.max_turns
                return TaskEnd(
                    TaskStatus.FAILED, f"turn limit of {limit} turns reached without a final report"
                )
            self._turn += 1
            yield self._emit(TurnPayload(elapsed_s=round(time.monotonic() - self._started, 3)))
            yield from self._prepare(builder)
            observation, obs_message = yield from self._observe()
            yield from self._maybe_compact(builder, obs_message)
            end = self._interrupted()
            if end is not None:
                return end
            messages = builder.messages(self._kept_observation(builder, obs_message))
            focus = self._guidance.before_decision(self._view())
            if focus is not None:
                messages.append(focus.message())
            try:
                reply = self._h.model.complete(messages, tools=builder.tools())
            except LLMError as err:
                return TaskEnd(TaskStatus.FAILED, f"model provider failed: {err}")
            except Exception as err:  # an adapter fault is a provider failure, reported cleanly
                logger.exception("model call raised")
                return TaskEnd(TaskStatus.FAILED, f"model call raised {type(err).__name__}: {err}")
            data = reply_data(reply, images=count_images(messages))
            for key, value in data.usage.items():
                self._tokens[key] = self._tokens.get(key, 0) + value
            yield self._emit(data)
            end = yield from self._handle_reply(builder, reply, observation)
            if end is not None:
                return end

    def _prepare(self, builder: ContextBuilder) -> Iterator[HarnessEvent]:
        h = self._h
        for text in self._active.take_revisions():
            builder.history.add_revision(text)
            self._revisions.append(text)
            if h.memory is not None:
                h.memory.add_revision(text)
            yield self._emit(RevisionPayload(instruction=text))
        if h.skill_session is not None:
            # A loaded skill joins the Resident context (the prefix changes once, then is stable),
            # and with it the resource tool when it lists resources: the same one change.
            session = h.skill_session
            builder.set_loaded_skill(session.render_loaded())
            builder.withhold(() if session.offers_resources else (LOAD_SKILL_RESOURCE,))
        if h.memory is not None:
            yield from self._show_task_notes(builder)

    def _show_task_notes(self, builder: ContextBuilder) -> Iterator[HarnessEvent]:
        assert self._h.memory is not None
        snapshot = self._h.memory.task_notes_snapshot_if_changed()
        if snapshot is not None:
            builder.history.add_notes(snapshot.text, update=snapshot.update)
            yield self._emit(
                NotesPayload(task_notes=snapshot.text, chars=len(snapshot.text), update=snapshot.update)
            )

    def _observe(self) -> Generator[HarnessEvent, None, tuple[Observation | None, Message | None]]:
        observation, data = take_observation(self._h, self._turn, self._runlog)
        if observation is None:
            return None, None
        yield self._emit(ObservationPayload.from_data(data))
        return observation, observation_message(observation, images=self._h.model_vision)

    def _kept_observation(self, builder: ContextBuilder, obs_message: Message | None) -> Message | None:
        """The observation to send last, or None when it went into the history.

        A model that takes no images keeps its observations in its history, each one only
        what changed since the last (``observation_update``): they are then part of the
        cached prefix. With the newest one replaced at the end of every request, its 149
        tokens were new text at every decision of the 1.5B (BENCHMARKS.md section 8).
        Images are never kept: an image model is sent only the newest observation."""
        if obs_message is None or self._h.model_vision:
            return obs_message
        text = "\n".join(str(part.get("text", "")) for part in obs_message["content"])
        builder.history.add_observation(observation_update(self._shown_observation, text))
        self._shown_observation = text
        return None

    def _maybe_compact(self, builder: ContextBuilder, obs_message: Message | None) -> Iterator[HarnessEvent]:
        h = self._h
        threshold = int(h.limits.compaction_ratio * h.context_window_tokens)
        if builder.estimate_tokens(obs_message) <= threshold:
            return
        compactor = Compactor(
            h.model,
            keep_exchanges=KEEP_EXCHANGES,
            max_request_chars=request_chars_for_window(h.context_window_tokens),
        )
        outcome = compactor.compact(builder.history, measure=lambda: builder.estimate_tokens(obs_message))
        if outcome.compacted or outcome.error:
            yield self._emit(
                CompactionPayload.from_data({**outcome.to_dict(), "threshold_tokens": threshold})
            )
        if not outcome.compacted:
            return
        self._shown_observation = None  # the earlier ones are gone: the next is whole
        if h.memory is not None:
            # The snapshots after the first hold only changes; the checkpoint summarised the
            # earlier ones, so the model is shown the notes whole once more.
            h.memory.show_whole_task_notes()
            yield from self._show_task_notes(builder)

    # ------------------------------------------------------------------ decisions
    def _handle_reply(
        self, builder: ContextBuilder, reply: ModelReply, observation: Observation | None
    ) -> Generator[HarnessEvent, None, TaskEnd | None]:
        # A copy of the harness's own blocks (Task Notes, an observation) is not the model's
        # text: it never ends a task, is never stored as the model's words, and is never
        # shown back to the model as if it had written it.
        skills = self._h.skills.names if self._h.skills is not None else ()
        reply = skill_calls_as_loads(reply, skills, self._h.skill_session, self._h.registry)
        own_text, echoed = cut_harness_echo(reply.text)
        text = (own_text or "").strip()
        if not reply.tool_calls:
            if text and is_operator_question(text):
                return (yield from self._complete(None, text, "operator_question"))
            if text:
                return (yield from self._remind(builder, reply, text))
            note = self._guidance.on_note(self._view(), EMPTY_REPLY_NOTE if not echoed else ECHO_REPLY_NOTE)
            builder.history.add(EntryKind.HARNESS, {"role": "user", "content": note})
            return self._count_malformed(
                "the model's reply only repeated the harness's text"
                if echoed
                else "the model replied with neither a tool call nor a report"
            )
        self._text_replies = 0
        self._calls_as_text = self._calls_as_text or any(c.recovered_from_text for c in reply.tool_calls)
        calls = with_ids(reply.tool_calls, self._turn)
        builder.history.add_assistant(assistant_message(own_text, calls))
        first, rest = calls[0], calls[1:]
        if first.name == FINISH_TASK and self._h.calls.check(first) is None:
            assert first.arguments is not None  # checked
            held = self._guidance.before_finish(self._view(), first)
            if held is not None:
                yield from self._hold(builder, first, held, rest)
                return None
            yield from self._refuse_later_calls(
                None, rest, lambda _: f"not executed: the task ended with {FINISH_TASK}"
            )
            claim = str(first.arguments["outcome"])
            summary = str(first.arguments["summary"]).strip()
            return (yield from self._complete(claim, summary, FINISH_TASK))
        if not self._acting and self._h.memory is not None:
            self._acting = True
            self._h.memory.set_phase("acting")
        held = self._guidance.before_call(self._view(), first)
        if held is not None:
            yield from self._hold(builder, first, held, rest)
            return None
        outcome: CallOutcome = yield from self._h.calls.run(
            first,
            cancel=self._active.token,
            observation=observation,
            emit=self._emit,
            stop_by=self._deadline,
        )
        result_event = self._emit(
            ToolResultPayload(
                tool=first.name,
                call_id=first.id,
                result=outcome.content,
                malformed=outcome.malformed,
                elapsed_s=outcome.elapsed_s,
                executed=outcome.executed,
                refusal=outcome.refusal,
                recovered_from_text=True if first.recovered_from_text else None,
            )
        )
        remember(self._h.memory, self._new_step)
        yield result_event
        builder.history.add_tool(tool_message(first.id, outcome.content))
        yield from self._refuse_later_calls(
            builder,
            rest,
            lambda extra: (
                f"one tool call per turn: only {first.name!r} was executed; call {extra.name!r} "
                "again in a later turn if it is still needed"
            ),
        )
        if outcome.cancelled:
            return self._interrupted() or TaskEnd(TaskStatus.CANCELLED, "cancelled")
        if outcome.malformed:
            return self._count_malformed(str(outcome.content.get("reason", "")))
        self._malformed = 0
        return None

    def _hold(
        self, builder: ContextBuilder, call: ToolCall, hold: Hold, rest: Sequence[ToolCall]
    ) -> Iterator[HarnessEvent]:
        """Answer a call the guidance held (with the step to take first, or a held
        ``finish_task`` with what the last robot call did); the robot does nothing."""
        assert call.arguments is not None  # checked by the caller
        yield self._emit(ToolCallPayload(tool=call.name, call_id=call.id, arguments=dict(call.arguments)))
        held = failure(hold.answer)
        result_event = self._emit(
            ToolResultPayload(
                tool=call.name,
                call_id=call.id,
                result=held,
                executed=False,
                refusal=hold.refusal,
                recovered_from_text=True if call.recovered_from_text else None,
            )
        )
        remember(self._h.memory, self._new_step)
        yield result_event
        builder.history.add_tool(tool_message(call.id, held))
        yield from self._refuse_later_calls(
            builder,
            rest,
            lambda extra: (
                f"one tool call per turn: {call.name!r} was answered first; call {extra.name!r} "
                "again in a later turn if it is still needed"
            ),
        )

    def _refuse_later_calls(
        self, builder: ContextBuilder | None, rest: Sequence[ToolCall], reason: Callable[[ToolCall], str]
    ) -> Iterator[HarnessEvent]:
        """Refuse the calls after a reply's first (one call per turn); each refusal is shown to
        the model as its call's result unless the task is ending (builder None)."""
        for extra in rest:
            refused = failure(reason(extra))
            yield self._emit(
                ToolResultPayload(tool=extra.name, call_id=extra.id, result=refused, refused=True)
            )
            if builder is not None:
                builder.history.add_tool(tool_message(extra.id, refused))

    def _remind(
        self, builder: ContextBuilder, reply: ModelReply, text: str
    ) -> Generator[HarnessEvent, None, TaskEnd | None]:
        """A plain-text reply: remind the model to act, or end the task once reminders run out."""
        limit = self._h.limits.text_reply_reminders
        self._text_replies += 1
        if self._text_replies > limit:
            return TaskEnd(
                TaskStatus.FAILED,
                f"the model replied with plain text {self._text_replies} times in a row without "
                f"calling a tool or {FINISH_TASK} (harness.text_reply_reminders is {limit}); "
                f"last reply: {preview(text)!r}",
                report=text,
            )
        skills = self._h.skills.names if self._h.skills is not None else ()
        offered = [str(d["function"]["name"]) for d in builder.tools() or []]
        problems = reminder_problems(reply.text_call_problems, text, skills, self._h.skill_session, offered)
        note = reminder_text(
            problems, self._text_replies, limit, call_format=offered if self._calls_as_text else None
        )
        note = self._guidance.on_note(self._view(), note)
        # The prose itself stays out of the history (the events and the run log keep it):
        # decoding greedily, the 1.5B answered each reminder with a copy of its previous
        # reply, the same sentence three times; without it in view, the same request got a
        # call (measured on the reply after a failed pick, docs/local-model.md).
        builder.history.add(EntryKind.HARNESS, {"role": "user", "content": note})
        yield self._emit(
            ReminderPayload(
                reminder=self._text_replies,
                limit=limit,
                reply=preview(text),
                text_call_problems=tuple(str(problem) for problem in reply.text_call_problems),
            )
        )
        return None

    def _complete(
        self, claim: str | None, report: str, finished_by: str
    ) -> Generator[HarnessEvent, None, TaskEnd]:
        """The task ended normally: check the goal where an evaluator can, settle the outcome."""
        end = self._interrupted()
        if end is not None:
            return end
        goal_verdict: dict[str, Any] | None = None
        gate = self._h.gate
        if claim != "failed" and gate is not None and gate.judges_tasks:
            if self._h.memory is not None:
                self._h.memory.set_phase("evaluating")
            observation = self._h.calls.post_execution_observation()
            verdict = gate.judge_task(
                self._instruction,
                [*self._revisions, *self._clarifications()],
                self._active.task_id,
                observation,
            )
            if verdict is not None:
                goal_verdict = verdict.to_dict()
                yield self._emit(
                    VerdictPayload(scope="task", goal=self._goal(), claim=claim, verdict=goal_verdict)
                )
        outcome = settle_outcome(claim, goal_verdict.get("status") if goal_verdict else None)
        return TaskEnd(
            TaskStatus.COMPLETED,
            report=report,
            outcome=outcome,
            claim=claim,
            goal_verdict=goal_verdict,
            finished_by=finished_by,
        )

    def _clarifications(self) -> list[str]:
        """The operator's answers to ``ask_operator``, each read with the goal it clarifies
        ("The red cup." + "Fetch a cup ... on the coffee table"), newest last: the goal check
        then judges what the operator chose, not the ambiguous instruction alone."""
        goal = self._goal()
        return [f"{answer} {goal}" for answer in self._fold.trajectory.operator_answers()]

    def _goal(self) -> str:
        """The goal the task is judged against: the newest revision, else the instruction."""
        return self._revisions[-1].strip() if self._revisions else self._instruction

    def _view(self) -> TaskView:
        """What the guidance sees of this task now."""
        memory = self._h.memory
        return TaskView(
            profile=self._profile,
            steps=tuple(self._fold.trajectory.steps),
            registry=self._h.registry,
            check=self._h.calls.check,
            ledger=memory.failure_lessons if memory is not None else None,
            skills=self._h.skill_session,
            holds=tuple(self._guidance.holds),
        )

    def _count_malformed(self, reason: str) -> TaskEnd | None:
        self._malformed += 1
        if self._malformed >= MAX_MALFORMED_IN_A_ROW:
            return TaskEnd(
                TaskStatus.ABORTED,
                f"{self._malformed} malformed decisions in a row; last: {reason}",
            )
        return None

    # ------------------------------------------------------------------ end

    def _finish(self, end: TaskEnd) -> Iterator[HarnessEvent]:
        """Expire per-task state and report; runs at most once. The memory and done
        events are yielded when the consumer is still reading, and always logged."""
        if self._finished:
            return iter(())
        self._finished = True
        h = self._h
        memory_status = "completed" if end.status is TaskStatus.COMPLETED else "aborted"
        outcome = end.outcome or outcome_for_status(end.status) or Outcome.UNVERIFIED
        events: list[HarnessEvent] = []
        if h.memory is not None:
            try:
                h.memory.set_phase("finishing")
            except Exception:  # the run log must still be written
                logger.exception("cannot set the memory phase")
        events.append(self._emit(consolidate(h.memory, h.registry.names(), memory_status, outcome)))
        if h.skill_session is not None:
            h.skill_session.reset()
        if h.gate is not None:
            h.gate.reset()
        report = end.report or (f"Task {end.status.value}: {end.reason}" if end.reason else "")
        elapsed = round(time.monotonic() - self._started, 3)
        done = self._emit(end.payload(outcome, report, self._turn, elapsed, self._tokens))
        events.append(done)
        if self._runlog is not None:
            # Written after done: the fold has every event, status and outcome included.
            self._runlog.write_trajectory(self._fold.trajectory)
            self._runlog.write_report(
                task_id=self._active.task_id,
                instruction=self._instruction,
                status=end.status.value,
                reason=end.reason,
                report=report,
                outcome=outcome.value,
                claim=end.claim,
                goal_verdict=end.goal_verdict,
                revisions=self._revisions,
            )
            self._runlog.close()
        return iter(events)
