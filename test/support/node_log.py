"""``harness-ros node ARGS`` in its own process, its output (the ROS log) read line by line
in a thread, so a test can wait for a line with a bound and still get every line."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading


class NodeProcess:
    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness_ros.cli", "node", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, text: str, timeout_s: float) -> list[str]:
        """The lines holding ``text`` once one arrived ([] when the process ended or the
        time ran out first)."""

        def found() -> bool:
            return any(text in line for line in self.lines) or not self._reader.is_alive()

        with self._changed:
            self._changed.wait_for(found, timeout=timeout_s)
            return [line for line in self.lines if text in line]

    @property
    def output(self) -> str:
        with self._changed:
            return "\n".join(self.lines)

    def stop(self) -> str:
        """SIGINT (SIGKILL after 15 s); every line it wrote."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=10)
        return self.output
