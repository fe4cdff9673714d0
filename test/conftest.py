"""Shared fixtures: a clean environment per test, a private ROS domain, an rclpy Context.

Every test gets its own ROS_LOG_DIR. ROS tests take ``ros_env`` (a reserved
ROS_DOMAIN_ID, also exported for subprocesses) or ``ros_context`` (an rclpy
Context initialised on that domain and shut down at teardown).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_ros.dds import LARGE_DATA_TRANSPORTS

REPO_ROOT = Path(__file__).resolve().parents[1]

_SECRET_LIKE = ("API_KEY", "HARNESS_MODEL", "OPENAI_BASE_URL", "OPENAI_API_BASE")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test on a DDS domain (it takes ``ros_env``) is marked ``dds`` and runs once more
    when it fails.

    Those tests start several processes that find each other by DDS discovery and talk
    over shared memory; on a loaded 2-core CI host a participant is now and then starved
    for seconds (discovery after the test's own wait, a sample late). A second failure
    fails the run, and every rerun is listed in the summary (``RERUN``, ``-rR``), so a
    test that needs its rerun often is seen and fixed rather than hidden.

    ``make test`` runs the tests that are not ``dds`` on every core (pytest-xdist), then
    the ``dds`` ones three at a time (each on its own domain; they mostly wait on other
    processes), then those also marked ``serial`` one at a time: a language model, a
    physics engine or a whole eval, which missed their time limits when two ran at once
    on two cores.
    """
    for item in items:
        if "ros_env" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.dds)
            item.add_marker(pytest.mark.flaky(reruns=1))


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test sees the developer's model, keys or ROS domain; logs go to a temp folder."""
    for key in list(os.environ):
        if any(marker in key for marker in _SECRET_LIKE) or key == "ROS_DOMAIN_ID":
            monkeypatch.delenv(key, raising=False)
    log_dir = tmp_path_factory.mktemp("ros_log")
    monkeypatch.setenv("ROS_LOG_DIR", str(log_dir))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("HOME", os.environ.get("HOME") or str(log_dir))


class _RunDomains:
    """The ROS_DOMAIN_IDs this pytest process tries, in turn, across the whole run.

    domain_coordinator's own selector starts at 1 on every call, so in the serial DDS
    phase (one process) every test got domain 1, and a participant an earlier test left
    behind was on the next test's graph (test_graph_check_hints saw '/evidence_test').
    This one moves on with every reservation (1 to 100, from a per-process start), so a
    test shares its domain only with a test about a hundred reservations away."""

    def __init__(self) -> None:
        self._next = os.getpid() % 100

    def __call__(self) -> int:
        domain = self._next % 100 + 1
        self._next += 1
        return domain


_RUN_DOMAINS = _RunDomains()


@contextlib.contextmanager
def reserve_domain() -> Iterator[int]:
    """A ROS_DOMAIN_ID no other process holds (a bound port per id), never the one the
    previous reservation of this run got."""
    from domain_coordinator import domain_id

    with domain_id(selector=_RUN_DOMAINS) as reserved:
        yield reserved


@pytest.fixture
def ros_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Reserve a ROS_DOMAIN_ID for this test; yields an env dict for subprocesses.

    At teardown a garbage collection frees the rclpy handles the test left in reference
    cycles: an rclpy ActionClient holds its node's rcl handle, so a node whose client is
    only in a cycle keeps its DDS participant on the domain after destroy_node()."""
    with reserve_domain() as reserved:
        monkeypatch.setenv("ROS_DOMAIN_ID", str(reserved))
        monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
        monkeypatch.setenv("FASTDDS_BUILTIN_TRANSPORTS", LARGE_DATA_TRANSPORTS)
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        try:
            yield env
        finally:
            gc.collect()


@pytest.fixture
def ros_context(ros_env: dict[str, str]) -> Iterator[Any]:
    """An rclpy Context on the reserved domain; shut down at teardown."""
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(context=context, domain_id=int(ros_env["ROS_DOMAIN_ID"]))
    try:
        yield context
    finally:
        context.try_shutdown()


@pytest.fixture
def python_exe() -> str:
    return sys.executable
