"""One way for a test to wait: for a condition, with a deadline, and a failure that says
what was waited for and for how long.

ROS gives a test few events to block on (discovery, a graph change, a process's log
line), so a test polls a condition with a short pause between looks, or blocks on the
``threading.Condition`` its own callbacks notify. Either way it never sleeps a fixed
time. What the waits return is true when the condition held in time and false
otherwise, so ``assert wait_for(...)`` and ``if not wait_for(...)`` both read plainly;
on a failed ``assert`` pytest prints the result, which names the condition and the
timeout.
"""

from __future__ import annotations

import inspect
import subprocess
import threading
import time
from collections.abc import Callable
from typing import IO

POLL_S = 0.05
"""The pause between two looks at a polled condition."""


class Waited:
    """The result of a wait: true when its condition held within the timeout."""

    __slots__ = ("elapsed_s", "ok", "timeout_s", "what")

    def __init__(self, ok: bool, what: str, timeout_s: float, elapsed_s: float) -> None:
        self.ok = ok
        self.what = what
        self.timeout_s = timeout_s
        self.elapsed_s = elapsed_s

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        if self.ok:
            return f"<held after {self.elapsed_s:.2f} s: {self.what}>"
        return f"<timed out after {self.timeout_s:g} s waiting for: {self.what}>"


def describe(condition: Callable[[], object]) -> str:
    """The condition's own source line (a lambda), or its name and where it is defined."""
    try:
        lines, start = inspect.getsourcelines(condition)
        source_file = inspect.getsourcefile(condition) or "?"
    except (OSError, TypeError):
        return getattr(condition, "__qualname__", repr(condition))
    name = getattr(condition, "__name__", "")
    place = f"{source_file.rsplit('/', 1)[-1]}:{start}"
    if name == "<lambda>":
        text = " ".join(line.strip() for line in lines)
        return f"{text} ({place})"
    return f"{name} ({place})"


def wait_for(
    condition: Callable[[], object],
    timeout_s: float,
    *,
    what: str | None = None,
    interval_s: float = POLL_S,
) -> Waited:
    """Look at ``condition`` every ``interval_s`` until it is true or ``timeout_s`` passed.

    It is looked at once more at the deadline, so a condition that became true during the
    last pause counts. ``what`` names the condition in the failure (by default its source).
    """
    start = time.monotonic()
    deadline = start + timeout_s
    pause = threading.Event()  # never set: a pause that is not a bare sleep
    while not condition():
        if time.monotonic() >= deadline:
            ok = bool(condition())
            return Waited(ok, what or describe(condition), timeout_s, time.monotonic() - start)
        pause.wait(min(interval_s, max(0.0, deadline - time.monotonic())))
    return Waited(True, what or describe(condition), timeout_s, time.monotonic() - start)


def wait_on(
    changed: threading.Condition,
    condition: Callable[[], object],
    timeout_s: float,
    *,
    what: str | None = None,
) -> Waited:
    """Block on ``changed`` (notified by whoever changes what ``condition`` reads) until
    ``condition`` is true or ``timeout_s`` passed."""
    start = time.monotonic()
    with changed:
        ok = bool(changed.wait_for(condition, timeout=timeout_s))
    return Waited(ok, what or describe(condition), timeout_s, time.monotonic() - start)


class ProcessLines:
    """One output stream of a process, read line by line in a thread, waited on by content.

    ``lines`` holds the lines so far (trailing whitespace stripped); a wait ends when a
    line holds the text, when the process has ended (its last line read), or at the timeout.
    """

    def __init__(self, proc: subprocess.Popen[str], stream: IO[str] | None = None) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self.changed = threading.Condition()
        self._ended = False
        source = stream if stream is not None else proc.stdout
        assert source is not None, "the process's stream must be a pipe"
        self._reader = threading.Thread(target=self._read, args=(source,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            with self.changed:
                self.lines.append(line.rstrip())
                self.changed.notify_all()
        with self.changed:  # the end of the stream: a waiter sees the exit at once
            self._ended = True
            self.changed.notify_all()

    def found(self, text: str) -> list[str]:
        """The lines so far that contain ``text``."""
        with self.changed:
            return [line for line in self.lines if text in line]

    def wait_for(self, text: str, timeout_s: float) -> list[str]:
        """The lines containing ``text`` once one arrived, or the process ended, or at the
        timeout (then the list is empty, and false)."""
        with self.changed:
            self.changed.wait_for(
                lambda: any(text in line for line in self.lines) or self._ended, timeout=timeout_s
            )
            return [line for line in self.lines if text in line]

    def join(self, timeout_s: float = 10.0) -> str:
        """All of the output once the stream closed (the process ended), as one text."""
        self._reader.join(timeout=timeout_s)
        return self.text()

    def text(self) -> str:
        with self.changed:
            return "\n".join(self.lines)
