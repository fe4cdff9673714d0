"""``harness-ros demo``: the simulated robot, the harness node and two fetch tasks, end to end.

The sim and the harness node run as separate processes on a private ROS domain
(localhost only), with their output in log files under the workdir. The demo sends
the tasks through the node's task API, prints live progress, then shows what memory
learned (every proposed entry with the rule that decided it, from ``audit.jsonl``)
and where the run logs, reports and the recording are. Each task's outcome (succeeded,
failed, unverified: the harness's account after its goal check) is printed next to the
demo's own check of the trajectory. Exit 0 only when every task completed, the evaluator
confirmed its goal and no outcome is ``failed``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_ros.errors import HarnessError
from harness_ros.local_model.catalog import LOCAL_PREFIX
from harness_ros.local_model.server import KEY_ENV as LOCAL_KEY_ENV
from harness_ros.local_model.serving import LOCAL_MODEL_DEFAULTS
from harness_ros_sim.demo.decide import POLICY_LABEL
from harness_ros_sim.demo.scenarios import DEMO_TASKS, DemoTask
from harness_ros_sim.names import DEMO_MODEL
from harness_ros_sim.ros.children import (
    ROS_ENV_KEYS,
    STOP_WAIT_S,
    ChildProcess,
    child_env,
    default_task_timeout,
    exited,
    is_local,
    is_scripted,
    node_command,
    prepare_workdir,
    scoped_environ,
    sim_command,
    stop_on_terminate,
    timestamped_workdir,
    wait_ready,
    write_stdout,
)

if TYPE_CHECKING:
    from harness_ros.local_model.server import LocalServer
    from harness_ros.ros.task_client import TaskClient

__all__ = [
    "LOCAL_NODE_PARAMETERS",
    "ROS_ENV_KEYS",
    "ChildProcess",
    "DemoOptions",
    "TaskOutcome",
    "child_env",
    "default_task_timeout",
    "default_workdir",
    "is_local",
    "is_scripted",
    "node_command",
    "run_demo",
    "scoped_environ",
    "sim_command",
]

Write = Callable[[str], None]

_NODE = "/harness"
_CLI = (sys.executable, "-m", "harness_ros.cli")


def default_workdir() -> Path:
    """``~/.ros/harness_ros/demo/<timestamp>`` (the user's ROS home)."""
    return timestamped_workdir("demo")


@dataclass(frozen=True)
class DemoOptions:
    workdir: Path
    model: str | None = None
    """A litellm model string; None = the scripted demo policy; ``local/1.5b`` (``0.5b``, a
    .gguf path): the demo serves that local model with llama.cpp for its lifetime."""
    api_base: str | None = None
    record: bool = True
    tasks: int = len(DEMO_TASKS)
    sim_speed: float = 2.0
    """Simulated seconds per wall-clock second while the robot moves."""
    startup_timeout_s: float = 60.0
    task_timeout_s: float = 300.0
    config: Path | None = None
    """Harness config; default: the shipped config/sim.yaml."""


@dataclass
class TaskOutcome:
    task: DemoTask
    status: str
    task_id: str = ""
    run_dir: Path | None = None
    verified: bool = False
    verification: str = ""
    report: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    outcome: str = "none"
    """The done event's outcome (succeeded, failed, unverified), or none."""
    stats: dict[str, Any] = field(default_factory=dict)
    """A language model's decisions, calls and timing in this task (``model_stats``)."""

    @property
    def ok(self) -> bool:
        return self.status == "completed" and self.verified and self.outcome != "failed"


# ---------------------------------------------------------------------- processes


LOCAL_NODE_PARAMETERS: Mapping[str, str] = {
    "model.api_key_env": LOCAL_KEY_ENV,
    # A 2-core CPU reads ~30-60 prompt tokens/s: the first decision (~1,750 tokens) takes
    # about a minute, and more under load. Later decisions reuse llama.cpp's prompt cache.
    "model.timeout_s": "900",
    # The served context (16,384 tokens) minus room for the reply: compaction starts before it overflows.
    "model.context_window_tokens": "14000",
    # Greedy decoding: a small model's tool calls are most often well-formed this way, and runs repeat.
    "model.temperature": "0.0",
    # A bound on each reply (llama.cpp generates until the context is full otherwise).
    "model.max_tokens": str(LOCAL_MODEL_DEFAULTS["max_tokens"]),
    # A decision's reply (a call takes under 100 tokens; see LOCAL_MODEL_DEFAULTS).
    "model.decision_max_tokens": str(LOCAL_MODEL_DEFAULTS["decision_max_tokens"]),
}
"""Node parameters for a model the demo serves itself (``local/...``)."""


# ---------------------------------------------------------------------- the demo
class DemoRunner:
    def __init__(self, options: DemoOptions, write: Write = write_stdout) -> None:
        self.options = options
        self.out = write
        self.workdir = options.workdir.expanduser().resolve()
        self.logs = self.workdir / "logs"
        self.memory = self.workdir / "memory"
        self.runs = self.workdir / "runs"
        self.recording = self.workdir / "recording"
        self.children: list[ChildProcess] = []
        self.local_server: LocalServer | None = None
        self.model = options.model
        """The litellm model string the node gets (a ``local/`` one resolved once served)."""
        self.api_base = options.api_base

    # -------------------------------------------------------------- set-up
    def _config_path(self) -> Path:
        if self.options.config is not None:
            return self.options.config.resolve()
        from harness_ros.paths import default_config_path

        return default_config_path("sim.yaml")

    @property
    def scripted(self) -> bool:
        return is_scripted(self.options.model)

    @property
    def local(self) -> bool:
        return is_local(self.options.model)

    def _env(self, domain: int) -> dict[str, str]:
        env = child_env(domain, self.logs / "ros", self.model)
        if self.local_server is not None:
            env[LOCAL_KEY_ENV] = self.local_server.api_key
        return env

    def _start_local_model(self) -> None:
        """Serve the ``local/...`` model (installing it on first use) before the node starts."""
        from harness_ros.local_model.server import LocalServer

        name = str(self.options.model).removeprefix(LOCAL_PREFIX)
        log = self.logs / "model_server.log"
        self.out(
            f"starting the local model server for {name!r} (log {log}; installs the model on first use) ..."
        )
        started = time.monotonic()
        self.local_server = LocalServer(name, log)
        endpoint = self.local_server.start()
        self.model, self.api_base = endpoint.model, endpoint.api_base
        self.out(
            f"  llama.cpp serves {Path(endpoint.model_path).name} at {endpoint.api_base} "
            f"after {time.monotonic() - started:.1f} s"
        )
        self.out(f"  decisions: this local model ({endpoint.model} through litellm), not a script")

    def _local_parameters(self) -> dict[str, str]:
        # The node's own wall-time limit ends the task (an honest "limit reached" outcome)
        # before the demo's client gives up on it.
        timeout = max(60.0, self.options.task_timeout_s - 60.0)
        return {**LOCAL_NODE_PARAMETERS, "harness.task_timeout_s": f"{timeout:g}"}

    def _stop_local_model(self) -> None:
        if self.local_server is not None:
            how = self.local_server.stop()
            if how == "killed":
                self.out(f"  the local model server did not stop within {STOP_WAIT_S:g} s and was killed")

    def _start(self, env: Mapping[str, str], config: Path) -> None:
        sim = sim_command(self.options.sim_speed)
        node = node_command(
            config,
            memory=self.memory,
            runs=self.runs,
            model=self.model,
            api_base=self.api_base,
            record=self.recording if self.options.record else None,
            parameters=self._local_parameters() if self.local_server is not None else None,
        )
        self.children.append(ChildProcess("sim", sim, env, self.logs / "sim.log"))
        self.children.append(ChildProcess("harness node", node, env, self.logs / "node.log"))

    def _wait_ready(self, client: TaskClient) -> float:
        """Block until the sim publishes and the harness node accepts tasks; seconds taken."""
        sim, node = self.children

        def sim_up() -> bool:
            return client.count_publishers("/sim/ground_truth") > 0

        return wait_ready(
            client,
            lambda: sim_up() and client.is_connected(),
            self.children,
            self.options.startup_timeout_s,
            blame=lambda: node if sim_up() else sim,
        )

    # -------------------------------------------------------------- tasks
    def _print_event(self, event: dict[str, Any]) -> None:
        from harness_ros.progress import format_event

        line = format_event(event)
        if line is not None:
            self.out(f"  {line}")
        data = event.get("data") or {}
        if event.get("type") == "model_response" and data.get("tool_calls") and data.get("text"):
            why = " ".join(str(data["text"]).split())
            self.out(f"      why: {why[:300] + '...' if len(why) > 300 else why}")

    def _run_task(self, client: TaskClient, number: int, task: DemoTask) -> TaskOutcome:
        self.out("")
        self.out(f"Task {number}/{self.options.tasks}: {task.title}")
        self.out(f"  instruction: {task.instruction!r}")

        answerer = self._start_answerer(task)
        try:
            result = client.run_task(
                task.instruction,
                timeout_s=self.options.task_timeout_s,
                # What task 2 knows of task 1 must come from memory (the point of the demo),
                # not from the session summary.
                new_session=True,
                on_event=self._print_event,
                gone=exited(self.children),
                warn=lambda text: self.out(f"  {text}"),
            )
        finally:
            self._stop_answerer(answerer)
        done = result.data
        events = [dict(e) for e in result.events]
        outcome = TaskOutcome(task, result.status, task_id=result.task_id, events=events)
        outcome.outcome = result.outcome
        outcome.report = str(done.get("report") or "")
        outcome.run_dir = result.run_dir or (self.runs / result.task_id if result.task_id else None)
        outcome.verified, outcome.verification = _verify(outcome.run_dir, task)
        if outcome.report:
            self.out("  final report:")
            for line in outcome.report.splitlines():
                self.out(f"    | {line}")
        if not self.scripted:
            from harness_ros_sim.demo.model_stats import decision_stats

            outcome.stats = decision_stats(events).as_dict()
            for line in decision_stats(events).lines():
                self.out(f"  {line}")
        mark = "verified" if outcome.verified else "NOT verified"
        self.out(f"  outcome: {outcome.outcome.upper()} ({_outcome_basis(done)})")
        self.out(f"  status: {outcome.status}; goal {mark}: {outcome.verification}")
        return outcome

    def _start_answerer(self, task: DemoTask) -> subprocess.Popen[str] | None:
        """``harness-ros answer`` in the background, standing in for the operator: it waits
        for the robot's question and answers it with the task's scripted answer."""
        if task.operator_answer is None:
            return None
        self.out(f"  (the demo runner plays the operator: it will answer {task.operator_answer!r})")
        command = [
            *_CLI,
            "answer",
            "--text",
            task.operator_answer,
            "--node",
            _NODE,
            "--timeout",
            f"{self.options.task_timeout_s:g}",
        ]
        return subprocess.Popen(
            command,
            env=dict(os.environ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def _stop_answerer(self, answerer: subprocess.Popen[str] | None) -> None:
        if answerer is None:
            return
        if answerer.poll() is None:  # the model did not ask (a real model decides itself)
            answerer.terminate()
        try:
            output, _ = answerer.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            answerer.kill()
            output, _ = answerer.communicate(timeout=5)
        answered = [line for line in (output or "").splitlines() if line.startswith("answered ")]
        if answered:
            self.out(f"  operator (the demo runner, through harness-ros answer): {answered[-1]}")
        else:
            self.out("  (no question was asked: the model did not ask the operator)")

    # -------------------------------------------------------------- summary
    def _print_learning(self, outcomes: Sequence[TaskOutcome]) -> None:
        from harness_ros.config import load_config
        from harness_ros.memory import FileMemory

        self.out("")
        self.out(f"What memory learned ({self.memory}):")
        # The node's memory settings: its audit rotation decides which generations there are to read.
        memory = FileMemory.from_config(load_config(self._config_path()).memory, root=self.memory)
        audit = memory.audit_records()
        records = [r for r in audit if r.get("event") == "proposal"]
        for number, outcome in enumerate(outcomes, start=1):
            mine = [r for r in records if r.get("task_id") == outcome.task_id]
            failed = [
                r
                for r in audit
                if r.get("event") == "consolidation_failed" and r.get("task_id") == outcome.task_id
            ]
            self.out(f"  after task {number} ({outcome.task_id or 'no id'}):")
            if failed:
                error = " ".join(str(failed[-1].get("error") or "").split())[:300]
                self.out(
                    f"    consolidation failed: {error} (the trajectory is kept in pending/ for a retry)"
                )
            elif outcome.status != "completed":
                status = outcome.status
                self.out(
                    f"    not consolidated: task status {status} (only completed tasks are consolidated)"
                )
            elif not mine:
                self.out("    nothing new proposed (the lessons it showed are already in memory)")
            for record in mine:
                self.out(f"    {_describe_proposal(record)}")
                self.out(f"        {_rule_text(record)}")
        for tool in memory.ledger_tools():
            self.out(f"  ledger {tool}: {memory.ledger_path(tool)}")
            for outcome_name, texts in memory.ledger_entries(tool).items():
                for text in texts:
                    self.out(f"    {outcome_name:7}  - {text}")
        lessons = [(s, t) for s, texts in memory.memory_entries().items() for t in texts]
        if lessons:
            self.out(f"  MEMORY.md: {memory.memory_path}")
            for section, text in lessons:
                self.out(f"    {section}: {text}")
        summary = _cached_summary(self.memory, "pick_object")
        if summary and len(outcomes) > 1:
            self.out("  task 2 started with this experience summary in pick_object's tool definition:")
            self.out(f"    {summary!r}")

    def _write_stats(self, outcomes: Sequence[TaskOutcome]) -> None:
        """``<workdir>/model_stats.json``: per task, what a language model did (not for the script)."""
        if self.scripted:
            return
        tasks = [
            {
                "task_id": o.task_id,
                "status": o.status,
                "outcome": o.outcome,
                "verified": o.verified,
                **o.stats,
            }
            for o in outcomes
        ]
        record = {
            "model": self.options.model,
            "served_as": self.model,
            "api_base": self.api_base,
            "tasks": tasks,
        }
        (self.workdir / "model_stats.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")

    def _write_reports(self, outcomes: Sequence[TaskOutcome]) -> list[Path]:
        try:
            from harness_ros.plugins import model_provider
            from harness_ros.report import write_report
        except ImportError:
            self.out("  (HTML reports: harness_ros.report is not available in this install)")
            return []
        written = []
        for outcome in outcomes:
            if outcome.run_dir is None or not outcome.run_dir.is_dir():
                continue
            try:
                written.append(write_report(outcome.run_dir, providers=model_provider))
            except HarnessError as err:
                self.out(f"  report for {outcome.task_id} failed: {err}")
        return written

    def _print_locations(self, outcomes: Sequence[TaskOutcome], reports: Sequence[Path]) -> None:
        self.out("")
        self.out("Where everything is:")
        self.out(f"  workdir:    {self.workdir}")
        for child in self.children:
            self.out(f"  {child.name + ' log:':11} {child.log}")
        for number, outcome in enumerate(outcomes, start=1):
            if outcome.run_dir is not None:
                self.out(
                    f"  task {number} run:  {outcome.run_dir}  (events.jsonl, trajectory.json, report.md)"
                )
        for report in reports:
            self.out(f"  report:     {report}")
        if self.options.record:
            bags = sorted(p for p in self.workdir.glob("recording*") if (p / "metadata.yaml").is_file())
            for bag in bags:
                size = sum(f.stat().st_size for f in bag.rglob("*") if f.is_file()) / 1e6
                self.out(f"  recording:  {bag} ({size:.1f} MB)")
                # The model by name: replay's default config sets none, and never falls back to a script.
                model = self.model or DEMO_MODEL
                replay = f"harness-ros replay {bag} --mode consolidate --dry-run --model {model}"
                self.out(f"              replay it: {replay}")
            if not bags:
                self.out(f"  recording:  missing (expected {self.recording}; see the node log)")
        self.out(f"  memory:     {self.memory}")

    # -------------------------------------------------------------- main
    def _announce(self, domain: int) -> None:
        self.out("harness-ros demo: a simulated mobile manipulator fetches two objects and learns")
        self.out(f"  workdir: {self.workdir}")
        if self.local:
            self.out(
                f"  decisions: the local language model {self.options.model!r}, served by llama.cpp on this "
                "machine (2 threads);\n    its first decision reads a ~1,750-token prompt: a minute or "
                "more on 2 cores"
            )
        elif self.scripted:
            self.out(f"  decisions: the {POLICY_LABEL}.")
            self.out("    It stands in for a model so the demo runs without an API key; set HARNESS_MODEL")
            self.out("    or --model (openai/gpt-4o-mini, anthropic/..., ollama/...) for real decisions.")
        else:
            base = f" at {self.options.api_base}" if self.options.api_base else ""
            self.out(
                f"  decisions: model {self.options.model!r} through litellm{base} (key from the environment)"
            )
        self.out(
            f"  ROS domain {domain} (private, localhost only); sim time runs at {self.options.sim_speed:g}x"
        )

    def run(self) -> int:
        from domain_coordinator import domain_id

        if not 1 <= self.options.tasks <= len(DEMO_TASKS):
            raise HarnessError(f"--tasks must be between 1 and {len(DEMO_TASKS)}, got {self.options.tasks}")
        if self.local and self.options.api_base:
            msg = f"--api-base is for a server you run; {self.options.model!r} is served by the demo itself"
            raise HarnessError(msg)
        prepare_workdir(self.workdir, "demo")
        config = self._config_path()
        outcomes: list[TaskOutcome] = []
        with domain_id() as domain, contextlib.ExitStack() as stack:
            self._announce(domain)
            if self.local:
                # Stopped after the node (the ExitStack closes last): the node's last call may still run.
                stack.callback(self._stop_local_model)
                self._start_local_model()
            env = self._env(domain)
            with scoped_environ({key: env[key] for key in ROS_ENV_KEYS}):
                try:
                    self.out(f"starting the simulated robot and the harness node (logs in {self.logs}) ...")
                    self._start(env, config)
                    from harness_ros.ros.task_client import TaskClient

                    with TaskClient(_NODE, domain_id=domain, name="harness_demo") as client:
                        self.out(f"  ready after {self._wait_ready(client):.1f} s")
                        for number, task in enumerate(DEMO_TASKS[: self.options.tasks], start=1):
                            outcomes.append(self._run_task(client, number, task))
                except KeyboardInterrupt:
                    # Interrupted: the model server goes first. The node's request in flight
                    # (minutes for a first prompt on a CPU) then fails at once and its
                    # cancelled task ends, instead of holding the node up until it is killed.
                    self._stop_local_model()
                    raise
                finally:
                    self._stop_children()
        self._print_learning(outcomes)
        self._write_stats(outcomes)
        reports = self._write_reports(outcomes)
        self._print_locations(outcomes, reports)
        ok = len(outcomes) == self.options.tasks and all(o.ok for o in outcomes)
        self.out("")
        if self.scripted:
            label = f" (decisions by the {POLICY_LABEL})"
        else:
            label = f" (decisions by the model {self.model}{' served locally' if self.local else ''})"
        tally = ", ".join(f"task {n} {o.outcome}" for n, o in enumerate(outcomes, start=1))
        if ok:
            self.out(f"demo: all {len(outcomes)} task(s) completed and verified ({tally}){label}")
        else:
            failed = [
                f"task {n}: {o.status}, outcome {o.outcome}"
                for n, o in enumerate(outcomes, start=1)
                if not o.ok
            ]
            self.out(f"demo: FAILED ({'; '.join(failed) or 'no task ran'}){label}")
        return 0 if ok else 1

    def _stop_children(self) -> None:
        # The node first: it closes the recording cleanly on SIGINT.
        for child in reversed(self.children):
            how = child.stop()
            if how == "killed":
                self.out(f"  the {child.name} did not stop within {STOP_WAIT_S:g} s and was killed")


# ---------------------------------------------------------------------- helpers
def _verify(run_dir: Path | None, task: DemoTask) -> tuple[bool, str]:
    """Whether the run's trajectory shows the evaluator confirming the object on the target."""
    if run_dir is None:
        return False, "no run folder"
    try:
        trajectory = json.loads((run_dir / "trajectory.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        return False, f"cannot read {str(run_dir / 'trajectory.json')!r}: {err}"
    places = [
        e
        for e in trajectory.get("events") or []
        if e.get("tool") == "place_object" and (e.get("arguments") or {}).get("surface_id") == task.target
    ]
    confirmed = [e for e in places if (e.get("verdict") or {}).get("status") == "success"]
    if confirmed:
        evidence = (confirmed[-1].get("verdict") or {}).get("evidence") or ""
        return True, f"the evaluator confirmed the place on {task.target} ({evidence})"
    if places:
        return False, f"no place on {task.target} was confirmed by the evaluator"
    return False, f"nothing was placed on {task.target}"


def _outcome_basis(done: Mapping[str, Any]) -> str:
    claim = done.get("claim")
    said = f"the model claimed {claim}" if claim else "the model made no claim"
    verdict = done.get("goal_verdict")
    if not isinstance(verdict, Mapping):
        return f"{said}; no evaluator judged the goal"
    why = verdict.get("failure_reason") or verdict.get("evidence") or ""
    return f"{said}; the evaluator's goal check: {verdict.get('status')}" + (f", {why}" if why else "")


def _describe_proposal(record: Mapping[str, Any]) -> str:
    mark = "+ accepted" if record.get("accepted") else "- rejected"
    if record.get("kind") == "memory":
        where = f"MEMORY.md {record.get('section')}"
    else:
        where = f"{record.get('tool')} {str(record.get('outcome') or '').capitalize()}"
    return f"{mark} [{where}] {record.get('text')!r}"


def _rule_text(record: Mapping[str, Any]) -> str:
    rule = str(record.get("rule") or "")
    if not record.get("accepted"):
        reason = f": {record['reason']}" if record.get("reason") else ""
        return f"rule {rule}{reason}"
    tool = record.get("tool")
    if record.get("kind") == "memory":
        return "rule accepted: confidence above the threshold, no one-run state, nothing that weakens safety"
    if record.get("outcome") == "failure":
        return f"rule accepted: a {tool} failure was later followed by an evaluator-confirmed {tool} success"
    return f"rule accepted: the trajectory has an evaluator-confirmed {tool} success"


def _cached_summary(memory_dir: Path, tool: str) -> str:
    try:
        cache = json.loads((memory_dir / ".summary_cache.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return ""
    entry = cache.get(tool) if isinstance(cache, dict) else None
    return str(entry.get("summary") or "") if isinstance(entry, dict) else ""


def run_demo(options: DemoOptions, write: Write = write_stdout) -> int:
    """Run the demo; returns the exit code (0 when every task completed and was verified)."""
    with stop_on_terminate():
        return DemoRunner(options, write).run()
