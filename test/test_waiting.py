"""The shared wait of the tests (test/support/waiting.py): bounded, and its failure says
what was waited for and for how long."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from support.waiting import ProcessLines, wait_for, wait_on


def test_a_condition_that_holds_ends_the_wait_at_once() -> None:
    start = time.monotonic()
    waited = wait_for(lambda: True, 30.0)
    assert waited and time.monotonic() - start < 1.0


def test_a_condition_that_never_holds_times_out_false_and_names_itself() -> None:
    items: list[int] = []
    start = time.monotonic()
    waited = wait_for(lambda: len(items) >= 3, 0.3)
    took = time.monotonic() - start
    assert not waited
    assert 0.3 <= took < 5.0
    assert repr(waited).startswith("<timed out after 0.3 s waiting for: ")
    assert "len(items) >= 3" in repr(waited) and "test_waiting.py:" in repr(waited)
    assert "the cup" in repr(wait_for(lambda: False, 0.05, what="the cup"))


def test_a_condition_met_by_another_thread_ends_the_wait() -> None:
    flag = threading.Event()
    threading.Timer(0.2, flag.set).start()
    assert wait_for(flag.is_set, 30.0)

    def cup_is_held() -> bool:
        return False

    # A named function is named, with where it is defined.
    assert "cup_is_held (test_waiting.py:" in repr(wait_for(cup_is_held, 0.01, interval_s=0.5))


def test_wait_on_is_woken_by_its_condition_variable() -> None:
    changed = threading.Condition()
    seen: list[str] = []

    def publish() -> None:
        with changed:
            seen.append("event")
            changed.notify_all()

    threading.Timer(0.1, publish).start()
    start = time.monotonic()
    assert wait_on(changed, lambda: bool(seen), 30.0)
    assert time.monotonic() - start < 5.0
    timed_out = wait_on(changed, lambda: len(seen) > 1, 0.1)
    assert not timed_out and "len(seen) > 1" in repr(timed_out)


def test_process_lines_finds_a_line_and_ends_the_wait_when_the_process_ends() -> None:
    script = "import sys, time; print('ready', flush=True); time.sleep(0.2); print('done')"
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines = ProcessLines(proc)
    assert lines.wait_for("ready", 30.0) == ["ready"]
    start = time.monotonic()
    # Never printed: the wait ends with the process, not at the timeout.
    assert lines.wait_for("never printed", 60.0) == []
    assert time.monotonic() - start < 30.0
    assert proc.wait(timeout=30) == 0
    assert lines.join() == "ready\ndone"
