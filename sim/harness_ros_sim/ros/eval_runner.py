"""``harness-ros eval``: run the scenario suite in two arms, memory on and memory off.

One sim process serves the whole evaluation: before every episode it is reset
(``~/reset``) to the episode's world file and sim seed, so both arms start each
episode from the same state. The arms take turns, episode by episode. The harness
node runs as a separate process, as in the demo, a fresh one per episode and arm: the
*memory on* arm's nodes share one memory folder (consolidated after every completed
task), each *memory off* node gets an empty one. eval.json, eval.md and the plot are
written after every pair of episodes. Tasks go through the node's task API; success is
judged from the sim's ground truth after the task, never from the model's report.

This process talks ROS through one ``EvalClient``: a node in its own rclpy Context for
the sim's parameters, reset and ground truth, and the task client that ``harness-ros
task`` and the demo use too (``harness_ros.ros.task_client``) for the harness node's
task API: it sends a lost first instruction again and believes only the harness node's
own publisher, so a ``done`` another participant forges never ends an episode.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_ros.errors import HarnessError
from harness_ros.ros.task_client import TaskClient
from harness_ros.task_api import TaskResult
from harness_ros_sim.learning_eval import (
    SCRIPTED_DISCLAIMER,
    Arm,
    EpisodeResult,
    EvalReport,
    Scenario,
    episode_metrics,
    generate_suite,
    read_jsonl,
    render_table,
    summarize_arm,
    support_tokens,
    write_outputs,
    write_world,
)
from harness_ros_sim.names import POLICY_LABEL
from harness_ros_sim.ros.children import (
    ROS_ENV_KEYS,
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

__all__ = ["ROBOTS", "SUITES", "EvalClient", "EvalOptions", "EvalRunner", "default_workdir", "run_eval"]

SUITES = ("learning", "moved-objects")
ROBOTS = ("sim", "stretch3-physics")

Write = Callable[[str], None]

HARNESS_NODE = "/harness"
SIM_NODE = "/sim_robot"
GROUND_TRUTH_TOPIC = "/sim/ground_truth"
_STOP_WAIT_S = 10.0
_SERVICE_WAIT_S = 10.0
_STATE_WAIT_S = 5.0
_GRAPH_WAIT_S = 15.0
_CANCEL_GRACE_S = 15.0
_MAX_EPISODES = 500
_NOBODY_ANSWERS_S = 5.0


def default_workdir() -> Path:
    """``~/.ros/harness_ros/eval/<timestamp>``."""
    return timestamped_workdir("eval")


@dataclass(frozen=True)
class EvalOptions:
    workdir: Path
    model: str | None = None
    """A litellm model string; None = the scripted demo policy."""
    api_base: str | None = None
    episodes: int = 6
    seed: int = 0
    sim_speed: float = 2.0
    startup_timeout_s: float = 60.0
    task_timeout_s: float | None = None
    """Cancel a task after this long; None: ``default_task_timeout`` (longer for a local model)."""
    config: Path | None = None
    """Harness config; default: the shipped config/sim.yaml."""
    suite: str = "learning"
    """``learning`` (memory on / off, ``generate_suite``) or ``moved-objects`` (world memory
    on / off, ``harness_ros_sim.ros.world_eval_runner``)."""
    robot: str = "sim"
    """``sim`` (the kinematic sim) or ``stretch3-physics`` (Stretch 3 in MuJoCo, the learning
    suite's two arms on its one fetch: ``harness_ros_sim.ros.physics_eval_runner``)."""


# ---------------------------------------------------------------------- ROS client
class EvalClient:
    """One node in its own Context, spun in a background thread, for the sim's parameters,
    reset service and ground truth; ``tasks``, the task client, for the harness node."""

    def __init__(
        self, domain: int, *, reset_service: str = f"{SIM_NODE}/reset", parameters: bool = True
    ) -> None:
        """``reset_service``: the sim's Trigger reset; ``parameters``: whether the sim takes a
        world, seed and slip probability as ROS parameters (the physics robot has one scene)."""
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        from std_msgs.msg import String
        from std_srvs.srv import Trigger

        from harness_ros.ros.compat import ParameterSetter
        from harness_ros_sim.ros.sim.evaluator import GROUND_TRUTH_QOS

        self._context = Context()
        rclpy.init(context=self._context, domain_id=domain)
        self.node = Node(f"harness_eval_{uuid.uuid4().hex[:6]}", context=self._context)
        self._cond = threading.Condition()
        self._state: dict[str, Any] | None = None
        # its ~/set_parameters service: rclpy.parameter_client is absent on Humble
        self._params = ParameterSetter(self.node, SIM_NODE) if parameters else None
        self._reset = self.node.create_client(Trigger, reset_service)
        self.node.create_subscription(String, GROUND_TRUTH_TOPIC, self._ground_truth, GROUND_TRUTH_QOS)
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(self.node)
        self._thread = threading.Thread(target=self._executor.spin, name="eval-client", daemon=True)
        self._thread.start()
        self.tasks = TaskClient(HARNESS_NODE, domain_id=domain, name="harness_eval")
        """The harness node's task API, spun in the calling thread while it waits."""

    # -------------------------------------------------------------- callbacks
    def _ground_truth(self, msg: Any) -> None:
        try:
            state = json.loads(msg.data)
        except json.JSONDecodeError:
            return
        if isinstance(state, dict):
            # A state without its own wall-clock stamp (the physics robot's) is stamped on receipt.
            state.setdefault("stamp", time.time())
            with self._cond:
                self._state = state
                self._cond.notify_all()

    # -------------------------------------------------------------- waiting
    @staticmethod
    def _wait(future: Any, what: str, timeout_s: float = _SERVICE_WAIT_S) -> Any:
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(timeout_s):
            future.cancel()
            raise HarnessError(f"{what}: no answer within {timeout_s:g} s")
        return future.result()

    def sim_ready(self) -> bool:
        with self._cond:
            has_state = self._state is not None
        params_ready = self._params is None or self._params.service_is_ready()
        return has_state and self._reset.service_is_ready() and params_ready

    def wait_sim_ready(self, timeout_s: float, gone: Callable[[], str | None]) -> bool:
        """Wait for the sim's first ground truth and its services; False after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while not self.sim_ready():
            reason = gone()
            if reason is not None:
                raise HarnessError(reason)
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            with self._cond:
                # Woken by each ground truth; the services' matching has no event, hence the bound.
                self._cond.wait_for(lambda: self._state is not None, timeout=min(0.1, left))
        return True

    def harness_ready(self) -> bool:
        """Whether a harness node takes tasks and its events publisher is the only one
        claiming its name (the ROS graph says)."""
        return self.tasks.is_connected()

    def state_after(
        self,
        after: float,
        accept: Callable[[dict[str, Any]], bool] = lambda _s: True,
        timeout_s: float = _STATE_WAIT_S,
    ) -> dict[str, Any]:
        """The first ground truth stamped at or after ``after`` (wall clock) that ``accept`` takes."""

        def fresh() -> bool:
            state = self._state
            return state is not None and float(state.get("stamp", 0.0)) >= after and accept(state)

        with self._cond:
            if not self._cond.wait_for(fresh, timeout=timeout_s):
                raise HarnessError(
                    f"no fresh ground truth on {GROUND_TRUTH_TOPIC!r} within {timeout_s:g} s "
                    "(is the sim running?)"
                )
            assert self._state is not None
            return dict(self._state)

    # -------------------------------------------------------------- the sim
    def reset_sim(self, world_file: Path, seed: int, slip_probability: float) -> dict[str, Any]:
        """Set the sim's world, seed and slip probability, reset it, and return its first state."""
        from rclpy.parameter import Parameter
        from std_srvs.srv import Trigger

        asked = time.time()
        assert self._params is not None, "this sim takes no parameters: use reset_scene"
        parameters = [
            Parameter("world", value=str(world_file)),
            Parameter("seed", value=int(seed)),
            Parameter("slip_probability", value=float(slip_probability)),
        ]
        response = self._wait(self._params.set_parameters(parameters), f"setting {SIM_NODE}'s parameters")
        refused = [r.reason for r in response.results if not r.successful]
        if refused:
            raise HarnessError(f"{SIM_NODE} refused its parameters: {'; '.join(refused)}")
        answer = self._wait(self._reset.call_async(Trigger.Request()), f"calling {SIM_NODE}/reset")
        if not answer.success:
            raise HarnessError(f"{SIM_NODE}/reset failed for {str(world_file)!r}: {answer.message}")
        return self.state_after(asked, lambda s: s.get("seed") == seed and not s.get("actions"))

    def reset_scene(self) -> dict[str, Any]:
        """Reset a sim that has one scene (no parameters) and return its first state after."""
        from std_srvs.srv import Trigger

        with self._cond:
            before = float((self._state or {}).get("time", 0.0))
        asked = time.time()
        answer = self._wait(self._reset.call_async(Trigger.Request()), f"calling {self._reset.srv_name}")
        if not answer.success:
            raise HarnessError(f"{self._reset.srv_name} failed: {answer.message}")
        # The scene's clock starts again at the reset: a state from before it is not taken.
        return self.state_after(asked, lambda s: before < 1.0 or float(s.get("time", 0.0)) < before)

    # -------------------------------------------------------------- tasks
    def run_task(
        self,
        instruction: str,
        *,
        timeout_s: float,
        alive: Callable[[], str | None],
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
        """Send a task and wait for its end: (task_id, done data, events). ``alive`` returns
        why the node is gone (it exited), or None; a timeout cancels the task."""
        result = self.tasks.run_task(
            instruction,
            timeout_s=timeout_s,
            # Each episode is its own session: no summary of earlier episodes may leak into an arm.
            new_session=True,
            on_event=on_event,
            connect_timeout_s=_GRAPH_WAIT_S,
            cancel_wait_s=_CANCEL_GRACE_S,
            gone=alive,
        )
        return result.task_id, dict(result.data), [dict(e) for e in result.events]

    def close(self) -> None:
        self.tasks.close()
        self._executor.shutdown(timeout_sec=2.0)
        self.node.destroy_node()
        self._context.try_shutdown()
        self._thread.join(timeout=5.0)


# ---------------------------------------------------------------------- the evaluation
class EvalRunner:
    def __init__(self, options: EvalOptions, write: Write = write_stdout) -> None:
        if options.task_timeout_s is None:
            options = dataclasses.replace(options, task_timeout_s=default_task_timeout(options.model))
        self.options = options
        self.out = write
        self.workdir = options.workdir.expanduser().resolve()
        self.logs = self.workdir / "logs"
        self.sim: ChildProcess | None = None
        self.node: ChildProcess | None = None
        self.client: EvalClient | None = None
        self.env: dict[str, str] = {}

    @property
    def scripted(self) -> bool:
        return is_scripted(self.options.model)

    # -------------------------------------------------------------- set-up
    @property
    def task_timeout_s(self) -> float:
        assert self.options.task_timeout_s is not None  # resolved in __init__
        return self.options.task_timeout_s

    def _node_parameters(self) -> dict[str, str]:
        # Nobody answers in the eval: a question the model puts is told "no answer" after a few
        # seconds instead of the two minutes an operator gets (run G spent 120 s on each).
        parameters = {"operator.answer_timeout_s": f"{_NOBODY_ANSWERS_S:g}"}
        # With a local model the node's own wall-time limit (config/sim.yaml: 300 s, five
        # decisions of the 1.5B on two cores) must not end a task before the eval's limit
        # does; it ends it a minute before, as an honest "limit reached" outcome.
        if is_local(self.options.model):
            parameters["harness.task_timeout_s"] = f"{max(60.0, self.task_timeout_s - 60.0):g}"
        return parameters

    def _check_options(self) -> None:
        options = self.options
        if not 1 <= options.episodes <= _MAX_EPISODES:
            raise HarnessError(f"--episodes must be between 1 and {_MAX_EPISODES}, got {options.episodes}")
        if not 0 < options.sim_speed <= 100:
            raise HarnessError(f"--sim-speed must be in (0, 100], got {options.sim_speed:g}")
        if self.task_timeout_s <= 0:
            raise HarnessError(f"--task-timeout must be positive, got {self.task_timeout_s:g}")
        if options.api_base is not None and self.scripted:
            raise HarnessError("--api-base needs a model: give --model (or set HARNESS_MODEL)")

    def _config_path(self) -> Path:
        if self.options.config is not None:
            path = self.options.config.expanduser().resolve()
            if not path.is_file():
                raise HarnessError(f"harness config {str(path)!r} does not exist")
            return path
        from harness_ros.paths import default_config_path

        return default_config_path("sim.yaml")

    def _decisions(self) -> str:
        if self.scripted:
            return POLICY_LABEL
        base = f" at {self.options.api_base}" if self.options.api_base else ""
        return f"model {self.options.model!r}{base}"

    # -------------------------------------------------------------- processes
    def _start_sim(self) -> None:
        self._launch_sim("sim", sim_command(self.options.sim_speed), "sim.log")

    def _launch_sim(self, name: str, command: list[str], log_name: str) -> None:
        """Start the simulated robot ``command`` (the child ``name``, its output in
        ``log_name``) and wait until it is ready; a ``HarnessError`` with its last lines if not."""
        client = self.client
        assert client is not None
        self.sim = sim = ChildProcess(name, command, self.env, self.logs / log_name)
        started = time.monotonic()
        if not client.wait_sim_ready(self.options.startup_timeout_s, exited([sim], " during start-up")):
            raise HarnessError(
                f"the {name} was not ready after {self.options.startup_timeout_s:g} s; "
                f"last lines of {str(sim.log)!r}:\n{sim.tail()}"
            )
        self.out(f"  {name} ready after {time.monotonic() - started:.1f} s")

    def _start_node(
        self,
        label: str,
        memory: Path,
        runs: Path,
        record: Path,
        config: Path,
        *,
        parameters: Mapping[str, str] | None = None,
    ) -> None:
        client = self.client
        assert client is not None
        self._stop_node()
        # The previous node must have left the graph, or its endpoints would pass for the new one's.
        if not client.tasks.wait_for(lambda: not client.tasks.node_on_graph(), _GRAPH_WAIT_S):
            raise HarnessError(
                f"another harness node is still on {HARNESS_NODE!r} after {_GRAPH_WAIT_S:g} s "
                "(is one running on this ROS domain?)"
            )
        command = node_command(
            config,
            memory=memory,
            runs=runs,
            model=self.options.model,
            api_base=self.options.api_base,
            parameters={"model.record_file": str(record), **self._node_parameters(), **(parameters or {})},
        )
        self.node = ChildProcess(
            f"harness node ({label})", command, self.env, self.logs / f"node-{label}.log"
        )
        node = self.node
        wait_ready(
            client.tasks, client.harness_ready, [node], self.options.startup_timeout_s, blame=lambda: node
        )

    def _stop_children(self) -> None:
        """The end of a run, however it ended: stop the node and the sim, close the client."""
        self._stop_node()
        if self.sim is not None:
            self.sim.stop(_STOP_WAIT_S)
        assert self.client is not None
        self.client.close()

    def _stop_node(self) -> None:
        if self.node is not None:
            if self.node.stop(_STOP_WAIT_S) == "killed":
                self.out(f"  the {self.node.name} did not stop within {_STOP_WAIT_S:g} s and was killed")
            self.node = None

    def _gone(self) -> str | None:
        """Why the evaluation cannot go on (the sim or the node exited), or None."""
        return exited([self.sim, self.node])()

    # -------------------------------------------------------------- episodes
    def _print_event(self, event: dict[str, Any]) -> None:
        from harness_ros.progress import format_event

        if event.get("type") in {"tool_call", "tool_result"}:
            line = format_event(event)
            if line:
                self.out(f"      {line}")

    def _episode(
        self, arm: Arm, scenario: Scenario, world: Path, memory: Path, record: Path
    ) -> EpisodeResult:
        client = self.client
        assert client is not None
        gone = self._gone()
        if gone is not None:
            raise HarnessError(gone)
        client.reset_sim(world, scenario.world_seed, scenario.slip_probability)
        skip = len(read_jsonl(record))
        started = time.monotonic()
        task_id, end, events = client.run_task(
            scenario.instruction,
            timeout_s=self.task_timeout_s,
            alive=self._gone,
            on_event=self._print_event,
        )
        wall = time.monotonic() - started
        state = client.state_after(time.time())
        success, check = scenario.success.check(state)
        run_dir = TaskResult(task_id, end, tuple(events)).run_dir
        run_events = read_jsonl(run_dir / "events.jsonl") if run_dir is not None else []
        metrics = episode_metrics(run_events or events)
        if metrics.status == "no done event" and end.get("status"):
            metrics = episode_metrics([*events, {"type": "done", "data": end}])
        report = self._report(run_dir)
        result = EpisodeResult(
            arm=arm,
            scenario=scenario,
            success=success,
            check=check,
            metrics=metrics,
            wall_s=wall,
            task_id=task_id,
            run_dir=run_dir,
            report_html=report,
            memory_dir=memory,
            support_tokens=support_tokens(read_jsonl(record, skip=skip)),
        )
        failed = ", ".join(f"{t} {n}" for t, n in sorted(metrics.failed_calls.items())) or "no failed calls"
        verdict = "SUCCESS" if success else "FAILURE"
        self.out(
            f"    -> {verdict} by ground truth ({check}); harness status {metrics.status}, "
            f"outcome {metrics.outcome}, "
            f"{metrics.turns} turns, {failed}, {wall:.1f} s"
        )
        return result

    def _report(self, run_dir: Path | None) -> Path | None:
        if run_dir is None or not run_dir.is_dir():
            return None
        from harness_ros.plugins import model_provider
        from harness_ros.report import write_report

        try:
            return write_report(run_dir, providers=model_provider)
        except HarnessError as err:
            self.out(f"    (HTML report for {run_dir.name} failed: {err})")
            return None

    def _run_pair(self, scenario: Scenario, world: Path, config: Path) -> list[EpisodeResult]:
        """One episode of the suite in each arm, memory on first.

        The arms take turns episode by episode, each on a node of its own, so that an
        evaluation stopped early (a session's end, a slow machine) still compares the arms on
        the same scenarios; a first memory-off arm after a whole memory-on one did not (run L).
        """
        results = []
        for arm in (Arm.MEMORY_ON, Arm.MEMORY_OFF):
            folder = self.workdir / arm.value
            # Memory on carries one folder across the episodes; memory off starts each empty.
            memory = folder / "memory" if arm is Arm.MEMORY_ON else folder / "memory" / scenario.id
            record = folder / "model_calls.jsonl"
            self._start_node(f"{arm.value}-{scenario.id}", memory, folder / "runs", record, config)
            self.out(
                f"  [{arm.label}] episode {scenario.episode} ({scenario.kind.value}): "
                f"{scenario.instruction!r}"
            )
            results.append(self._episode(arm, scenario, world, memory, record))
            self._stop_node()
        return results

    # -------------------------------------------------------------- main
    def _announce(self, domain: int) -> None:
        options = self.options
        self.out("harness-ros eval: does memory make the robot fail less?")
        self.out(f"  workdir: {self.workdir}")
        self.out(
            f"  {options.episodes} episode(s) per arm, suite seed {options.seed}, "
            f"decisions by {self._decisions()}"
        )
        if self.scripted:
            self.out(f"  NOTE: {SCRIPTED_DISCLAIMER}")
            self.out(
                "  Set --model or HARNESS_MODEL (and --api-base for a local server) to measure learning."
            )
        self.out(f"  ROS domain {domain} (private, localhost only); sim time runs at {options.sim_speed:g}x")

    def _announce_arms(self) -> None:
        on, off = (self.workdir / arm.value / "memory" for arm in (Arm.MEMORY_ON, Arm.MEMORY_OFF))
        self.out("")
        self.out(f"Arm {Arm.MEMORY_ON.label}: one memory folder for all episodes ({on})")
        self.out(f"Arm {Arm.MEMORY_OFF.label}: a fresh memory folder per episode (under {off})")
        self.out("The arms take turns: each episode runs with memory on, then with memory off.")

    def run(self) -> int:
        from domain_coordinator import domain_id

        self._check_options()
        config = self._config_path()
        prepare_workdir(self.workdir, "eval")
        started = time.time()
        suite = generate_suite(self.options.seed, self.options.episodes)
        worlds = [write_world(s, self.workdir / "scenarios") for s in suite]
        results: list[EpisodeResult] = []
        with domain_id() as domain:
            self.env = child_env(domain, self.logs / "ros", self.options.model)
            self._announce(domain)
            with scoped_environ({key: self.env[key] for key in ROS_ENV_KEYS}):
                self.client = EvalClient(domain)
                try:
                    self.out(f"starting the simulated robot (logs in {self.logs}) ...")
                    self._start_sim()
                    self._announce_arms()
                    for scenario, world in zip(suite, worlds, strict=True):
                        results += self._run_pair(scenario, world, config)
                        # Written after each pair: a stopped evaluation leaves its table so far.
                        write_outputs(self._build_report(suite, results, config, started), self.workdir)
                finally:
                    self._stop_children()
        report = self._build_report(suite, results, config, started)
        outputs = write_outputs(report, self.workdir)
        self.out("")
        self.out(render_table(report))
        self.out("")
        self.out("Where everything is:")
        self.out(f"  eval.json:  {outputs.json}")
        self.out(f"  eval.md:    {outputs.markdown}")
        self.out(f"  plot:       {outputs.plot}")
        for arm in (Arm.MEMORY_ON, Arm.MEMORY_OFF):
            self.out(f"  {arm.label + ':':11} {self.workdir / arm.value} (runs/<task>/report.html, memory/)")
        self.out(f"  scenarios:  {self.workdir / 'scenarios'}")
        self.out(f"  logs:       {self.logs}")
        return 0

    def _build_report(
        self, suite: tuple[Scenario, ...], results: list[EpisodeResult], config: Path, started: float
    ) -> EvalReport:
        options = self.options
        settings: Mapping[str, Any] = {
            "model": options.model,
            "api_base": options.api_base,
            "config": str(config),
            "sim_speed": options.sim_speed,
            "task_timeout_s": options.task_timeout_s,
            "workdir": str(self.workdir),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
            "wall_s_total": round(time.time() - started, 1),
        }
        return EvalReport(
            seed=options.seed,
            episodes=options.episodes,
            decisions=self._decisions(),
            measures_learning=not self.scripted,
            disclaimer=SCRIPTED_DISCLAIMER if self.scripted else None,
            scenarios=suite,
            results=tuple(results),
            summaries={arm: summarize_arm(arm, results) for arm in (Arm.MEMORY_ON, Arm.MEMORY_OFF)},
            settings=settings,
        )


def run_eval(options: EvalOptions, write: Write = write_stdout) -> int:
    """Run the evaluation; 0 when every episode ran (whatever its outcome)."""
    with stop_on_terminate():
        return EvalRunner(options, write).run()
