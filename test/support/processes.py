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

SERVERS = Path(__file__).resolve().parent / "action_servers.py"


class ServerProcess:
    """One action_servers.py process running ``behaviour`` on the ROS domain of ``env``."""

    def __init__(self, behaviour: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVERS), behaviour],
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
