"""Tools bound to the robot's ROS actions and services.

A tool is built from a ``ToolBinding``: the interface type is imported from its type
string, the model-facing schema is derived from the Goal/Request (unless the binding
gives one), arguments become the goal, and the result becomes the envelope.

Threading: the node's executor spins in another thread; ``execute`` runs in the
harness worker thread and never spins. It sends with ``*_async``, and waits on
``threading.Event``s set by done callbacks, always with a deadline, polling the
CancelToken between short waits.

Honesty rules: success is reported only when the server confirmed it (action status
SUCCEEDED, and the result's success field true when it has one). The goal status
decides: an error code only explains a failure and never turns a SUCCEEDED goal into
one (Nav2 from Kilted on reports a recovery's code on a navigation that succeeded). A
timeout or an operator cancel cancels the goal and says whether the server confirmed
the cancel.

Goal ids are made here, not by rclpy, so a goal whose acceptance never arrives (a
SIGKILLed server still in the graph until its lease expires, or a lost response) can
still be cancelled by id after ``accept_timeout_s``, and the failure names its run_id.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any

from action_msgs.msg import GoalStatus
from action_msgs.srv import CancelGoal
from rclpy.action.client import ActionClient, ClientGoalHandle
from rosidl_parser.definition import AbstractString, BasicType
from unique_identifier_msgs.msg import UUID

from harness_ros.config import ToolBinding, ToolPrerequisite
from harness_ros.errors import ToolError
from harness_ros.evaluation.arm_pose import ArmPose, requested_arm_pose_from_goal
from harness_ros.evaluation.evidence import Pose2D, requested_pose_from_goal
from harness_ros.ros.distros import constants_of
from harness_ros.ros.interfaces import (
    FieldError,
    distro_advice,
    field_type,
    fill_message,
    fit_to_installed,
    get_field,
    import_interface,
    message_to_jsonable,
    to_jsonable,
    tool_spec,
)
from harness_ros.tools.binding import BindingError, check_binding_shape
from harness_ros.tools.contracts import CancelToken, FeedbackSink, Tool, failure, success

if TYPE_CHECKING:
    from rclpy.callback_groups import CallbackGroup
    from rclpy.client import Client
    from rclpy.node import Node
    from rclpy.task import Future

__all__ = ["ActionTool", "PrerequisiteCall", "ServiceTool", "build_ros_tools"]

_POLL_S = 0.05
"""Longest delay between an operator cancel and the tool noticing it."""
_CANCEL_WAIT_S = 2.0
"""How long a timed-out or cancelled goal waits for the server to confirm the cancel."""

_STATUS_NAMES = {
    GoalStatus.STATUS_UNKNOWN: "unknown",
    GoalStatus.STATUS_ACCEPTED: "accepted",
    GoalStatus.STATUS_EXECUTING: "executing",
    GoalStatus.STATUS_CANCELING: "canceling",
    GoalStatus.STATUS_SUCCEEDED: "succeeded",
    GoalStatus.STATUS_CANCELED: "canceled",
    GoalStatus.STATUS_ABORTED: "aborted",
}


_RESEND_GOAL_S = 1.0
"""An unanswered goal request is sent again (same goal id) after this long."""
_MAX_GOAL_SENDS = 3


class _Wait(Enum):
    DONE = "done"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


def _wait(event: threading.Event, deadline: float, cancel: CancelToken) -> _Wait:
    """Wait for ``event`` until ``deadline`` (monotonic), noticing ``cancel`` within _POLL_S."""
    while not event.is_set():
        if cancel.cancelled:
            return _Wait.CANCELLED
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return _Wait.TIMEOUT
        event.wait(min(_POLL_S, remaining))
    return _Wait.DONE


def _wait_until(ready: Callable[[], bool], timeout_s: float, cancel: CancelToken) -> _Wait:
    """Poll ``ready`` (a graph query, no spinning needed) until it holds or time runs out."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if cancel.cancelled:
            return _Wait.CANCELLED
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return _Wait.TIMEOUT
        cancel.wait(min(_POLL_S, remaining))
    return _Wait.DONE


def _secs(value: float) -> str:
    return f"{value:.1f}" if round(value, 1) == value else f"{value:g}"


def _future_done_event(future: Future[Any]) -> threading.Event:
    event = threading.Event()
    future.add_done_callback(lambda _f: event.set())
    return event


class _RosTool:
    """What action and service tools share: the spec and reading a result message."""

    kind = ""
    """The server, as failures name it."""
    prerequisites: tuple[PrerequisiteCall, ...] = ()
    """Service calls the harness makes before each call (``ToolBinding.prerequisites``)."""
    _unsent = ""
    """What had not happened yet when the operator cancelled while waiting for the server."""

    def __init__(
        self,
        node: Node,
        binding: ToolBinding,
        request_class: type,
        result_class: type,
        feedback_class: type | None = None,
    ) -> None:
        self._node = node
        self._logger = node.get_logger()
        binding = self._binding = fit_to_installed(binding, log=self._logger.info)
        self._request_class = request_class
        self._code_words = _constant_words(result_class, binding.error_code_field)
        self.spec, self._compiled = tool_spec(binding)
        self._success_field = self._checked_field(result_class, "success_field", "boolean")
        self._message_field = self._checked_field(result_class, "message_field", "string")
        self._result_fields = _projection(binding, result_class, "result_fields")
        self._feedback_fields = (
            _projection(binding, feedback_class, "feedback_fields") if feedback_class is not None else None
        )
        self._error_code_field = self._checked_error_code(result_class)
        if self._compiled is not None:
            self._check_constants()

    def _check_constants(self) -> None:
        """Build the goal of every lookup entry now, so a bad constant or table value fails
        at start-up naming its field, not at the model's first call."""
        assert self._compiled is not None
        samples: list[dict[str, Any]] = [{}]
        for name, spec in self._compiled.arguments.items():
            if spec.lookup is not None:
                samples = [{**s, name: key} for s in samples for key in self._binding.lookups[spec.lookup]]
        for sample in samples:
            try:
                fill_message(
                    self._request_class, self._compiled.build(sample, now=lambda: {"sec": 0, "nanosec": 0})
                )
            except (FieldError, BindingError) as err:
                raise ToolError(f"tool {self._binding.name!r}: {err}") from None

    def _checked_error_code(self, result_class: type) -> str | None:
        dotted = self._binding.error_code_field
        if dotted is None:
            return None
        slot = field_type(result_class, dotted)
        if not isinstance(slot, BasicType) or slot.typename not in _INT_TYPES:
            msg = (
                f"tool {self._binding.name!r}: error_code_field {dotted!r} "
                f"is not an integer field of the {self._binding.type} result"
            )
            raise ToolError(msg)
        return dotted

    def requested_pose(self, arguments: dict[str, Any]) -> Pose2D | ArmPose | None:
        """The base pose this call's goal asks for, or the end-effector pose of a MoveIt
        MoveGroup goal (None when the goal names none): built from the arguments by the
        binding, so it says what was asked, not what happened."""
        if self._compiled is None:
            return requested_pose_from_goal(arguments)
        try:
            goal = self._compiled.build(arguments, now=lambda: {"sec": 0, "nanosec": 0})
        except BindingError:
            return None
        return requested_pose_from_goal(goal) or requested_arm_pose_from_goal(goal)

    def _now(self) -> dict[str, int]:
        # The node clock: sim time when use_sim_time is set, so stamps match the robot's TF.
        sec, nanosec = self._node.get_clock().now().seconds_nanoseconds()
        return {"sec": int(sec), "nanosec": int(nanosec)}

    def _build_request(self, arguments: dict[str, Any]) -> Any:
        if self._compiled is None:
            return fill_message(self._request_class, arguments)
        try:
            goal = self._compiled.build(arguments, now=self._now)
        except BindingError as err:
            raise FieldError(str(err)) from None
        return fill_message(self._request_class, goal)

    def _checked_field(self, result_class: type, role: str, wanted: str) -> str | None:
        """The configured field if the result has it with the right type; None when an
        unset default (``success``/``message``) is simply absent from this result type.

        A value equal to the default counts as the default: through ROS parameters every
        key arrives explicitly set, and the same config must behave the same both ways."""
        dotted: str | None = getattr(self._binding, role)
        if dotted is None:
            return None
        slot = field_type(result_class, dotted)
        default = type(self._binding).model_fields[role].default
        explicit = role in self._binding.model_fields_set and dotted != default
        if slot is None:
            if explicit:
                msg = (
                    f"tool {self._binding.name!r}: {role} {dotted!r} "
                    f"is not a field of the {self._binding.type} result"
                )
                raise ToolError(msg)
            return None
        ok = (
            isinstance(slot, BasicType) and slot.typename == "boolean"
            if wanted == "boolean"
            else isinstance(slot, AbstractString)
        )
        if not ok:
            msg = f"tool {self._binding.name!r}: {role} {dotted!r} of {self._binding.type} is not a {wanted}"
            raise ToolError(msg)
        return dotted

    def _endpoint(self) -> str:
        raise NotImplementedError

    def _server_ready(self) -> bool:
        """Whether the server is in the graph (a graph query, no spinning needed)."""
        raise NotImplementedError

    def _send(self, request: Any, cancel: CancelToken, feedback: FeedbackSink | None) -> dict[str, Any]:
        """Send the built ``request`` to the ready server; the envelope of its outcome."""
        raise NotImplementedError

    def execute(
        self,
        arguments: dict[str, Any],
        *,
        cancel: CancelToken,
        feedback: FeedbackSink | None = None,
    ) -> dict[str, Any]:
        """Build the request, wait (bounded) for the server, then ``_send``."""
        try:
            request = self._build_request(arguments)
        except FieldError as err:
            return failure(f"invalid arguments for {self.spec.name!r}: {err}", refusal="invalid_arguments")
        if self.spec.base_motion:
            # The harness waited for the server (wait_until_ready) BEFORE the safety filter
            # read clearance; waiting here would send the goal on an old reading.
            if not self._server_ready():
                return failure(
                    f"{self.kind} {self._endpoint()!r} not available; base motion does not wait for "
                    "its server after the clearance check: retry once it is up",
                    refusal="server_unavailable",
                )
        else:
            problem = self.wait_until_ready(cancel)
            if problem is not None:
                return failure(problem, refusal="server_unavailable")
        return self._send(request, cancel, feedback)

    def wait_until_ready(self, cancel: CancelToken) -> str | None:
        """Wait (bounded by ``server_wait_s``) for the server: None when it is there, else
        the reason. The harness calls this before the pre-execution hooks."""
        wait_s = self._binding.server_wait_s
        waited = _wait_until(self._server_ready, wait_s, cancel)
        if waited is _Wait.CANCELLED:
            return f"cancelled by operator before {self._unsent}"
        if waited is _Wait.TIMEOUT:
            return f"{self.kind} {self._endpoint()!r} not available after {_secs(wait_s)} s"
        return None

    def _reason_text(self, result: Any) -> str:
        if self._message_field is None:
            return ""
        return str(get_field(result, self._message_field)).strip()

    def _read_result(self, result: Any, run_id: str, status: str | None) -> dict[str, Any]:
        """Envelope for a result the server delivered. ``status`` None means a service reply.

        The status decides (an action): a SUCCEEDED goal is a success whatever its error
        code says; the code's words explain a failure. A service has no status: its code
        (and success field) decide."""
        jsonable = _project(result, self._result_fields)
        message = self._reason_text(result)
        where = f"{self.kind} {self._endpoint()!r}"
        code = None if self._error_code_field is None else int(get_field(result, self._error_code_field))
        failed_code = code is not None and code not in self._binding.success_codes
        if status is not None and status != "succeeded":
            verb = f"{status} the goal" if status in ("aborted", "canceled") else f"ended the goal {status}"
            if failed_code:
                assert code is not None
                word = self._error_words(code)
                reason = f"{where} {verb}: {word} (error code {code})" + (f": {message}" if message else "")
                return failure(reason, run_id=run_id, error=word, error_code=code, result=jsonable)
            reason = f"{where} {verb}" + (f": {message}" if message else "")
            return failure(reason, run_id=run_id, result=jsonable)
        if failed_code and status is None:
            assert code is not None
            word = self._error_words(code)
            reason = f"{where} reported: {word} (error code {code})" + (f": {message}" if message else "")
            return failure(reason, run_id=run_id, error=word, error_code=code, result=jsonable)
        if failed_code:
            # Nav2 fills the code before it decides the status: a recovery that failed on
            # the way to a goal that was reached. The status is the truth.
            self._logger.info(
                f"tool {self.spec.name!r}: goal {run_id[:8]} succeeded with error code {code} "
                f"({self._error_words(code or 0)}); the status decides: success"
            )
        if self._success_field is not None and get_field(result, self._success_field) is not True:
            reason = message or f"{where} reported {self._success_field} = false"
            return failure(reason, run_id=run_id, result=jsonable)
        return success(result=jsonable, run_id=run_id)

    def _error_words(self, code: int) -> str:
        """The binding's words for ``code``, else the installed result type's constant for
        it (so each distribution's own codes read as words); else the reason names only
        the number, ``unlisted error code (error code N)``."""
        return self._binding.error_codes.get(code) or self._code_words.get(code) or "unlisted error code"

    def _notify(self, feedback: FeedbackSink | None, jsonable: dict[str, Any]) -> None:
        if feedback is None:
            return
        try:
            feedback(self.spec.name, jsonable)
        except Exception as err:  # noqa: BLE001 - a faulty sink must not kill the executor thread
            self._logger.warning(f"feedback sink of tool {self.spec.name!r} failed: {err!r}")


class _GoalRun:
    """State of one goal, shared between the worker thread and executor callbacks."""

    def __init__(self, tool: ActionTool, feedback: FeedbackSink | None) -> None:
        self._tool = tool
        self._sink = feedback
        self._lock = threading.Lock()
        self._abandoned = False
        self.responded = threading.Event()
        self.finished = threading.Event()
        # generated goal, result and feedback classes are untyped (no stubs): Any
        self.goal_handle: ClientGoalHandle[Any, Any, Any] | None = None
        self.error: str | None = None
        self.result_response: Any = None
        self.goal: Any = None
        self.latest_feedback: dict[str, Any] | None = None
        self.latest_feedback_message: Any = None
        """The last feedback as the server sent it (a grasp reads the gripper joint in it)."""
        self.sent = 0
        self._answered = 0

    def on_feedback(self, message: Any) -> None:
        if self._abandoned:
            return  # the tool has returned; feedback of a goal being cancelled is noise
        jsonable = _project(message.feedback, self._tool._feedback_fields)
        self.latest_feedback = jsonable
        self.latest_feedback_message = message.feedback
        self._tool._notify(self._sink, jsonable)

    def sending(self) -> None:
        """One more request for this goal (the same goal id) is about to go out."""
        with self._lock:
            self.sent += 1

    def on_goal_response(self, future: Future[ClientGoalHandle[Any, Any, Any]]) -> None:
        # The same goal id may have been sent more than once (see ActionTool._send): the
        # first acceptance wins; a rejection counts only once every request was answered,
        # since a server rejects the duplicate of a goal it already accepted.
        error = future.exception()
        handle = None if error is not None else future.result()
        accepted = handle is not None and handle.accepted
        with self._lock:
            self._answered += 1
            already = self.goal_handle is not None and self.goal_handle.accepted
            if not already:
                self.error = None if error is None else f"sending the goal failed: {error}"
                self.goal_handle = handle
            settled = accepted or already or self._answered >= self.sent
            abandoned = self._abandoned
        if accepted and not already:
            assert handle is not None  # accepted implies a handle
            if abandoned:
                # Accepted after the worker gave up: never leave an unwatched goal running.
                handle.cancel_goal_async()
            else:
                handle.get_result_async().add_done_callback(self.on_result)
        if settled:
            self.responded.set()

    def on_result(self, future: Future[Any]) -> None:
        if future.exception() is None:
            self.result_response = future.result()
        else:
            self.error = f"getting the result failed: {future.exception()}"
        self.finished.set()

    def abandon(self) -> ClientGoalHandle[Any, Any, Any] | None:
        """Mark the goal given up; returns its handle if it already exists (caller cancels it)."""
        with self._lock:
            self._abandoned = True
            return self.goal_handle


class ActionTool(_RosTool):
    """A tool that sends one goal to an action server and reports its outcome."""

    kind = "action server"
    _unsent = "the goal was sent"

    def __init__(
        self, node: Node, binding: ToolBinding, *, callback_group: CallbackGroup | None = None
    ) -> None:
        if binding.action is None:
            raise ToolError(f"tool {binding.name!r}: not an action binding")
        action_type = import_interface(binding.type)
        super().__init__(
            node,
            binding,
            action_type.Goal,  # type: ignore[attr-defined]
            action_type.Result,  # type: ignore[attr-defined]
            action_type.Feedback,  # type: ignore[attr-defined]
        )
        if binding.grasp is not None:
            _check_grasp(binding)
        self._client: ActionClient[Any, Any, Any] = ActionClient(
            node, action_type, binding.action, callback_group=callback_group
        )
        self._name = node.resolve_topic_name(binding.action, only_expand=True)
        # What a ClientGoalHandle made for cancelling by id needs as its goal response.
        self._accepted = action_type.Impl.SendGoalService.Response(accepted=True)  # type: ignore[attr-defined]

    def _endpoint(self) -> str:
        return self._name

    def destroy(self) -> None:
        # rclpy's ActionClient.destroy() frees the handle before unregistering it, which can
        # crash an executor that is building its wait set. Unregister only; the handle is
        # freed with the client object, after the executor has let go of it.
        if self._client in self._node.waitables:
            self._node.remove_waitable(self._client)

    def _server_ready(self) -> bool:
        return bool(self._client.server_is_ready())

    def _send(self, goal: Any, cancel: CancelToken, feedback: FeedbackSink | None) -> dict[str, Any]:
        binding = self._binding
        sent = time.monotonic()
        deadline = sent + binding.timeout_s
        accept_s = min(binding.accept_timeout_s, binding.timeout_s)
        goal_id = UUID(uuid=list(uuid.uuid4().bytes))
        run_id = bytes(goal_id.uuid).hex()
        run = _GoalRun(self, feedback)
        run.goal = goal
        self._logger.info(f"tool {self.spec.name!r}: sending goal {run_id[:8]} to {self._name!r}")
        accept_deadline = sent + accept_s
        while True:
            # DDS matching is asymmetric: a request sent while the server has not matched us
            # yet is lost. Unanswered, the same goal (same id) goes out again; a server never
            # runs a goal id twice, so this cannot start the motion twice.
            run.sending()
            self._client.send_goal_async(
                goal, feedback_callback=run.on_feedback, goal_uuid=goal_id
            ).add_done_callback(run.on_goal_response)
            resend_at = time.monotonic() + _RESEND_GOAL_S
            last = run.sent >= _MAX_GOAL_SENDS or resend_at >= accept_deadline
            waited = _wait(run.responded, accept_deadline if last else resend_at, cancel)
            if waited is _Wait.DONE or waited is _Wait.CANCELLED or last:
                break
            self._logger.warning(
                f"tool {self.spec.name!r}: goal {run_id[:8]} unanswered after "
                f"{_secs(_RESEND_GOAL_S)} s; sending it again"
            )
        if waited is not _Wait.DONE:
            return self._give_up_unanswered(run, waited, goal_id, accept_s)
        if run.goal_handle is None or run.error is not None:
            return failure(run.error or f"action server {self._name!r} did not answer the goal")
        if not run.goal_handle.accepted:
            return failure(f"goal rejected by action server {self._name!r}")

        waited = _wait(run.finished, deadline, cancel)
        if waited is not _Wait.DONE:
            return self._give_up(run, waited, run_id)
        return self._finish(run, run_id)

    def _finish(self, run: _GoalRun, run_id: str) -> dict[str, Any]:
        response = run.result_response
        if response is None:
            return failure(run.error or "the action server sent no result", run_id=run_id)
        status = _STATUS_NAMES.get(response.status, f"status {response.status}")
        envelope = self._read_result(response.result, run_id, status)
        if self._binding.grasp is not None:
            envelope = self._grasp_outcome(envelope, run, status)
        self._logger.info(f"tool {self.spec.name!r}: goal {run_id[:8]} {status}")
        return envelope

    def _grasp_outcome(self, envelope: dict[str, Any], run: _GoalRun, status: str) -> dict[str, Any]:
        """A gripper joint's outcome read as a grasp (``ToolBinding.grasp``): the aperture
        the last feedback reports, and whether the gripper holds something. A closing
        goal (its target at most ``tolerance`` above ``closed``, where the empty fingers
        meet; it may squeeze past) that ended more than ``tolerance`` above ``closed``
        stopped on an object: it holds, even when the server aborted the goal for it (a
        stall, a goal point not reached in time),
        as a GripperCommand controller with allow_stalling reports. A goal the server
        refused before moving (invalid joints or goal, no feedback) stays a failure."""
        grasp = self._binding.grasp
        assert grasp is not None
        target = _joint_target(run.goal, grasp.joint)
        measured = _joint_feedback(run.latest_feedback_message, grasp.joint)
        result = dict(envelope.get("result") or {})
        if measured is None or target is None:
            result["aperture_m"] = None
            result["holding"] = None  # no feedback: nothing measured, nothing claimed
            return {**envelope, "result": result}
        result["aperture_m"] = round(measured * grasp.aperture_scale, 4)
        closing = target <= grasp.closed + grasp.tolerance
        result["holding"] = closing and measured > grasp.closed + grasp.tolerance
        if envelope.get("success") is True or not result["holding"]:
            return {**envelope, "result": result}
        code = envelope.get("error_code")
        if status != "aborted" or code in _REFUSED_TRAJECTORY_CODES:
            return {**envelope, "result": result}
        # Stopped on an object: the grasp the call asked for.
        result["stopped_short"] = True
        result["server_reported"] = envelope.get("reason")
        return success(result=result, run_id=envelope.get("run_id"))

    def _give_up_unanswered(
        self, run: _GoalRun, waited: _Wait, goal_id: UUID, accept_s: float
    ) -> dict[str, Any]:
        """No goal response in time: the server is gone or the response was lost. Cancel
        the goal by its id (bounded), so a goal that runs anyway is stopped."""
        run_id = bytes(goal_id.uuid).hex()
        if run.abandon() is not None:
            return self._give_up(run, waited, run_id)  # the response came in just now
        why = (
            f"action server {self._name!r} did not accept the goal within {_secs(accept_s)} s"
            if waited is _Wait.TIMEOUT
            else "cancelled by operator before the server accepted the goal"
        )
        # A late acceptance is cancelled by _GoalRun.on_goal_response (the run is abandoned).
        outcome = self._cancel_by_id(goal_id)
        self._logger.warning(f"tool {self.spec.name!r}: goal {run_id[:8]}: {why}; {outcome}")
        return failure(f"{why}; {outcome}", run_id=run_id)

    def _cancel_by_id(self, goal_id: UUID) -> str:
        """Ask the action's cancel service to cancel ``goal_id``; what came of it, as text."""
        stand_in = ClientGoalHandle(self._client, goal_id, self._accepted)
        future = stand_in.cancel_goal_async()
        if not _future_done_event(future).wait(_CANCEL_WAIT_S) or future.exception() is not None:
            return f"cancel by goal id not answered within {_secs(_CANCEL_WAIT_S)} s (is the server down?)"
        response = future.result()
        assert response is not None  # done without an exception: the service's response
        if len(response.goals_canceling) > 0:
            return "the goal was running after all; the server accepted its cancel"
        if response.return_code == CancelGoal.Response.ERROR_UNKNOWN_GOAL_ID:
            return "the server does not know the goal, so it has not started"
        if response.return_code == CancelGoal.Response.ERROR_GOAL_TERMINATED:
            return "the goal had already ended; its result is unknown"
        return f"cancel by goal id refused (return code {response.return_code})"

    def _give_up(self, run: _GoalRun, waited: _Wait, run_id: str) -> dict[str, Any]:
        """Cancel an answered goal after a timeout or an operator cancel; say what happened."""
        why = (
            f"timed out after {_secs(self._binding.timeout_s)} s"
            if waited is _Wait.TIMEOUT
            else "cancelled by operator"
        )
        handle = run.abandon()
        assert handle is not None  # called once the server answered the goal
        extra: dict[str, Any] = {"run_id": run_id} if run_id else {}
        if run.latest_feedback is not None:
            extra["last_feedback"] = run.latest_feedback
        if not handle.accepted:
            return failure(f"{why}; the goal was rejected anyway", **extra)
        cancel_future = handle.cancel_goal_async()
        confirm_deadline = time.monotonic() + _CANCEL_WAIT_S
        answered = _future_done_event(cancel_future).wait(_CANCEL_WAIT_S)
        response = cancel_future.result() if answered and cancel_future.exception() is None else None
        accepted = response is not None and len(response.goals_canceling) > 0
        terminated = (
            response is not None and response.return_code == CancelGoal.Response.ERROR_GOAL_TERMINATED
        )
        if (accepted or terminated) and run.finished.wait(max(0.0, confirm_deadline - time.monotonic())):
            if _final_status(run) != GoalStatus.STATUS_CANCELED:
                # It ended some other way while we gave up: report what it really did.
                return self._finish(run, run_id)
            self._logger.info(f"tool {self.spec.name!r}: goal {run_id[:8]} cancelled ({why})")
            return failure(f"{why}; goal cancelled", **extra)
        if accepted:
            return failure(f"{why}; cancel accepted by {self._name!r}, the goal is still stopping", **extra)
        return failure(
            f"{why}; cancel not confirmed by {self._name!r} (the goal may still be running)", **extra
        )


_INT_TYPES = frozenset(
    {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "char", "octet"}
)


def _projection(binding: ToolBinding, msg_class: type, role: str) -> dict[str, tuple[str, Any]] | None:
    """Model-facing name -> (field path, rosidl type) of a result or feedback projection."""
    fields: dict[str, str] | None = getattr(binding, role)
    if fields is None:
        return None
    out = {}
    for name, dotted in fields.items():
        slot = field_type(msg_class, dotted)
        if slot is None:
            kind = "result" if role == "result_fields" else "feedback"
            msg = f"tool {binding.name!r}: {role}.{name}: {dotted!r} is not a {kind} field of {binding.type}"
            raise ToolError(msg)
        out[name] = (dotted, slot)
    return out


def _project(msg: Any, fields: dict[str, tuple[str, Any]] | None) -> dict[str, Any]:
    """The named fields of a result or feedback (all of it without a projection)."""
    if fields is None:
        return message_to_jsonable(msg)
    return {name: to_jsonable(get_field(msg, dotted), slot) for name, (dotted, slot) in fields.items()}


_REFUSED_TRAJECTORY_CODES = (-1, -2, -3)
"""control_msgs FollowJointTrajectory INVALID_GOAL, INVALID_JOINTS, OLD_HEADER_TIMESTAMP:
a goal the server refused before any motion."""


def _check_grasp(binding: ToolBinding) -> None:
    assert binding.grasp is not None
    where = f"tool {binding.name!r}: grasp"
    if binding.type != "control_msgs/action/FollowJointTrajectory":
        raise ToolError(
            f"{where}: reads a control_msgs/action/FollowJointTrajectory goal, not {binding.type}"
        )
    names = binding.goal.get("trajectory.joint_names")
    names = names.get("value") if isinstance(names, dict) else names
    if not isinstance(names, list) or binding.grasp.joint not in names:
        raise ToolError(
            f"{where}: joint {binding.grasp.joint!r} is not in the goal's constant "
            f"trajectory.joint_names ({names!r})"
        )


def _joint_target(goal: Any, joint: str) -> float | None:
    """The last point's position of ``joint`` in a FollowJointTrajectory goal."""
    trajectory = getattr(goal, "trajectory", None)
    if trajectory is None or joint not in trajectory.joint_names or not trajectory.points:
        return None
    positions = trajectory.points[-1].positions
    index = list(trajectory.joint_names).index(joint)
    return float(positions[index]) if index < len(positions) else None


def _joint_feedback(feedback: Any, joint: str) -> float | None:
    """``joint``'s actual position in a FollowJointTrajectory feedback (else None)."""
    if feedback is None or joint not in feedback.joint_names:
        return None
    index = list(feedback.joint_names).index(joint)
    actual = feedback.actual.positions
    return float(actual[index]) if index < len(actual) else None


def _final_status(run: _GoalRun) -> int | None:
    response = run.result_response
    return None if response is None else int(response.status)


class ServiceTool(_RosTool):
    """A tool that makes one service call. A service call cannot be cancelled: on timeout
    the tool stops waiting and says the server may still act."""

    kind = "service"
    _unsent = "the call was made"

    def __init__(
        self, node: Node, binding: ToolBinding, *, callback_group: CallbackGroup | None = None
    ) -> None:
        if binding.service is None:
            raise ToolError(f"tool {binding.name!r}: not a service binding")
        srv_type = import_interface(binding.type)
        super().__init__(node, binding, srv_type.Request, srv_type.Response)  # type: ignore[attr-defined]
        self._client: Client[Any, Any] = node.create_client(
            srv_type, binding.service, callback_group=callback_group
        )
        from harness_ros.ros.compat import service_name  # Humble's client has srv_name only

        self._name = service_name(self._client, node)

    def _endpoint(self) -> str:
        return self._name

    def destroy(self) -> None:
        self._node.destroy_client(self._client)

    def _server_ready(self) -> bool:
        return bool(self._client.service_is_ready())

    def _send(self, request: Any, cancel: CancelToken, feedback: FeedbackSink | None) -> dict[str, Any]:
        binding = self._binding
        run_id = uuid.uuid4().hex
        future = self._client.call_async(request)
        waited = _wait(_future_done_event(future), time.monotonic() + binding.timeout_s, cancel)
        if waited is not _Wait.DONE:
            self._client.remove_pending_request(future)
            why = (
                f"timed out after {_secs(binding.timeout_s)} s"
                if waited is _Wait.TIMEOUT
                else "cancelled by operator"
            )
            return failure(f"{why}; a service call cannot be cancelled, the server may still act")
        if future.exception() is not None:
            return failure(f"service {self._name!r} call failed: {future.exception()}")
        return self._read_result(future.result(), run_id, None)


class PrerequisiteCall:
    """One of a tool's ``prerequisites``: a service call with a fixed request that the
    harness (``harness.calls``) makes before each call of the tool, e.g. stretch_driver's
    ``/switch_to_navigation_mode`` before a Nav2 goal. It is a ``ServiceTool`` of its own
    (same waits, timeout and reply reading: a reply whose ``success`` is false fails)."""

    def __init__(
        self,
        node: Node,
        tool: str,
        index: int,
        prerequisite: ToolPrerequisite,
        *,
        callback_group: CallbackGroup | None = None,
    ) -> None:
        binding = prerequisite.as_binding(tool, index)
        try:
            self._call = ServiceTool(node, binding, callback_group=callback_group)
        except ToolError as err:
            text = str(err).replace(f"tool {binding.name!r}", f"prerequisites[{index}]", 1)
            raise ToolError(f"tool {tool!r}: {text}") from None
        self.service = self._call._endpoint()
        self.type = prerequisite.type

    def run(self, cancel: CancelToken) -> dict[str, Any]:
        """Make the call (waiting for the service, bounded): its envelope."""
        return self._call.execute({}, cancel=cancel)

    def destroy(self) -> None:
        self._call.destroy()


def _prerequisites(
    node: Node, binding: ToolBinding, tool: ActionTool | ServiceTool, callback_group: CallbackGroup | None
) -> tuple[PrerequisiteCall, ...]:
    made: list[PrerequisiteCall] = []
    try:
        for index, prerequisite in enumerate(binding.prerequisites):
            made.append(
                PrerequisiteCall(node, binding.name, index, prerequisite, callback_group=callback_group)
            )
    except ToolError:
        for call in made:
            call.destroy()
        tool.destroy()
        raise
    return tuple(made)


def build_ros_tools(
    node: Node, bindings: Sequence[ToolBinding], *, callback_group: CallbackGroup | None = None
) -> list[Tool]:
    """One tool per binding; a ToolError (naming the tool, and the distribution the
    installed type looks like) if any cannot be built. A binding with ``optional: true``
    that does not fit its installed type is skipped with a warning instead. A mistake of
    the binding itself (``check_binding_shape``) or of a prerequisite is refused either
    way, without advice about the tool's type."""
    tools: list[ActionTool | ServiceTool] = []
    try:
        for binding in bindings:
            check_binding_shape(binding)
            try:
                cls = ActionTool if binding.action is not None else ServiceTool
                tool = cls(node, binding, callback_group=callback_group)
            except ToolError as err:
                text = str(err)
                prefix = f"tool {binding.name!r}"
                text = text if text.startswith(prefix) else f"{prefix}: {text}"
                if " looks like ROS 2 " not in text:  # tool_spec may have said it already
                    text += distro_advice(binding, text)
                if binding.optional:
                    node.get_logger().warning(f"{text} (optional: true, so the tool is left out)")
                    continue
                raise ToolError(text) from None
            tool.prerequisites = _prerequisites(node, binding, tool, callback_group)
            tools.append(tool)
    except ToolError:
        for built in tools:
            for prerequisite in built.prerequisites:
                prerequisite.destroy()
            built.destroy()
        raise
    return list(tools)


def _constant_words(result_class: type, error_code_field: str | None) -> dict[int, str]:
    """``{703: 'collision ahead'}`` from the result type's constants (``COLLISION_AHEAD=703``)."""
    if error_code_field is None or "." in error_code_field:
        return {}
    words = {}
    for name, value in constants_of(result_class).items():
        if isinstance(value, int) and not isinstance(value, bool) and value not in words:
            words[value] = name.lower().replace("_", " ")
    return words
