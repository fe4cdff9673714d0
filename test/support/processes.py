"""test/support/action_servers.py started in its own process, for tests of ROS tools.

The process's output is read line by line in a thread, so a test can wait for a line
while the server runs, and still get all of it once the server is stopped.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

SERVERS = Path(__file__).resolve().parent / "action_servers.py"


class ServerProcess:
    """One action_servers.py (or ``script``) process running ``behaviour`` on the ROS
    domain of ``env``."""

    def __init__(
        self, behaviour: str, env: dict[str, str], *, script: Path = SERVERS, args: tuple[str, ...] = ()
    ) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(script), behaviour, *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        """Output lines so far, stripped."""
        self._raw: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self._raw.append(line)
                self.lines.append(line.strip())
                self._changed.notify_all()

    @property
    def output(self) -> str:
        """All output so far, as the process wrote it."""
        with self._changed:
            return "".join(self._raw)

    def wait_for_line(self, text: str, timeout_s: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: text in self.lines, timeout=timeout_s)

    def stop(self) -> str:
        """SIGINT (SIGKILL if it has not exited within 10 s); all of its output."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=10)  # the pipe closes with the process: the rest is read
        return self.output

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)


def run_orchestrator(args: list[str], *, timeout: float, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``subprocess.run`` for commands that start children of their own (demo, eval).

    On timeout it sends SIGINT first, so the command stops its sim and node itself
    (a plain kill would leave them running on a ROS domain a later test may be given),
    then fails the test with the tail of the output, which shows where it was stuck.
    """
    import pytest

    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                out, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            pytest.fail(
                f"{args[3:5]} timed out after {timeout:g} s; output tail:\n{out[-4000:]}\n{err[-2000:]}"
            )
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def stop_process(process: subprocess.Popen[Any], timeout_s: float = 10.0) -> str:
    """Terminate ``process``; kill it when it has not ended within ``timeout_s``. Its
    remaining output (when piped) is read either way and returned ("" when not piped)."""
    process.terminate()
    try:
        output = process.communicate(timeout=timeout_s)[0]
    except subprocess.TimeoutExpired:
        process.kill()
        output = process.communicate()[0]
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""
