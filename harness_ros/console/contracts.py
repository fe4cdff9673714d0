"""What the console knows of one harness node, and the rules it enforces.

``ConsoleState`` is fed by the ROS client (its executor thread) with what the harness
node's own publishers sent, and read by the web application (the asyncio thread):
every change is one *update* (a JSON-ready dict with a sequence number) handed to each
subscriber, and ``snapshot()`` gives a new page everything it needs at once.

Nothing here interprets text a model, a server or a publisher wrote: it is stored and
passed on as data, and the page renders it as text (never as markup).

The rules:

- **The token** (``new_token``, ``token_matches``): every read and write of the API needs
  it, compared in constant time.
- **The approval hash** (``approval_hash``): an approval names the hash of the exact
  request the operator was shown (its id, tool and arguments as the node published them);
  ``ConsoleState.check_approval`` refuses it when the pending request hashes otherwise,
  or is no longer pending.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from harness_ros.errors import ConsoleRefusal  # defined in the error tree; imported from here too

__all__ = [
    "MAX_EVENTS",
    "MAX_TASKS",
    "ConsoleBackend",
    "ConsoleRefusal",
    "ConsoleState",
    "ModelView",
    "approval_hash",
    "new_token",
    "token_matches",
]

MAX_EVENTS = 400
"""Recent events a new page is given (older ones are in the run folder's report)."""
MAX_TASKS = 20
"""Recent tasks in the history."""
MAX_TEXT_CHARS = 2000
"""An operator's instruction or answer, before it goes to the node (which bounds it again)."""

Update = dict[str, Any]
Subscriber = Callable[[Update], None]


def new_token() -> str:
    """A fresh random token (printed at start, like a notebook server's)."""
    return secrets.token_urlsafe(32)


def token_matches(given: str | None, token: str) -> bool:
    """Constant-time comparison of a presented token with the console's."""
    if not given or not token:
        return False
    return hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8"))


def approval_hash(request: dict[str, Any]) -> str:
    """SHA-256 of the approval request as the node published it: its id, tool and
    arguments (canonical JSON: sorted keys, no spaces). Status and times are left out:
    they change while the request is the same."""
    shown = {
        "request_id": request.get("request_id"),
        "tool": request.get("tool"),
        "arguments": request.get("arguments"),
    }
    canonical = json.dumps(shown, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ModelView:
    """The latest image the model was shown for one view (from ``~/model_view/<view>/compressed``)."""

    name: str
    jpeg: bytes
    received: float
    """Wall time the console received it."""
    stamp: float | None
    """The message's header stamp (the node's clock when it published the decision's view)."""
    version: int


class ConsoleBackend(Protocol):
    """The node's task API as the console uses it (the ROS client implements it)."""

    def send_instruction(self, text: str) -> str:
        """Start a task; returns its id."""
        ...

    def revise(self, task_id: str, text: str) -> None: ...

    def cancel(self, task_id: str, reason: str) -> None: ...

    def decide(self, request_id: str, approved: bool) -> None: ...

    def answer(self, question_id: str, text: str) -> None: ...


class ConsoleState:
    """What the console shows; thread-safe (written by ROS callbacks, read by the web app)."""

    def __init__(self, harness_node: str, *, clock: Callable[[], float] = time.time) -> None:
        self.harness_node = harness_node
        self._clock = clock
        self._lock = threading.Lock()
        self._seq = 0
        self._events: deque[Update] = deque(maxlen=MAX_EVENTS)
        self._tasks: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._approvals: dict[str, dict[str, Any]] = {}
        self._questions: dict[str, dict[str, Any]] = {}
        self._notices: deque[dict[str, Any]] = deque(maxlen=50)
        self._views: dict[str, ModelView] = {}
        self._warnings: deque[str] = deque(maxlen=20)
        self._connected = False
        self._subscribers: list[Subscriber] = []

    # ------------------------------------------------------------------ subscribers
    def subscribe(self, subscriber: Subscriber) -> Update:
        """Register ``subscriber`` for every later update; returns the snapshot it starts from
        (taken under the same lock: no update falls between the two)."""
        with self._lock:
            self._subscribers.append(subscriber)
            return self._snapshot()

    def unsubscribe(self, subscriber: Subscriber) -> None:
        with self._lock:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

    def _emit(self, update: Update) -> Update:
        """Number ``update`` and hand it to every subscriber (called with the lock held)."""
        self._seq += 1
        update["seq"] = self._seq
        for subscriber in list(self._subscribers):
            subscriber(update)
        return update

    # ------------------------------------------------------------------ reads
    def snapshot(self) -> Update:
        with self._lock:
            return self._snapshot()

    def _snapshot(self) -> Update:
        return {
            "kind": "snapshot",
            "seq": self._seq,
            "node": self.harness_node,
            "connected": self._connected,
            "current_task": self._current_task(),
            "tasks": [dict(task) for task in reversed(self._tasks.values())],
            "events": list(self._events),
            "approvals": [dict(body, hash=approval_hash(body)) for body in self._approvals.values()],
            "questions": [dict(body) for body in self._questions.values()],
            "notices": list(self._notices),
            "views": [self._view_meta(view) for view in self._views.values()],
            "warnings": list(self._warnings),
        }

    def _current_task(self) -> str | None:
        for task in reversed(self._tasks.values()):
            if task.get("state") == "running":
                return str(task["task_id"])
        return None

    @property
    def current_task(self) -> str | None:
        with self._lock:
            return self._current_task()

    def view(self, name: str) -> ModelView | None:
        with self._lock:
            return self._views.get(name)

    @staticmethod
    def _view_meta(view: ModelView) -> dict[str, Any]:
        return {
            "name": view.name,
            "received": view.received,
            "stamp": view.stamp,
            "bytes": len(view.jpeg),
            "version": view.version,
        }

    # ------------------------------------------------------------------ writes (from ROS)
    def set_connected(self, connected: bool) -> None:
        with self._lock:
            if connected != self._connected:
                self._connected = connected
                self._emit({"kind": "connection", "connected": connected})

    def warn(self, text: str) -> None:
        """A line for the operator about the console itself (a dropped foreign message)."""
        with self._lock:
            self._warnings.append(text)
            self._emit({"kind": "warning", "text": text})

    def add_event(self, event: dict[str, Any]) -> None:
        """One event the node published on ``~/events`` (already judged its own)."""
        task_id = str(event.get("task_id") or "")
        kind = str(event.get("type") or "")
        raw = event.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        received = self._clock()
        with self._lock:
            task = self._tasks.get(task_id)
            if kind == "task_started":
                task = {
                    "task_id": task_id,
                    "instruction": data.get("instruction"),
                    "state": "running",
                    "started": event.get("time"),
                }
                self._tasks[task_id] = task
                while len(self._tasks) > MAX_TASKS:
                    self._tasks.popitem(last=False)
            elif task is not None and kind == "done":
                task.update(
                    state="done",
                    status=data.get("status"),
                    outcome=data.get("outcome"),
                    reason=data.get("reason"),
                    report=data.get("report"),
                    ended=event.get("time"),
                )
            update = {"kind": "event", "event": event, "received": received}
            self._events.append(update)
            self._emit(update)
            if task is not None and kind in ("task_started", "done"):
                self._emit({"kind": "task", "task": dict(task), "current_task": self._current_task()})

    def set_approval(self, body: dict[str, Any]) -> None:
        """The latest state of one approval request (``~/approval_requests``)."""
        request_id = str(body.get("request_id"))
        with self._lock:
            _keep_latest(self._approvals, request_id, body)
            self._emit({"kind": "approval", "approval": dict(body, hash=approval_hash(body))})

    def set_question(self, body: dict[str, Any]) -> None:
        question_id = str(body.get("question_id"))
        with self._lock:
            _keep_latest(self._questions, question_id, body)
            self._emit({"kind": "question", "question": dict(body)})

    def add_notice(self, body: dict[str, Any]) -> None:
        with self._lock:
            self._notices.append(dict(body))
            self._emit({"kind": "notice", "notice": dict(body)})

    def set_view(self, name: str, jpeg: bytes, stamp: float | None) -> None:
        with self._lock:
            previous = self._views.get(name)
            view = ModelView(name, jpeg, self._clock(), stamp, (previous.version + 1) if previous else 1)
            self._views[name] = view
            self._emit({"kind": "view", "view": self._view_meta(view)})

    # ------------------------------------------------------------------ checks (for writes)
    def check_approval(self, request_id: str, shown_hash: str) -> None:
        """Raise ``ConsoleRefusal`` unless ``request_id`` is pending and hashes to ``shown_hash``."""
        body = self._pending(self._approvals, request_id, f"approval request {request_id!r}")
        if not hmac.compare_digest(approval_hash(body), shown_hash):
            raise ConsoleRefusal(
                f"approval request {request_id!r} is not the request you were shown "
                "(it changed since): reload and look again"
            )

    def check_question(self, question_id: str) -> None:
        self._pending(self._questions, question_id, f"question {question_id!r}")

    def _pending(self, store: dict[str, dict[str, Any]], key: str, what: str) -> dict[str, Any]:
        """The entry ``key`` of ``store``; ``ConsoleRefusal`` naming ``what`` unless it is
        known (404) and pending."""
        with self._lock:
            body = store.get(key)
        if body is None:
            raise ConsoleRefusal(f"{what} is unknown to this console", 404)
        if body.get("status") != "pending":
            raise ConsoleRefusal(f"{what} is {body.get('status')}, not pending")
        return body

    def check_running(self, task_id: str) -> None:
        if self.current_task != task_id:
            raise ConsoleRefusal(f"task {task_id!r} is not the running task")


def _keep_latest(store: dict[str, dict[str, Any]], key: str, body: dict[str, Any]) -> None:
    """Hold a copy of ``body`` under ``key``; past ``MAX_TASKS`` entries the oldest go."""
    store[key] = dict(body)
    while len(store) > MAX_TASKS:
        store.pop(next(iter(store)))
