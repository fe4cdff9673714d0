"""The harness node: a managed (lifecycle) node that runs LLM tasks on the robot.

configure  load the config (YAML + ROS parameters), validate the Embodiment Profile,
           discover skills, subscribe to the camera/depth/clearance topics, bind the
           configured actions and services as tools, check the ROS graph
activate   accept tasks on ``~/instruction``
deactivate cancel a running task, stop accepting new ones

Task API (standard types only):
``~/instruction`` std_msgs/String  plain text, or JSON {"instruction", "task_id"}
``~/revise``      std_msgs/String  JSON {"task_id", "instruction"}: revise that task
``~/cancel_task`` std_msgs/String  JSON {"task_id", "reason"?}: cancel that task
``~/events``      std_msgs/String  one JSON harness event per message
``~/cancel``      std_srvs/Trigger cancel whatever task is running (unaddressed, logged)

Every client message is hostile until parsed (``harness_ros.task_api``): a bad one is
refused with a ``task_rejected`` or ``request_refused`` event and a log line, and the
node keeps serving. Every parameter is read-only at run time except the short
allowlist ``harness_ros.config.RUN_TIME_PARAMETERS``, and a lifecycle re-configure
re-reads the start-up values (config file + start-up overrides), never a value another
participant set.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from std_msgs.msg import String
from std_srvs.srv import Trigger

from harness_ros.config import (
    RUN_TIME_PARAMETERS,
    HarnessConfig,
    config_from_flat,
    is_read_only_parameter,
    load_config,
    parameter_defaults,
    parameter_descriptions,
    run_time_refusal,
)
from harness_ros.errors import ConfigError, HarnessError, TaskRejectedError
from harness_ros.events import DonePayload, EventType, HarnessEvent
from harness_ros.task_api import (
    ClientMessageError,
    MessageLimits,
    parse_cancel,
    parse_instruction,
    parse_revision,
)

if TYPE_CHECKING:  # what configure builds (imported there, lazily)
    from rclpy.timer import Timer

    from harness_ros.evaluation.contracts import EvaluatorProtocol
    from harness_ros.harness import Harness
    from harness_ros.local_model.server import LocalServer
    from harness_ros.observation.contracts import ObservationSource
    from harness_ros.plugins import PluginRegistry
    from harness_ros.ros.approval import RosApprovalProvider
    from harness_ros.ros.bag.recorder import BagRecorder
    from harness_ros.ros.model_view import ModelViewSource
    from harness_ros.ros.observations import RosObservationSource
    from harness_ros.ros.operator import RosOperatorChannel
    from harness_ros.ros.sensor_executor import SensorNode
    from harness_ros.tools.contracts import Tool

__all__ = ["EVENTS_QOS", "HarnessNode", "main", "parse_instruction"]

EVENTS_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=200,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)
"""Events are a reliable stream: a progress display must not miss the ``done`` event."""

EventListener = Callable[[HarnessEvent], None]

_FINISHING_TASK_JOIN_S = 30.0
_URL_PARAMETERS = ("model.api_base",)
"""Parameters whose URL may carry credentials: declared with them masked."""
"""How long a new task's worker waits for the worker of a task that reached its ``done``."""


def _new_task_id() -> str:
    return f"task-{uuid.uuid4().hex[:12]}"


def _contained(handler: Callable[..., Any]) -> Callable[..., Any]:
    """A client callback that can never take the node down.

    The executor re-raises a callback's exception from ``spin()``, which would end the
    process: whatever a message does to a handler is logged and the node keeps serving.
    """

    def wrapper(self: HarnessNode, *args: Any) -> Any:
        try:
            return handler(self, *args)
        except Exception as err:  # noqa: BLE001  the boundary: log, refuse, keep serving
            self.get_logger().error(f"{handler.__name__} refused a message: {type(err).__name__}: {err}")
            if args and isinstance(args[-1], Trigger.Response):
                args[-1].success = False
                args[-1].message = f"internal error: {type(err).__name__}"
                return args[-1]
            return None

    wrapper.__name__ = handler.__name__
    wrapper.__doc__ = handler.__doc__
    return wrapper


class HarnessNode(LifecycleNode):
    """Runs one task at a time; every setting is a ROS parameter seeded from the YAML config."""

    def __init__(
        self,
        *,
        config_path: Path | None = None,
        node_name: str = "harness",
        **kwargs: Any,
    ) -> None:
        super().__init__(node_name, **kwargs)
        self._config_path_arg = config_path
        self.config: HarnessConfig | None = None
        self.configure_error: str | None = None
        self.no_model_reason: str | None = None
        """Set when no model is configured: the node runs (sensors, tools) but refuses tasks."""
        self._harness: Harness | None = None
        self._observations: RosObservationSource | None = None
        self._sensor_node: SensorNode | None = None
        self._silent_check: Timer | None = None
        self._tools: list[Tool] = []
        self._recorder: BagRecorder | None = None
        self._worker: threading.Thread | None = None
        self._done_task_id: str | None = None
        """The task whose ``done`` event went out (its worker may still be unwinding)."""
        self._accepting = False
        self._lock = threading.Lock()
        self.event_listeners: list[EventListener] = []
        self._limits = MessageLimits()
        self._operator: RosOperatorChannel | None = None
        self._approval: RosApprovalProvider | None = None
        self._model_views: ModelViewSource | None = None
        """Publishes what each decision showed the model (``~/model_view/<view>/compressed``)."""
        self._local_server: LocalServer | None = None
        """The llama.cpp server child of a ``local/...`` model, from configure to cleanup/shutdown."""
        self._harness_model_env: str | None = os.environ.get("HARNESS_MODEL")
        self._current_task_id: str | None = None
        self._sensor_group = ReentrantCallbackGroup()
        self._api_group = MutuallyExclusiveCallbackGroup()
        self._declare_parameters()
        self.autostart = _as_bool(
            self.declare_parameter(
                "autostart",
                True,
                ParameterDescriptor(
                    description="Configure and activate at start; false: wait for a lifecycle manager.",
                    read_only=True,
                    dynamic_typing=True,
                ),
            ).value
        )
        self._events_pub = self.create_publisher(String, "~/events", EVENTS_QOS)

    # ------------------------------------------------------------------ parameters
    def _declare_parameters(self) -> None:
        # Every key of the config model is declared, so a params file alone configures the
        # node; all but the run-time allowlist are read-only: set at start-up, never at run
        # time (any participant on the domain can call ~/set_parameters).
        path_param: str = self.declare_parameter(
            "config_file",
            str(self._config_path_arg or ""),
            ParameterDescriptor(
                description="YAML config; every key can be overridden as a parameter.", read_only=True
            ),
        ).value
        self._config_file = Path(path_param).resolve() if path_param else None
        base = load_config(self._config_file) if self._config_file else HarnessConfig()
        descriptions = parameter_descriptions()
        defaults = parameter_defaults(base)
        self._config_keys = list(defaults)
        hidden = self._url_values(defaults)
        for key, value in defaults.items():
            self.declare_parameter(
                key,
                hidden[key][1] if key in hidden else value,
                ParameterDescriptor(
                    description=descriptions.get(key, ""),
                    dynamic_typing=True,
                    read_only=is_read_only_parameter(key),
                ),
                ignore_override=key in hidden,
            )
        # What a re-configure reads: the config file plus the start-up overrides, as declared
        # (a URL as given, though its parameter shows it masked).
        self._start_up_values = {name: self.get_parameter(name).value for name in self._config_keys}
        self._start_up_values.update({key: used for key, (used, _) in hidden.items()})

    def _url_values(self, defaults: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
        """``model.api_base`` may carry credentials (``http://user:pw@host/v1``). Its value
        (the start-up override, else the config file's) and the value its parameter shows:
        the credentials masked (``http://***@host/v1``). A parameter can be read by any
        participant on the domain (``~/get_parameters``, ``ros2 param dump``) and its
        declaration goes out on /parameter_events, so it is declared masked."""
        from harness_ros.model.redact import redact_url

        # rclpy's overrides (params files, -p) as Node keeps them on Humble, Jazzy and Kilted
        overrides: dict[str, Any] = getattr(self, "_parameter_overrides", {})
        values = {}
        for key in _URL_PARAMETERS:
            if key not in defaults:
                continue
            used = overrides[key].value if key in overrides else defaults[key]
            values[key] = (used, redact_url(used) if isinstance(used, str) else used)
        return values

    def set_parameters(self, parameter_list: list[Parameter[Any]]) -> list[SetParametersResult]:
        return [self.set_parameters_atomically([parameter]) for parameter in parameter_list]

    def set_parameters_atomically(self, parameter_list: list[Parameter[Any]]) -> SetParametersResult:
        """The ``~/set_parameters`` services land here: every change is checked against the
        run-time rule first (rclpy's own read-only check would not say which rule)."""
        for parameter in parameter_list:
            refusal = self._run_time_refusal(parameter)
            if refusal is not None:
                self.get_logger().warning(f"refused to set a parameter: {refusal}")
                return SetParametersResult(successful=False, reason=refusal)
        return super().set_parameters_atomically(parameter_list)

    def _run_time_refusal(self, parameter: Parameter[Any]) -> str | None:
        name = parameter.name
        if not self.has_parameter(name):
            return None  # rclpy refuses an undeclared parameter itself
        if name not in RUN_TIME_PARAMETERS:
            # Also the parameters rclpy declares (use_sim_time would swap the clock every
            # freshness check reads).
            return run_time_refusal(name, parameter.value, None)
        refusal = run_time_refusal(name, parameter.value, self._start_up_values.get(name))
        if refusal is not None:
            return refusal
        flat = {**self._run_time_values(), name: parameter.value}
        try:
            config_from_flat(flat, base_dir=self._base_dir(), origin="ROS parameters")
        except ConfigError as err:
            return f"parameter {name!r}: {err}"
        return None

    def _run_time_values(self) -> dict[str, Any]:
        """The start-up values, with the allowlisted ones as they are now."""
        values = dict(self._start_up_values)
        for name in RUN_TIME_PARAMETERS:
            if name in values:
                values[name] = self.get_parameter(name).value
        return values

    def _base_dir(self) -> Path:
        return self._config_file.parent if self._config_file else Path.cwd()

    def _config_from_parameters(self) -> HarnessConfig:
        flat = self._run_time_values()
        origin = f"{self._config_file} + ROS parameters" if self._config_file else "ROS parameters"
        config = config_from_flat(flat, base_dir=self._base_dir(), origin=origin)
        return config.model_copy(update={"source": self._config_file})

    # ------------------------------------------------------------------ lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            self._configure()
        except HarnessError as err:
            self.configure_error = str(err)
            self.get_logger().error(f"refusing to configure: {err}")
            self._release()
            return TransitionCallbackReturn.FAILURE
        self.configure_error = None
        return TransitionCallbackReturn.SUCCESS

    def _configure(self) -> None:
        from harness_ros.harness import build_harness
        from harness_ros.model import build_model
        from harness_ros.observation.geometry import Footprint
        from harness_ros.plugins import model_provider
        from harness_ros.profile import load_embodiment_profile_document_from_config
        from harness_ros.ros.graph_check import check_graph
        from harness_ros.ros.observations import RosObservationSource
        from harness_ros.ros.ros_tools import build_ros_tools
        from harness_ros.startup import model_visible_views

        config = self._config_from_parameters()
        self._limits = MessageLimits(
            max_bytes=config.task_api.max_message_bytes, max_json_depth=config.task_api.max_json_depth
        )
        config = self._state_outside_install_share(config)
        config = self._serve_local_model(config)
        self._check_model_settings(config)
        profile = load_embodiment_profile_document_from_config(config)
        views = model_visible_views(config, profile)
        subscriber = None
        if config.observations.sensor_executor == "dedicated":
            from harness_ros.ros.sensor_executor import SensorNode

            self._sensor_node = SensorNode(self)
            subscriber = self._sensor_node.node
        self._observations = RosObservationSource(
            self,
            config.observations,
            footprint=Footprint.from_config(config.safety),
            views=views,
            callback_group=self._sensor_group,
            subscriber=subscriber,
        )
        self._warn_missing_sources(config)
        from harness_ros.plugins import ObservationWithExtras, load_plugins

        plugins = load_plugins(config.plugins)
        self._tools = build_ros_tools(self, config.tools, callback_group=self._sensor_group)
        built = {tool.spec.name for tool in self._tools}
        if len(built) < len(config.tools):  # optional bindings that did not fit were left out
            config = config.model_copy(update={"tools": [t for t in config.tools if t.name in built]})
        report = check_graph(self, config, timeout_s=config.graph_check_timeout_s)
        if not report.ok:
            message = report.describe()
            if config.strict_graph:
                raise HarnessError(f"ROS graph check failed (strict_graph): {message}")
            self.get_logger().warning(f"ROS graph check: {message}")
        elif report.notes():  # types that cannot be verified (a peer without type hashes)
            self.get_logger().warning(f"ROS graph check: {report.describe()}")
        self._check_for_silent_sensors(config)
        model = build_model(config, allow_unset=True, providers=model_provider)
        approval = None
        if any(tool.requires_approval for tool in config.tools):
            from harness_ros.ros.approval import RosApprovalProvider

            approval = self._approval = RosApprovalProvider(self, limits=self._limits)
        operator = None
        if config.operator.enabled:
            from harness_ros.ros.operator import RosOperatorChannel

            operator = self._operator = RosOperatorChannel(self, limits=self._limits)
        observations: ObservationSource = (
            ObservationWithExtras(self._observations, plugins.observation_extras)
            if plugins.observation_extras
            else self._observations
        )
        from harness_ros.ros.model_view import ModelViewSource

        # What each decision showed the model, on ~/model_view/<view>/compressed (no re-encoding).
        observations = self._model_views = ModelViewSource(self, observations)
        robot_state = None
        if config.evaluator.state:
            from harness_ros.ros.robot_state import RosRobotState

            robot_state = RosRobotState(self, config.evaluator.state, callback_group=self._sensor_group)
        self._harness = build_harness(
            config,
            robot_state=robot_state,
            tools=[*self._tools, *plugins.tools],
            observations=observations,
            evaluator=self._build_evaluator(config, plugins),
            approval=approval,
            model=model,
            operator=operator,
            plugins=plugins,
        )
        self._model_views.enabled = bool(getattr(self._harness, "model_vision", True))
        self.config = config
        from harness_ros.ros.bag.recorder import attach_recorder

        self._recorder = attach_recorder(self, config)
        views_text = ", ".join(views) or "none"
        used_plugins = plugins.in_use(config.effective_model(), config.evaluator.kind)
        from harness_ros.model.contracts import profile_of

        # Which coaching the model gets, and why (model.profile), said once where the model is.
        coaching = profile_of(model).describe() if model is not None else "model profile: none"
        self.get_logger().info(
            f"configured: model {config.effective_model() or 'none'!r} ({coaching}), views [{views_text}], "
            f"{len(self._tools)} robot tools, plugins [{', '.join(used_plugins) or 'none'}], "
            f"run folders in {config.harness.runs_dir}, memory in {config.memory.dir}"
        )

    def _check_for_silent_sensors(self, config: HarnessConfig) -> None:
        """Once, a few seconds after configure: a sensor topic whose publishers the graph
        shows but that delivered nothing (a transport mismatch, a driver not publishing)
        is logged with the likely causes; the graph check alone cannot see it."""
        from harness_ros.ros.graph_check import silent_topics

        wait_s = max(config.graph_check_timeout_s, 3.0)

        def check() -> None:
            if self._silent_check is not None:
                self._silent_check.cancel()
            if self._observations is None:
                return
            for hint in silent_topics(self, config, self._observations.stats(), wait_s):
                self.get_logger().warning(f"sensor check: {hint}")

        self._silent_check = self.create_timer(wait_s, check, callback_group=self._api_group)

    def _warn_missing_sources(self, config: HarnessConfig) -> None:
        """A params file that misses a key must not silently leave the model blind or the base stuck."""
        observations = config.observations
        if not observations.views:
            self.get_logger().warning(
                "no camera view configured (observations.views): the model sees no image"
            )
        if observations.depth is None and not any(v.depth for v in observations.views.values()):
            self.get_logger().warning(
                "no depth topic configured (observations.depth.topic): no depth in metres "
                "(a view's own depth camera: observations.views.<view>.depth)"
            )
        if observations.clearance is None:
            message = (
                "no clearance source configured (observations.clearance.scan_topic, range_topics or sources)"
            )
            if any(tool.base_motion for tool in config.tools):
                message += ": every base-motion tool will be blocked"
            self.get_logger().warning(message)

    def _state_outside_install_share(self, config: HarnessConfig) -> HarnessConfig:
        """Memory and run logs that would land in the install share go to
        ``$ROS_HOME/harness_ros/<node>/`` instead (see harness_ros.state_dir)."""
        from harness_ros.state_dir import relocate_state_dirs, seed_memory

        state = relocate_state_dirs(config, self.get_fully_qualified_name())
        for key, (configured, used) in state.moved.items():
            self.get_logger().info(f"{key}: {configured} is in the install share; using {used}")
        if "memory.dir" in state.moved:
            seeded = seed_memory(state.config.memory.dir, state.memory_template)
            if seeded:
                self.get_logger().info(f"memory seeded from {state.memory_template}: {len(seeded)} file(s)")
        return state.config

    def _serve_local_model(self, config: HarnessConfig) -> HarnessConfig:
        """For a ``local/...`` model: start llama.cpp's server (a child process, on 127.0.0.1,
        with a random key) and return the config pointed at it; else the config unchanged.
        The server runs until cleanup or shutdown (``_release``); it never installs."""
        from harness_ros.local_model.server import KEY_ENV, LocalServer
        from harness_ros.local_model.serving import local_model_problem, local_request, served_config
        from harness_ros.model.settings import model_key

        requested = local_request(config)
        if requested is None:
            return config
        key = model_key(config)
        problem = local_model_problem(key, f"local/{requested}")
        if problem is not None:
            raise HarnessError(problem)
        log = config.harness.runs_dir / "model_server.log"
        self.get_logger().info(f"{key} local/{requested}: starting llama.cpp's server (log {log}) ...")
        started = time.monotonic()
        server = LocalServer(requested, log, install=False)
        self._local_server = server
        endpoint = server.start()
        os.environ[KEY_ENV] = server.api_key
        if key == "HARNESS_MODEL":
            # HARNESS_MODEL wins over model.model: it must name the served model too.
            os.environ["HARNESS_MODEL"] = endpoint.model
        served, adjusted = served_config(config, endpoint)
        defaults = f"; for a local model: {', '.join(adjusted)}" if adjusted else ""
        self.get_logger().info(
            f"local model served at {endpoint.api_base} as {endpoint.model} after "
            f"{time.monotonic() - started:.1f} s{defaults}"
        )
        return served

    def _stop_local_model(self) -> None:
        server, self._local_server = self._local_server, None
        if server is None:
            return
        how = server.stop()
        if self._harness_model_env is None:
            os.environ.pop("HARNESS_MODEL", None)
        else:
            os.environ["HARNESS_MODEL"] = self._harness_model_env
        self.get_logger().info(f"local model server {how}")

    def _check_model_settings(self, config: HarnessConfig) -> None:
        """Refuse to configure with a model that cannot run (unknown provider, missing key,
        a plugin's scripted provider next to tools it refuses); without any model, configure
        and refuse tasks. Imports litellm when a litellm model is set (about 2 s, once)."""
        from harness_ros.model import NO_MODEL_MESSAGE, validate_model_settings
        from harness_ros.plugins import model_provider

        validate_model_settings(config, require_model=False, providers=model_provider)
        self.no_model_reason = None if config.effective_model() else NO_MODEL_MESSAGE
        if self.no_model_reason is not None:
            self.get_logger().warning(f"{self.no_model_reason}; tasks are refused until then")

    def _build_evaluator(self, config: HarnessConfig, plugins: PluginRegistry) -> EvaluatorProtocol | None:
        kind = config.evaluator.kind
        if kind == "none":
            return None
        if kind == "model":
            from harness_ros.evaluation import ModelEvaluator
            from harness_ros.model import build_model
            from harness_ros.plugins import model_provider

            evaluator_model = build_model(
                config, model=config.evaluator.model, allow_unset=True, providers=model_provider
            )
            return ModelEvaluator(evaluator_model)
        if kind == "checks":  # the deterministic checks of evaluator.evidence only, no model
            from harness_ros.evaluation import ChecksEvaluator

            return ChecksEvaluator()
        from harness_ros.startup import check_evaluator_kind

        check_evaluator_kind(config, plugins.evaluators)
        factory = plugins.evaluators[kind]
        from harness_ros.plugins import EvaluatorContext

        # a plugin's factory (PluginRegistry types what it returns as Any)
        evaluator: EvaluatorProtocol = factory(EvaluatorContext(config=config, node=self))
        return evaluator

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._instruction_sub = self.create_subscription(
            String, "~/instruction", self._on_instruction, 10, callback_group=self._api_group
        )
        self._revise_sub = self.create_subscription(
            String, "~/revise", self._on_revise, 10, callback_group=self._api_group
        )
        self._cancel_task_sub = self.create_subscription(
            String, "~/cancel_task", self._on_cancel_task, 10, callback_group=self._api_group
        )
        self._cancel_srv = self.create_service(
            Trigger, "~/cancel", self._on_cancel, callback_group=self._api_group
        )
        self._reset_srv = self.create_service(
            Trigger, "~/reset", self._on_reset_session, callback_group=self._api_group
        )
        self._accepting = True
        self.get_logger().info("active: send a task on ~/instruction")
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._accepting = False
        self._stop_task("node deactivated")
        for entity in ("_instruction_sub", "_revise_sub", "_cancel_task_sub"):
            sub = getattr(self, entity, None)
            if sub is not None:
                self.destroy_subscription(sub)
        for service in ("_cancel_srv", "_reset_srv"):
            if getattr(self, service, None) is not None:
                self.destroy_service(getattr(self, service))
                setattr(self, service, None)
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._accepting = False
        self._stop_task("node shutting down")
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def _release(self) -> None:
        if self._silent_check is not None:
            self.destroy_timer(self._silent_check)
            self._silent_check = None
        if self._recorder is not None:
            self._recorder.close()
            self._recorder = None
        for tool in self._tools:
            destroy = getattr(tool, "destroy", None)
            if destroy is not None:
                destroy()
        self._tools = []
        if self._model_views is not None:
            self._model_views.destroy()
            self._model_views = None
        if self._observations is not None:
            self._observations.destroy()
            self._observations = None
        if self._sensor_node is not None:
            self._sensor_node.destroy()
            self._sensor_node = None
        if self._operator is not None:
            self._operator.destroy()
            self._operator = None
        if self._approval is not None:
            # A re-configure makes a new one: two request publishers of this node would make
            # `harness-ros approve` refuse to tell which is the node's (publisher_trust).
            self._approval.destroy()
            self._approval = None
        self._harness = None
        # Last: a task stopped above may have had a request in flight to it.
        self._stop_local_model()

    def stop_for_signal(self, signal_name: str) -> None:
        """A stop signal: accept no new task and cancel the running one (the spin loop
        waits for it to end)."""
        self._accepting = False
        running = self.current_task_id
        if running is not None and self._harness is not None:
            self.get_logger().warning(f"{signal_name}: cancelling task {running}, then shutting down")
            self._harness.cancel(f"node interrupted ({signal_name})")
            if self._local_server is not None:
                # Its request in flight (minutes for a first prompt on a CPU) would hold the
                # cancelled task up past the stop bound: stopping the server ends it at once.
                self._stop_local_model()
        else:
            self.get_logger().info(f"{signal_name}: shutting down")

    def _stop_task(self, reason: str, timeout_s: float = 10.0) -> None:
        if self._harness is not None:
            self._harness.cancel(reason)
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout_s)

    # ------------------------------------------------------------------ task API
    @property
    def busy(self) -> bool:
        """A task's worker thread is alive (it may only be publishing its ``done``)."""
        worker = self._worker
        return worker is not None and worker.is_alive()

    def _task_running(self) -> bool:
        """A task runs and has not reached its ``done`` yet."""
        return self.busy and self._done_task_id != self._current_task_id

    def start_task(
        self,
        instruction: str,
        task_id: str | None = None,
        *,
        session_id: str | None = None,
        new_session: bool = False,
    ) -> str:
        """Start a task in a worker thread; raises TaskRejectedError when one is running."""
        task_id = task_id or _new_task_id()
        with self._lock:
            if not self._accepting or self._harness is None:
                raise TaskRejectedError("the harness node is not active")
            if self.no_model_reason is not None:
                raise TaskRejectedError(self.no_model_reason)
            if self._task_running():
                raise TaskRejectedError("another task is running; cancel it first (~/cancel_task)")
            # A task that reached its ``done`` may still be publishing it: a client that saw
            # the ``done`` sends the next task at once. The new worker waits for the old one
            # (bounded), so this callback never blocks and the events keep their order.
            previous = self._worker if self.busy else None
            self._current_task_id = task_id
            self._worker = threading.Thread(
                target=self._run_task,
                args=(instruction, task_id, session_id, new_session, previous),
                name=f"task-{task_id}",
                daemon=True,
            )
            self._worker.start()
        return task_id

    @property
    def current_task_id(self) -> str | None:
        """The id of the running task, or None."""
        with self._lock:
            return self._current_task_id if self._task_running() else None

    def _run_task(
        self,
        instruction: str,
        task_id: str,
        session_id: str | None = None,
        new_session: bool = False,
        previous: threading.Thread | None = None,
    ) -> None:
        if previous is not None:
            previous.join(_FINISHING_TASK_JOIN_S)
        self.get_logger().info(f"task {task_id} started: {instruction!r}")
        status = ""
        harness = self._harness
        try:
            if harness is None:  # released (cleanup, shutdown) while this worker waited
                raise TaskRejectedError("the harness node is not active")
            events = harness.run(instruction, task_id=task_id, session_id=session_id, new_session=new_session)
            for event in events:
                if isinstance(event.payload, DonePayload):
                    status = event.payload.status
                    # Before it goes out: a client that sees this ``done`` may send the next
                    # task at once, and it must find this one finished (under load the
                    # worker can be descheduled between the publish and this line).
                    with self._lock:
                        self._done_task_id = task_id
                self.publish_event(event)
        except TaskRejectedError as err:
            self.publish_event(HarnessEvent(EventType.TASK_REJECTED, task_id, data={"reason": str(err)}))
        except Exception as err:  # noqa: BLE001  a harness bug must not take the node down
            self.get_logger().error(f"task {task_id} crashed: {type(err).__name__}: {err}")
            # Stop whatever the task was doing on the robot before reporting.
            if harness is not None:
                harness.cancel(f"internal error: {err}")
            if not status:
                status = "failed"
                self.publish_event(
                    HarnessEvent(
                        EventType.DONE,
                        task_id,
                        data={"status": "failed", "report": "", "reason": f"internal error: {err}"},
                    )
                )
        self.get_logger().info(f"task {task_id} ended: {status}")

    def publish_event(self, event: HarnessEvent) -> None:
        """Publish on ~/events and feed the listeners; neither may break the running task."""
        try:
            self._events_pub.publish(String(data=event.to_json()))
        except Exception as err:  # noqa: BLE001  e.g. the context is shutting down
            self.get_logger().warning(f"cannot publish a {event.type.value} event: {err}")
        for listener in list(self.event_listeners):
            try:
                listener(event)
            except Exception as err:  # noqa: BLE001  a recorder fault must not stop the robot task
                self.get_logger().error(f"event listener {listener!r} failed: {type(err).__name__}: {err}")

    def _reject(self, task_id: str | None, reason: str, *, requested: str | None = None) -> None:
        """``task_rejected`` under the rejected request's own id, never the running task's.

        A request that reuses the running task's id (or names none) gets a fresh id and
        carries what it asked for in ``requested_task_id``: a client following the running
        task must not read the refusal as the end of its task.
        """
        running = self.current_task_id
        if task_id is None or task_id == running:
            requested = requested if requested is not None else task_id
            task_id = f"rejected-{uuid.uuid4().hex[:12]}"
        data: dict[str, Any] = {"reason": reason}
        if requested is not None:
            data["requested_task_id"] = requested
        self.get_logger().warning(f"task request rejected ({task_id}): {reason}")
        self.publish_event(HarnessEvent(EventType.TASK_REJECTED, task_id, data=data))

    def _refuse(self, request: str, reason: str, *, task_id: str | None = None) -> None:
        """A revise/cancel that does not apply: an event for the client, the task is untouched."""
        self.get_logger().warning(f"{request} refused: {reason}")
        event_id = task_id if task_id is not None and task_id != self.current_task_id else "unaddressed"
        self.publish_event(
            HarnessEvent(
                EventType.REQUEST_REFUSED,
                event_id,
                data={"request": request, "reason": reason, "requested_task_id": task_id},
            )
        )

    @_contained
    def _on_instruction(self, msg: String) -> None:
        try:
            request = parse_instruction(msg.data, self._limits)
        except ClientMessageError as err:
            self._reject(None, str(err))
            return
        if request.task_id == self.current_task_id:
            self._reject(
                request.task_id,
                f"task id {request.task_id!r} is the running task's; use a new id",
                requested=request.task_id,
            )
            return
        try:
            self.start_task(
                request.instruction,
                request.task_id,
                session_id=request.session_id,
                new_session=request.new_session,
            )
        except TaskRejectedError as err:
            self._reject(request.task_id, str(err))

    @_contained
    def _on_revise(self, msg: String) -> None:
        try:
            request = parse_revision(msg.data, self._limits)
        except ClientMessageError as err:
            self._refuse("revise", str(err))
            return
        running = self.current_task_id
        if running is None or self._harness is None:
            self._refuse("revise", "no task is running", task_id=request.task_id)
            return
        if request.task_id is None:
            self.get_logger().warning(
                f"unaddressed revision applied to the running task {running} "
                '(send {"task_id": ..., "instruction": ...} to address a task)'
            )
        elif request.task_id != running:
            self._refuse(
                "revise", f"task {request.task_id!r} is not the running task", task_id=request.task_id
            )
            return
        refused = self._harness.revise(request.text)  # the core's budget: a flood cannot grow the prompt
        if refused is not None:
            self._refuse("revise", refused, task_id=request.task_id)

    @_contained
    def _on_cancel_task(self, msg: String) -> None:
        try:
            request = parse_cancel(msg.data, self._limits)
        except ClientMessageError as err:
            self._refuse("cancel", str(err))
            return
        running = self.current_task_id
        if running is None or request.task_id != running or self._harness is None:
            self._refuse("cancel", f"task {request.task_id!r} is not running", task_id=request.task_id)
            return
        self.get_logger().info(f"cancel requested for task {running}: {request.reason}")
        self._harness.cancel(request.reason)

    @_contained
    def _on_reset_session(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """``~/reset``: the next task starts a fresh session (the running task is not touched)."""
        if self._harness is None:
            response.success = False
            response.message = "the harness node is not configured"
            return response
        session_id = self._harness.session.reset()
        self.get_logger().info(f"session reset: the next task starts session {session_id}")
        response.success = True
        response.message = f"new session {session_id}"
        return response

    @_contained
    def _on_cancel(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        running = self.current_task_id
        cancelled = (
            running is not None
            and self._harness is not None
            and self._harness.cancel("cancelled by operator")
        )
        if cancelled:
            self.get_logger().warning(
                f"unaddressed cancel (~/cancel) applied to the running task {running}; "
                "~/cancel_task names the task"
            )
        response.success = bool(cancelled)
        response.message = f"cancel requested for task {running}" if cancelled else "no task is running"
        return response

    def destroy_node(self) -> None:
        self._accepting = False
        self._stop_task("node destroyed", timeout_s=5.0)
        self._release()
        super().destroy_node()


class _StopSignals:
    """SIGINT and SIGTERM stop the node in two steps, instead of rclpy's handler.

    rclpy's own handler shuts the context down at once: a task's in-flight goal can then
    no longer be cancelled, and every publish and log line after it fails with "context is
    invalid". The first signal is only recorded here; the spin loop then cancels the task,
    keeps spinning while the task ends (the goal is cancelled on the robot, the run folder
    records the task as cancelled), and returns. A second signal stops the wait.
    """

    def __init__(self) -> None:
        self.requested: str | None = None
        """The name of the first signal received, or None."""
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # Python runs signal handlers in the main thread only
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous[signum] = signal.signal(signum, self._on_signal)

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _on_signal(self, signum: int, _frame: Any) -> None:
        if self.requested is not None:
            raise KeyboardInterrupt  # the second signal: stop waiting for the task
        self.requested = signal.Signals(signum).name


_SIGNAL_POLL_S = 0.2
"""The longest the spin loop waits in rcl before it looks at a received signal: Python runs
its signal handlers only between bytecodes, never inside a blocking rcl wait."""

_SIGNAL_STOP_S = 10.0
"""How long a stop signal waits for the running task to end before the node shuts down."""


def _spin_until_shutdown(
    executor: MultiThreadedExecutor, node: HarnessNode, stop: _StopSignals | None = None
) -> None:
    """Spin until shutdown or a stop signal; an exception escaping a callback is logged and
    the node keeps serving.

    Client callbacks are contained already (``_contained``); this is the last line for
    anything else (a sensor or library callback), so one bad message never ends the process.
    After a stop signal the loop keeps spinning until the cancelled task has ended (bounded
    by ``_SIGNAL_STOP_S``): its goal cancellation and its last events need the executor.
    """
    stop_by: float | None = None
    while node.context.ok():
        try:
            executor.spin_once(timeout_sec=_SIGNAL_POLL_S if stop is not None else None)
        except (KeyboardInterrupt, ExternalShutdownException):
            raise
        except Exception as err:  # noqa: BLE001  see the docstring
            node.get_logger().error(f"a callback failed, still serving: {type(err).__name__}: {err}")
        if stop is None or stop.requested is None:
            continue
        if stop_by is None:
            stop_by = time.monotonic() + _SIGNAL_STOP_S
            node.stop_for_signal(stop.requested)
        if not node.busy:
            return
        if time.monotonic() > stop_by:
            node.get_logger().error(
                f"the task did not end within {_SIGNAL_STOP_S:.0f} s of {stop.requested}; "
                "shutting down anyway"
            )
            return


def _as_bool(value: Any) -> bool:
    """A bool parameter that may arrive as text from a launch substitution ("false")."""
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "0", "no", "off", "")
    return bool(value)


def run_node(config_path: Path | None, *, ros_args: list[str] | None = None, autostart: bool = True) -> int:
    """Spin a HarnessNode until shutdown; configure+activate at start when ``autostart`` and
    the node's ``autostart`` parameter are both true, else leave the transitions to a
    lifecycle manager (``~/change_state``)."""
    args = ["harness_node", *(ros_args or [])]
    stop = _StopSignals()
    try:
        # Our own SIGINT/SIGTERM handling (_StopSignals): a signal stops the running task
        # first, then the node; the context is shut down last, when the `with` ends.
        from harness_ros.ros.compat import ros_init  # `with rclpy.init` needs Kilted

        with ros_init(args=args, signal_handler_options=SignalHandlerOptions.NO):
            stop.install()
            try:
                node = HarnessNode(config_path=config_path)
            except HarnessError as err:
                print(f"error: {err}", file=sys.stderr)
                return 1
            executor = MultiThreadedExecutor(num_threads=4)
            executor.add_node(node)
            if autostart and node.autostart:
                if node.trigger_configure() != TransitionCallbackReturn.SUCCESS:
                    print(f"error: {node.configure_error}", file=sys.stderr)
                    node.destroy_node()
                    return 1
                node.trigger_activate()
            else:
                node.get_logger().info(
                    "autostart is off: unconfigured until a lifecycle manager calls "
                    f"{node.get_fully_qualified_name()}/change_state"
                )
            try:
                _spin_until_shutdown(executor, node, stop)
            finally:
                node.destroy_node()
                executor.shutdown(timeout_sec=1.0)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        stop.restore()
    return 0


def main(args: list[str] | None = None) -> int:
    """``ros2 run harness_ros harness_node --ros-args --params-file ...``"""
    from rclpy.utilities import remove_ros_args

    argv = list(sys.argv if args is None else args)
    rest = remove_ros_args(args=argv)[1:]
    config_path = Path(rest[0]) if rest else None
    ros_args = argv[argv.index("--ros-args") :] if "--ros-args" in argv else []
    return run_node(config_path, ros_args=ros_args)


if __name__ == "__main__":
    sys.exit(main())
