"""Headless Chromium driven over the DevTools protocol on its debugging pipe.

Chromium (Debian's package, scripts/ensure_chromium.sh) started with
``--remote-debugging-pipe`` reads commands on fd 3 and writes answers on fd 4 as
NUL-terminated JSON messages: no driver package is needed. Used by the console's
browser tests (test_console_browser.py, test_console_sim.py).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

WAIT_S = 60.0


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    """One Chromium tab over the DevTools pipe (fd 3 in, fd 4 out)."""

    def __init__(self, to_browser: int, from_browser: int) -> None:
        self._out, self._in = to_browser, from_browser
        self._buffer = b""
        self._id = 0
        self.session: str | None = None

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._in], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, "Chromium did not answer in time"
            chunk = os.read(self._in, 1 << 20)
            assert chunk, "Chromium closed its DevTools pipe"
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return dict(json.loads(message))

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, browser: bool = False
    ) -> dict[str, Any]:
        self._id += 1
        ident = self._id
        request: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if self.session is not None and not browser:
            request["sessionId"] = self.session
        os.write(self._out, json.dumps(request).encode() + b"\0")
        deadline = time.monotonic() + WAIT_S
        while True:
            message = self._read_message(deadline)
            if message.get("id") == ident:
                assert "error" not in message, message
                return dict(message.get("result") or {})

    def eval(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}
        )
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def until(self, expression: str, what: str, timeout_s: float = WAIT_S) -> Any:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.05)  # polling the page, not waiting for ROS
        text = self.eval("document.body.innerText")
        pytest.fail(f"{what}: not within {timeout_s:g} s; page text:\n{text[-3000:]}")

    def screenshot(self, path: Path, width: int = 1100, height: int = 760) -> None:
        """A PNG of the page at ``width`` x ``height`` CSS pixels."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        shot = self.send("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(shot["data"]))


def _above_four(fd: int) -> int:
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


@contextmanager
def open_page(url: str, profile: Path) -> Iterator[Page]:
    """Headless Chromium with one tab at ``url``; the browser is stopped on exit."""
    binary = chromium()
    assert binary is not None
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    # The child's ends above fd 4, so that wiring them to 3 and 4 overwrites neither.
    to_browser_r, from_browser_w = (_above_four(fd) for fd in (to_browser_r, from_browser_w))
    command = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--remote-debugging-pipe",
        f"--user-data-dir={profile}",
        "about:blank",
    ]
    # The shell puts the pipe ends at fds 3 and 4 of the browser, where it expects them.
    wired = ["bash", "-c", f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w}', *command]
    browser = subprocess.Popen(
        wired,
        stdout=subprocess.DEVNULL,
        stderr=(profile.parent / "chromium.log").open("wb"),
        pass_fds=(to_browser_r, from_browser_w),
    )
    os.close(to_browser_r)
    os.close(from_browser_w)
    try:
        page = Page(to_browser_w, from_browser_r)
        target = page.send("Target.createTarget", {"url": url}, browser=True)
        attached = page.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, browser=True
        )
        page.session = attached["sessionId"]
        yield page
    finally:
        browser.terminate()
        try:
            browser.wait(timeout=15)
        except subprocess.TimeoutExpired:
            browser.kill()
            browser.wait(timeout=5)
        os.close(to_browser_w)
        os.close(from_browser_r)
