"""The one configuration model of harness_ros.

Loaded from YAML (``load_config``) or from flattened ROS parameters
(``config_from_flat``). Relative paths resolve against the config file's folder.
Unknown keys are rejected; every error names the file and the dotted key.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness_ros.errors import ConfigError

__all__ = [
    "ClearanceConfig",
    "DepthConfig",
    "EvaluatorConfig",
    "HarnessConfig",
    "HarnessLimits",
    "MemoryConfig",
    "ModelConfig",
    "ObservationConfig",
    "RecordConfig",
    "SafetyConfig",
    "SkillsConfig",
    "TaskApiConfig",
    "ToolBinding",
    "ViewTopic",
    "config_from_flat",
    "flatten_config",
    "is_read_only_parameter",
    "load_config",
    "parameter_defaults",
    "parameter_descriptions",
]

DEMO_MODEL = "harness_demo/scripted"
"""litellm model string of the scripted demo policy (not a language model)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(_Model):
    """Which model decides, through litellm."""

    model: str = Field(
        default=DEMO_MODEL,
        description="litellm model string (openai/gpt-4o-mini, anthropic/..., ollama/...). "
        "HARNESS_MODEL overrides it. The default is the scripted demo policy, not a language model.",
    )
    api_base: str | None = Field(default=None, description="Base URL of an OpenAI-compatible server.")
    api_key_env: str | None = Field(
        default=None,
        description="Name of the environment variable holding the API key (never the key itself).",
    )
    timeout_s: float = Field(default=60.0, gt=0, description="Timeout of one model call in seconds.")
    max_retries: int = Field(default=2, ge=0, le=10, description="Retries on transient provider errors.")
    temperature: float | None = Field(default=None, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int | None = Field(default=None, gt=0, description="Cap on tokens per reply.")
    context_window_tokens: int = Field(
        default=128_000, gt=1000, description="Context window used to decide when to compact."
    )
    record_file: Path | None = Field(
        default=None, description="Append every request digest and reply as JSONL (for replay)."
    )


class MemoryConfig(_Model):
    """FileMemory location and consolidation policy."""

    dir: Path = Field(default=Path("memory"), description="Memory root folder.")
    min_confidence: float = Field(default=0.75, description="Entries below this confidence are dropped.")
    consolidator: Literal["model", "none"] = Field(
        default="model", description="'model': the task's model consolidates at task end; 'none': no-op."
    )
    pending_limit: int = Field(default=20, ge=1, description="Failed consolidations kept for retry.")
    resident_budget_chars: int | None = Field(
        default=8000,
        ge=500,
        description="Most characters of MEMORY.md projected into every prompt; beyond it the oldest "
        "model-written General Lessons are left out (never operator text) and the operator is warned. "
        "null = no budget.",
    )
    audit_max_bytes: int | None = Field(
        default=5 * 1024 * 1024,
        ge=1024,
        description="audit.jsonl is rotated to audit.jsonl.1 when it would grow past this; null = never.",
    )
    audit_keep: int = Field(default=3, ge=0, description="Rotated audit.jsonl generations kept.")

    @field_validator("min_confidence", mode="before")
    @classmethod
    def _finite_unit(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("must be a number in [0, 1]")
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"must be a finite number in [0, 1], got {value!r}")
        return value


class SkillsConfig(_Model):
    dir: Path | None = Field(default=None, description="Folder of skills/<name>/SKILL.md; none = no skills.")


class HarnessLimits(_Model):
    """Per-task limits and where run logs go."""

    max_turns: int = Field(default=30, ge=1, description="Model decisions per task before it fails.")
    task_timeout_s: float = Field(default=900.0, gt=0, description="Wall time per task.")
    compaction_ratio: float = Field(
        default=0.8, gt=0, lt=1, description="Compact history when the estimate passes this share."
    )
    runs_dir: Path = Field(default=Path("runs"), description="One sub-folder per task with its run log.")
    runs_keep: int = Field(
        default=200, ge=0, description="Run folders kept in runs_dir (oldest removed first); 0 = keep all."
    )
    system_prompt: str | None = Field(default=None, description="Replaces the built-in system prompt.")


class ViewTopic(_Model):
    """A camera topic feeding one Model-Visible View."""

    topic: str = Field(description="Camera topic (sensor_msgs/Image, or CompressedImage when compressed).")
    compressed: bool = Field(default=False, description="sensor_msgs/CompressedImage instead of Image.")
    max_age_s: float = Field(default=1.0, gt=0, description="Older frames are labelled stale.")
    pixel_budget: int = Field(default=320 * 240, ge=64 * 48, description="Max width*height sent.")
    qos: Literal["sensor_data", "reliable"] = Field(
        default="sensor_data", description="'sensor_data' (best effort, matches any publisher) or 'reliable'."
    )


class DepthConfig(_Model):
    topic: str = Field(description="Depth image topic: 16UC1/mono16 in millimetres or 32FC1 in metres.")
    max_age_s: float = Field(default=1.0, gt=0, description="Older depth images are labelled stale.")
    render_preview: bool = Field(default=False, description="Also send a small false-colour rendering.")
    qos: Literal["sensor_data", "reliable"] = Field(
        default="sensor_data", description="'sensor_data' (best effort, matches any publisher) or 'reliable'."
    )


class ClearanceConfig(_Model):
    """Four-direction base clearance: one LaserScan split in sectors, or four Range topics."""

    scan_topic: str | None = Field(
        default=None, description="sensor_msgs/LaserScan split into four direction sectors."
    )
    range_topics: dict[Literal["forward", "left", "backward", "right"], str] | None = Field(
        default=None, description="Four sensor_msgs/Range topics, keyed forward/left/backward/right."
    )
    scan_angle_offset_rad: float = Field(
        default=0.0, description="Angle of the robot's forward direction in the scan frame."
    )
    max_age_s: float = Field(default=0.5, gt=0, description="Older readings block base motion.")
    qos: Literal["sensor_data", "reliable"] = Field(
        default="sensor_data", description="'sensor_data' (best effort, matches any publisher) or 'reliable'."
    )

    @model_validator(mode="after")
    def _one_source(self) -> ClearanceConfig:
        if (self.scan_topic is None) == (self.range_topics is None):
            raise ValueError("set exactly one of scan_topic or range_topics")
        if self.range_topics is not None and len(self.range_topics) != 4:
            raise ValueError("range_topics needs forward, left, backward and right")
        return self


class ObservationConfig(_Model):
    views: dict[str, ViewTopic] = Field(default_factory=dict, description="Model-Visible View -> topic.")
    depth: DepthConfig | None = Field(
        default=None, description="Depth image reported in metres per region; none = no depth."
    )
    clearance: ClearanceConfig | None = Field(
        default=None, description="Base clearance source; none = base motion is always blocked."
    )
    max_decode_pixels: int = Field(
        default=4096 * 3072,
        ge=64 * 48,
        description=(
            "Compressed frames whose header declares more pixels are decoded reduced (JPEG) or refused "
            "(PNG), never expanded in full."
        ),
    )
    jpeg_quality: int = Field(
        default=80, ge=10, le=100, description="JPEG quality of the views sent to the model."
    )
    post_execution_wait_s: float = Field(
        default=2.0, ge=0, description="How long the evaluator waits for frames newer than the tool's end."
    )


class ToolBinding(_Model):
    """An action or service of the robot exposed to the model as a typed tool."""

    name: str = Field(
        pattern=r"^[A-Za-z0-9_.-]+$", description="Tool name the model calls (also the ledger file name)."
    )
    description: str = Field(
        min_length=1, description="What the tool does, for the model: arguments, limits, failure modes."
    )
    action: str | None = Field(default=None, description="Action name (relative names use the namespace).")
    service: str | None = Field(default=None, description="Service name.")
    type: str = Field(description="Interface type string: pkg/action/Name or pkg/srv/Name.")
    input_schema: dict[str, Any] | None = Field(default=None, description="Overrides the derived schema.")
    required_arguments: list[str] = Field(
        default_factory=list,
        description="Goal/request fields the model must give (a derived schema marks none required).",
    )
    physical: bool = Field(
        default=True, description="The tool moves the robot or the world (false: a pure query)."
    )
    evaluated: bool = Field(
        default=False, description="Run the evaluator on post_condition after the tool finishes."
    )
    post_condition: str | None = Field(
        default=None, description="What must hold afterwards, judged by the evaluator."
    )
    segment: bool = Field(default=False, description="The evaluator may answer 'process' (keep going).")
    base_motion: bool = Field(
        default=False, description="The tool moves the base: the clearance safety filter applies."
    )
    distance_argument: str | None = Field(
        default=None, description="Argument holding a translation in metres (clamped by the safety filter)."
    )
    direction_argument: str | None = Field(
        default=None, description="Argument naming forward/left/backward/right for the clamp."
    )
    signed_distance: bool = Field(
        default=False,
        description=(
            "The server reads a negative distance as the opposite direction; the safety filter then "
            "rewrites it to the checked direction and a non-negative distance (false: refused)."
        ),
    )
    requires_approval: bool = Field(
        default=False, description="An operator must approve each call (no answer = denied)."
    )
    timeout_s: float = Field(default=60.0, gt=0, description="Goal/call timeout; the goal is then cancelled.")
    server_wait_s: float = Field(default=2.0, gt=0, description="How long to wait for the server.")
    accept_timeout_s: float = Field(
        default=5.0,
        gt=0,
        description="Actions: wait this long for the server to accept the goal, then cancel it by id.",
    )
    success_field: str | None = Field(default="success", description="Result field meaning success.")
    message_field: str | None = Field(default="message", description="Result field with the reason text.")

    @model_validator(mode="after")
    def _one_endpoint(self) -> ToolBinding:
        if (self.action is None) == (self.service is None):
            raise ValueError("set exactly one of action or service")
        kind = "action" if self.action is not None else "srv"
        parts = self.type.split("/")
        if len(parts) != 3 or parts[1] != kind or not all(parts):
            raise ValueError(f"type must look like pkg/{kind}/Name, got {self.type!r}")
        if self.evaluated and not self.post_condition:
            raise ValueError("an evaluated tool needs a post_condition")
        return self


class EvaluatorConfig(_Model):
    kind: Literal["none", "model", "sim"] = Field(
        default="none", description="'model': a vision model judges; 'sim': the sim's ground truth."
    )
    model: str | None = Field(default=None, description="Model for the evaluator; default: the main model.")
    ground_truth_topic: str = Field(default="/sim/ground_truth", description="For kind 'sim'.")
    max_segments: int = Field(default=5, ge=1, description="Bound on 'process' verdicts per run_id.")


class SafetyConfig(_Model):
    footprint_radius_m: float = Field(default=0.3, gt=0, description="Base footprint radius.")
    margin_m: float = Field(default=0.1, ge=0, description="Extra clearance kept around the footprint.")
    max_translation_m: float = Field(default=2.0, gt=0, description="Largest single commanded translation.")
    approval_timeout_s: float = Field(default=30.0, gt=0, description="No operator answer means denied.")


class RecordConfig(_Model):
    path: Path | None = Field(default=None, description="Write a rosbag2 (MCAP) here; none = no recording.")
    storage: Literal["mcap", "sqlite3"] = Field(default="mcap", description="rosbag2 storage plugin.")
    image_max_hz: float = Field(default=2.0, gt=0, description="Throttle for recorded image topics.")
    keep: int = Field(
        default=10,
        ge=0,
        description="Recordings kept beside path (path and its time-stamped siblings, oldest removed "
        "first when a new one starts); 0 = keep all.",
    )
    throttle_hz: dict[str, float] = Field(
        default_factory=dict,
        description="Per-topic max rate in Hz (overrides image_max_hz; throttles scans or depth too).",
    )

    @field_validator("throttle_hz")
    @classmethod
    def _positive_rates(cls, value: dict[str, float]) -> dict[str, float]:
        for topic, rate in value.items():
            if not rate > 0:
                raise ValueError(f"rate of {topic!r} must be > 0, got {rate!r}")
        return value


class TaskApiConfig(_Model):
    """Bounds on what clients may send to the node (instructions, revisions, cancels, approvals)."""

    max_message_bytes: int = Field(
        default=16_384, ge=256, le=1_048_576, description="Larger client messages are refused unparsed."
    )
    max_json_depth: int = Field(
        default=8, ge=2, le=64, description="JSON payloads nesting deeper than this are refused."
    )


class HarnessConfig(_Model):
    """Everything harness_ros reads at start-up."""

    model: ModelConfig = Field(default_factory=ModelConfig)
    embodiment_profile_file: Path | None = Field(default=None, description="Markdown Embodiment Profile.")
    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    harness: HarnessLimits = Field(default_factory=HarnessLimits)
    observations: ObservationConfig = Field(default_factory=ObservationConfig)
    tools: list[ToolBinding] = Field(
        default_factory=list, description="Robot actions and services exposed to the model as typed tools."
    )
    evaluator: EvaluatorConfig = Field(default_factory=EvaluatorConfig)
    safety: SafetyConfig = Field(default_factory=SafetyConfig)
    record: RecordConfig = Field(default_factory=RecordConfig)
    task_api: TaskApiConfig = Field(default_factory=TaskApiConfig)
    graph_check_timeout_s: float = Field(default=5.0, ge=0, description="Start-up wait for the ROS graph.")
    strict_graph: bool = Field(default=False, description="Refuse to activate when the graph check fails.")

    source: Path | None = Field(default=None, exclude=True, description="File this config came from.")

    @model_validator(mode="after")
    def _unique_tools(self) -> HarnessConfig:
        seen: set[str] = set()
        for tool in self.tools:
            if tool.name in seen:
                raise ValueError(f"duplicate tool name {tool.name!r}")
            seen.add(tool.name)
        return self

    def effective_model(self) -> str:
        """The model string after the HARNESS_MODEL override."""
        return os.environ.get("HARNESS_MODEL") or self.model.model


_PATH_KEYS: tuple[tuple[str, ...], ...] = (
    ("embodiment_profile_file",),
    ("skills", "dir"),
    ("memory", "dir"),
    ("harness", "runs_dir"),
    ("model", "record_file"),
    ("record", "path"),
)


def _format_validation_error(err: ValidationError, origin: str) -> str:
    lines = [f"Invalid configuration ({origin}):"]
    for item in err.errors():
        key = ".".join(str(part) for part in item["loc"]) or "<root>"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key"
        lines.append(f"  {key}: {message}")
    return "\n".join(lines)


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    """Resolve path keys against ``base``, defaults included, so a YAML file and the same
    keys given as ROS parameters (where every key is explicit) land in the same folders."""
    for keys in _PATH_KEYS:
        node: Any = data
        model: Any = HarnessConfig
        for key in keys[:-1]:
            model = model.model_fields[key].annotation
            if isinstance(node, dict) and node.get(key) is None:
                node[key] = {}
            node = node.get(key) if isinstance(node, dict) else None
        default = model.model_fields[keys[-1]].default
        if isinstance(node, dict) and keys[-1] not in node and isinstance(default, Path):
            node[keys[-1]] = str(default)
        if isinstance(node, dict) and isinstance(node.get(keys[-1]), str):
            value = Path(os.path.expandvars(node[keys[-1]])).expanduser()
            node[keys[-1]] = value if value.is_absolute() else (base / value).resolve()


def config_from_dict(data: dict[str, Any], *, base_dir: Path, origin: str) -> HarnessConfig:
    """Validate a raw mapping; relative paths resolve against ``base_dir``."""
    if not isinstance(data, dict):
        raise ConfigError(f"Invalid configuration ({origin}): the top level must be a mapping")
    data = {key: (dict(value) if isinstance(value, dict) else value) for key, value in data.items()}
    _resolve_paths(data, base_dir)
    try:
        return HarnessConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format_validation_error(err, origin)) from None


def load_config(path: str | Path) -> HarnessConfig:
    """Load and validate a YAML config file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"Cannot read configuration {str(path)!r}: {err.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"Invalid configuration ({path}): not valid YAML: {err}") from None
    except RecursionError:
        raise ConfigError(f"Invalid configuration ({path}): YAML nests too deeply") from None
    if data is None:
        data = {}
    config = config_from_dict(data, base_dir=path.resolve().parent, origin=str(path))
    return config.model_copy(update={"source": path.resolve()})


YAML_STRING_KEYS = frozenset({"tools", "observations.views", "record.throttle_hz"})
"""Keys whose value is a list or a free-form mapping: one ROS parameter holding YAML text."""


def flatten_config(config: HarnessConfig) -> dict[str, Any]:
    """Dotted-key view of a config (what the ROS node declares as parameters).

    Mappings become dotted keys; lists (tools) and free-form dicts stay as YAML strings.
    """
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and prefix not in YAML_STRING_KEYS:
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), item)
        elif isinstance(value, list | dict):
            flat[prefix] = yaml.safe_dump(value, sort_keys=False)
        elif isinstance(value, Path):
            flat[prefix] = str(value)
        else:
            flat[prefix] = value

    walk("", config.model_dump(mode="json", exclude={"source"}))
    return flat


READ_ONLY_PARAMETER_PREFIXES: tuple[str, ...] = (
    "config_file",
    "safety.",
    "tools",
    "observations.clearance",
    "task_api.",
)
"""Safety-relevant ROS parameters: set at start-up (YAML, params file, launch), never at run time.

The safety limits, the tool bindings (their ``base_motion``, ``requires_approval`` and
``signed_distance`` flags), the clearance source and the client-message bounds are
what stands between the model and the robot; a ``set_parameters`` call followed by a
lifecycle re-configure must not be able to weaken them.
"""


def is_read_only_parameter(key: str) -> bool:
    return any(key == prefix.rstrip(".") or key.startswith(prefix) for prefix in READ_ONLY_PARAMETER_PREFIXES)


def _leaf_fields(prefix: str, model: type[BaseModel]) -> Iterator[tuple[str, Any]]:
    """(dotted key, pydantic FieldInfo) of every parameter of ``model``, optional sections included."""
    for name, info in model.model_fields.items():
        if info.exclude:
            continue
        key = f"{prefix}{name}"
        annotation = info.annotation
        options = (
            [a for a in get_args(annotation) if a is not type(None)]
            if get_origin(annotation)
            in (
                Union,
                UnionType,
            )
            else [annotation]
        )
        inner = options[0] if len(options) == 1 else None
        if key in YAML_STRING_KEYS:
            yield key, info
        elif isinstance(inner, type) and issubclass(inner, BaseModel):
            yield from _leaf_fields(f"{key}.", inner)
        elif get_origin(inner) is dict and get_origin(get_args(inner)[0]) is Literal:
            for literal in get_args(get_args(inner)[0]):
                yield f"{key}.{literal}", info
        else:
            yield key, info


def parameter_descriptions() -> dict[str, str]:
    """Dotted key -> description (shown by ``ros2 param describe``)."""
    return {key: info.description or "" for key, info in _leaf_fields("", HarnessConfig)}


def parameter_defaults(config: HarnessConfig) -> dict[str, Any]:
    """Every dotted key of the model with ``config``'s value; ``""`` means unset.

    Keys of optional sections that ``config`` leaves out (``observations.depth.topic``...)
    are declared too, as unset, so a params file alone can set them.
    """
    declared: dict[str, Any] = {key: "" for key, _ in _leaf_fields("", HarnessConfig)}
    for key, value in flatten_config(config).items():
        if value is None and any(other.startswith(f"{key}.") for other in declared):
            continue  # an absent optional section: its leaves stay unset
        declared[key] = "" if value is None else value
    return declared


def _prune_empty(node: dict[str, Any]) -> None:
    for key in list(node):
        child = node[key]
        if isinstance(child, dict) and not isinstance(child, _YamlValue):
            _prune_empty(child)
            if not child:
                del node[key]


class _YamlValue(dict):  # type: ignore[type-arg]
    """A mapping parsed from a YAML-text parameter: kept even when empty."""


def config_from_flat(flat: dict[str, Any], *, base_dir: Path, origin: str) -> HarnessConfig:
    """Inverse of ``flatten_config``: dotted keys (ROS parameters) to a validated config.

    String values of list/dict keys are parsed as YAML. Empty strings mean "unset".
    """
    data: dict[str, Any] = {}
    for dotted, raw in flat.items():
        value = raw
        node = data
        parts = dotted.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        if value == "":
            continue
        if dotted in YAML_STRING_KEYS and isinstance(value, str):
            try:
                value = yaml.safe_load(value)
            except yaml.YAMLError as err:
                raise ConfigError(
                    f"Invalid configuration ({origin}): {dotted}: not valid YAML: {err}"
                ) from None
        node[parts[-1]] = _YamlValue(value) if isinstance(value, dict) else value
    # Sections whose every key is unset (a params file that does not use depth) are absent.
    _prune_empty(data)
    return config_from_dict(data, base_dir=base_dir, origin=origin)
