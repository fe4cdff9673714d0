"""The one configuration model of harness_ros.

Loaded from YAML (``load_config``) or from flattened ROS parameters
(``config_from_flat``). Relative paths resolve against the config file's folder.
Unknown keys are rejected; every error names the file and the dotted key.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness_ros.errors import ConfigError
from harness_ros.moveit_contract import MOVE_GROUP, position_constraint_frames
from harness_ros.validators import TOOL_NAME_PATTERN, confidence_problem
from harness_ros.yaml_safe import YamlTooLarge, safe_load

__all__ = [
    "RUN_TIME_PARAMETERS",
    "VIEW_NAME_PATTERN",
    "ClearanceConfig",
    "DepthConfig",
    "EvaluatorConfig",
    "GraspConfig",
    "HarnessConfig",
    "HarnessLimits",
    "MemoryConfig",
    "ModelConfig",
    "ObservationConfig",
    "OperatorConfig",
    "RecordConfig",
    "RunTimeParameter",
    "SafetyConfig",
    "SensorMountConfig",
    "SkillsConfig",
    "TaskApiConfig",
    "ToolArgument",
    "ToolBinding",
    "ToolPrerequisite",
    "ViewDepthConfig",
    "ViewJointConfig",
    "ViewTopic",
    "config_from_flat",
    "flatten_config",
    "is_read_only_parameter",
    "load_config",
    "parameter_defaults",
    "parameter_descriptions",
    "run_time_refusal",
    "url_problem",
]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def url_problem(url: str) -> str | None:
    """Why ``url`` is not a usable http(s) base URL, or None when it is."""
    if not url or url != url.strip() or any(ch.isspace() for ch in url):
        return f"must be an http:// or https:// URL without spaces, got {url!r}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"must start with http:// or https://, got {url!r}"
    if not parts.hostname:
        return f"has no host name: {url!r}"
    try:
        parts.port  # noqa: B018  raises on a port that is not a number in 0..65535
    except ValueError:
        return f"has an invalid port: {url!r}"
    return None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(_Model):
    """Which model decides, through litellm."""

    model: str | None = Field(
        default=None,
        description="litellm model string (openai/gpt-4o-mini, anthropic/..., ollama/...). "
        "HARNESS_MODEL overrides it. Unset: the node starts but refuses tasks. A plugin may add "
        "a provider of its own (the repository's simulated robots add their scripted demo policy).",
    )
    api_base: str | None = Field(
        default=None, description="Base URL of the model server (http:// or https://), e.g. a local one."
    )
    api_key_env: str | None = Field(
        default=None,
        description="Name of the environment variable holding the API key (never the key itself).",
    )
    timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="Timeout of one model call in seconds; a call that times out is not retried. Fit it "
        "to the model: a hosted model answers within 60 s, a local model on a CPU may need minutes for "
        "its first prompt (a 3,000-token prompt at 30 tokens/s is 100 s): use 300-900 there.",
    )
    max_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Retries on transient provider errors (connection errors, 429, 5xx); never on a timeout.",
    )
    temperature: float | None = Field(default=None, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int | None = Field(default=None, gt=0, description="Cap on tokens per reply.")
    decision_max_tokens: int | None = Field(
        default=None,
        gt=0,
        description="Cap on tokens of a decision's reply (a request that offers tools), below max_tokens; "
        "unset: max_tokens. A call takes under 100 tokens; a small model on a CPU that writes long "
        "text before its call (or none) spends seconds on every token of it.",
    )
    context_window_tokens: int = Field(
        default=128_000, gt=1000, description="Context window used to decide when to compact."
    )
    record_file: Path | None = Field(
        default=None, description="Append every request digest and reply as JSONL (for replay)."
    )
    prompt_cache: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Prompt-cache breakpoints (litellm cache_control) on the tools, the system message and "
        "the history before the newest observation. auto: only for Claude on Anthropic, Bedrock or "
        "Vertex AI, which cache only at such markers (OpenAI and others cache prefixes by themselves); "
        "on: always (e.g. a gateway that forwards them to Claude); off: never.",
    )

    json_mode: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="JSON mode (response_format json_object) on the harness's own JSON requests "
        "(consolidation, ledger summaries, compaction, the model evaluator). auto: on, except for an "
        "OpenAI-compatible server on this machine (api_base on localhost): llama.cpp enforces JSON mode "
        "with a grammar and its server can abort on one; the harness reads the JSON from the reply's "
        "text either way. on: always; off: never.",
    )

    call_prefill: Literal["auto", "on", "off"] = Field(
        default="auto",
        description='Start each decision\'s reply with the opening of a call, {"name": " (an '
        "assistant prefill the server continues). auto: on for model.profile small (the profile "
        "auto is small for an OpenAI-compatible server on this machine; llama.cpp continues a final "
        "assistant message), off otherwise: after a failed call the local 1.5B ended its turn at "
        "once (its first token was the end of turn) where a call was due; made to start a call, it "
        "names a tool. on: always (a server that continues a final assistant message); off: never.",
    )

    vision: Literal["auto", "true", "false"] = Field(
        default="auto",
        description="Whether the model takes images. auto: litellm's capability data (supports_vision); "
        "a model it does not know, or an OpenAI-compatible server on this machine (api_base on "
        "localhost), is text-only. false: never send images (the observation says the views are not "
        "shown and keeps ages, depth and clearance in metres); true: send them.",
    )

    profile: Literal["auto", "small", "hosted"] = Field(
        default="auto",
        description="What kind of model decides, resolved once at start-up (the log says which and why). "
        "small: a small model that the harness coaches (held calls, the held finish, notes on the last "
        "failure or refused call at the end of each decision's request), whose decisions stop where the "
        "harness's own text begins, with a loaded skill kept in the history and, with call_prefill auto, "
        "each reply started as a call; hosted: none of that. auto: small for an OpenAI-compatible server "
        "on this machine (api_base on localhost), hosted otherwise; set it when the URL misleads (a 70B "
        "model on localhost: hosted; a 1.5B model on another machine: small).",
    )

    @field_validator("vision", mode="before")
    @classmethod
    def _vision_word(cls, value: Any) -> Any:
        # YAML reads `vision: true` as a boolean; the ROS parameter is the string.
        return str(value).lower() if isinstance(value, bool) else value

    @field_validator("model", mode="after")
    @classmethod
    def _blank_is_unset(cls, value: str | None) -> str | None:
        # A blank string (an empty ROS parameter, `model: ""`) means no model, never a model named "".
        return None if value is None else (value.strip() or None)

    @field_validator("api_base", mode="after")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        problem = url_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("api_key_env", mode="after")
    @classmethod
    def _variable_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.fullmatch(value):
            # Most likely the key itself was pasted here: do not echo it into logs.
            raise ValueError("must be the name of an environment variable (e.g. OPENAI_API_KEY), not a key")
        return value


class MemoryConfig(_Model):
    """FileMemory location and consolidation policy."""

    dir: Path = Field(default=Path("memory"), description="Memory root folder.")
    min_confidence: float = Field(default=0.75, description="Entries below this confidence are dropped.")
    consolidator: Literal["model", "none"] = Field(
        default="model", description="'model': the task's model consolidates at task end; 'none': no-op."
    )
    pending_limit: int = Field(default=20, ge=1, description="Failed consolidations kept for retry.")
    recovery_lessons: bool = Field(
        default=True,
        description="When a call failed and, after at most three other robot calls, the same tool "
        "succeeded (confirmed by the evaluator), write that recovery as the tool's failure lesson if "
        "the consolidator proposed none for it. Judged by the same rules as the model's entries; "
        "ids the recovery reused from the failed call are named by its argument, not by value.",
    )
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
    world: bool = Field(
        default=True,
        description="World memory: WORLD.md (where objects and places were last confirmed, by what "
        "evidence) is kept, briefed before the first decision and answered by recall_object; false: "
        "no WORLD.md is read or written and recall_object is not offered (docs/memory.md).",
    )

    @field_validator("min_confidence", mode="before")
    @classmethod
    def _finite_unit(cls, value: Any) -> Any:
        problem = confidence_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value


class SkillsConfig(_Model):
    dir: Path | None = Field(default=None, description="Folder of skills/<name>/SKILL.md; none = no skills.")


class HarnessLimits(_Model):
    """Per-task limits and where run logs go."""

    max_turns: int = Field(default=30, ge=1, description="Model decisions per task before it fails.")
    text_reply_reminders: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Plain-text replies in a row (no tool call, no finish_task, no question for the "
        "operator) that get a reminder to call a tool or finish_task; the next one ends the task as "
        "failed (a limit). Plain text never ends a task as done.",
    )
    task_timeout_s: float = Field(default=900.0, gt=0, description="Wall time per task.")
    compaction_ratio: float = Field(
        default=0.8, gt=0, lt=1, description="Compact history when the estimate passes this share."
    )
    runs_dir: Path = Field(default=Path("runs"), description="One sub-folder per task with its run log.")
    runs_keep: int = Field(
        default=200, ge=0, description="Run folders kept in runs_dir (oldest removed first); 0 = keep all."
    )
    system_prompt: str | None = Field(default=None, description="Replaces the built-in system prompt.")


VIEW_NAME_PATTERN = r"[A-Za-z][A-Za-z0-9_-]{0,63}"
"""A view name (a key of observations.views): it names files (``sensors --out``) and model text."""


class ViewJointConfig(_Model):
    """A joint that turns a camera (a pan or tilt joint), read from sensor_msgs/JointState."""

    joint: str = Field(min_length=1, max_length=128, description="Joint name in the JointState messages.")
    positive: Literal["left", "right", "up", "down"] = Field(
        description="Which way a positive joint position turns the camera: pan 'left' (REP 103, "
        "counter-clockwise seen from above) or 'right'; tilt 'up' or 'down'."
    )
    zero_deg: float = Field(
        default=0.0,
        allow_inf_nan=False,
        description="Joint position (degrees) at which the camera looks straight ahead / level.",
    )
    topic: str = Field(default="/joint_states", min_length=1, description="sensor_msgs/JointState topic.")


class ViewDepthConfig(_Model):
    """A depth camera registered to one view (a head and a gripper RGB-D camera each have one)."""

    topic: str = Field(description="Depth image topic: 16UC1/mono16 in millimetres or 32FC1 in metres.")
    compressed: bool = Field(
        default=False, description="sensor_msgs/CompressedImage of the compressedDepth transport."
    )
    camera_info: str | None = Field(
        default=None,
        description="sensor_msgs/CameraInfo of the depth camera: with the view's camera_info the "
        "regions cover what the view shows; without: the depth image's own thirds.",
    )
    max_age_s: float = Field(default=1.0, gt=0, description="Older depth images are labelled stale.")
    render_preview: bool = Field(default=False, description="Also send a small false-colour rendering.")
    qos: Literal["sensor_data", "reliable"] = Field(
        default="sensor_data", description="'sensor_data' (best effort, matches any publisher) or 'reliable'."
    )


class ViewTopic(_Model):
    """A camera topic feeding one Model-Visible View."""

    topic: str = Field(description="Camera topic (sensor_msgs/Image, or CompressedImage when compressed).")
    rotate: Literal[0, 90, 180, 270] = Field(
        default=0,
        description="Degrees clockwise the image is turned before the pixel budget (a camera mounted "
        "sideways: 90 or 270), so that up is up and left is the robot's left; the view's depth "
        "regions turn with it.",
    )
    pan: ViewJointConfig | None = Field(
        default=None, description="The joint that pans this camera: the model is told where it looks."
    )
    tilt: ViewJointConfig | None = Field(
        default=None, description="The joint that tilts this camera: the model is told where it looks."
    )
    depth: ViewDepthConfig | None = Field(
        default=None, description="A depth camera registered to this view, summarised per region."
    )
    compressed: bool = Field(default=False, description="sensor_msgs/CompressedImage instead of Image.")
    camera_info: str | None = Field(
        default=None,
        description="sensor_msgs/CameraInfo topic of this camera: its image geometry, so depth "
        "regions can cover what this view shows (observations.depth.view).",
    )
    max_age_s: float = Field(default=1.0, gt=0, description="Older frames are labelled stale.")
    pixel_budget: int = Field(default=320 * 240, ge=64 * 48, description="Max width*height sent.")
    qos: Literal["sensor_data", "reliable"] = Field(
        default="sensor_data", description="'sensor_data' (best effort, matches any publisher) or 'reliable'."
    )

    @model_validator(mode="after")
    def _joint_directions(self) -> ViewTopic:
        axes = (("pan", self.pan, ("left", "right")), ("tilt", self.tilt, ("up", "down")))
        for key, joint, allowed in axes:
            if joint is not None and joint.positive not in allowed:
                raise ValueError(f"{key}.positive must be {' or '.join(allowed)}, got {joint.positive!r}")
        return self


class DepthConfig(_Model):
    topic: str = Field(description="Depth image topic: 16UC1/mono16 in millimetres or 32FC1 in metres.")
    compressed: bool = Field(
        default=False,
        description="sensor_msgs/CompressedImage of the image_transport compressedDepth plugin "
        "(png; the topic usually ends in /compressedDepth) instead of a raw Image.",
    )
    max_age_s: float = Field(default=1.0, gt=0, description="Older depth images are labelled stale.")
    render_preview: bool = Field(default=False, description="Also send a small false-colour rendering.")
    camera_info: str | None = Field(
        default=None,
        description="sensor_msgs/CameraInfo topic of the depth camera (for observations.depth.view).",
    )
    view: str | None = Field(
        default=None,
        description="The view (a key of observations.views) whose 3x3 grid the depth regions cover, "
        "registered by the two cameras' intrinsics; null: the depth image's own thirds.",
    )
    qos: Literal["sensor_data", "reliable"] = Field(
        default="sensor_data", description="'sensor_data' (best effort, matches any publisher) or 'reliable'."
    )


class SensorMountConfig(_Model):
    """A clearance sensor's pose in the base frame (REP 103: x forward, y left, yaw about z up)."""

    x_m: float = Field(default=0.0, allow_inf_nan=False, description="Distance ahead of the base centre.")
    y_m: float = Field(default=0.0, allow_inf_nan=False, description="Distance left of the base centre.")
    yaw_rad: float | None = Field(
        default=None,
        allow_inf_nan=False,
        description="Heading of the sensor's x axis from the base's forward axis, counter-clockwise. "
        "null: 0 for the scan; for a Range sensor the direction it is listed under.",
    )
    upside_down: bool = Field(
        default=False, description="Mounted z axis down: the scan's angles run clockwise in the base frame."
    )


_DIRECTION_YAW_RAD = {"forward": 0.0, "left": math.pi / 2, "backward": math.pi, "right": -math.pi / 2}


class ClearanceSourceConfig(_Model):
    """One more clearance sensor beside (or instead of) ``scan_topic`` / ``range_topics``:
    a LaserScan or a Range, at its mount in the base frame."""

    name: str | None = Field(default=None, min_length=1, description="Name in messages (default: the topic).")
    scan_topic: str | None = Field(default=None, description="sensor_msgs/LaserScan topic.")
    range_topic: str | None = Field(default=None, description="sensor_msgs/Range topic.")
    mount: SensorMountConfig = Field(
        default_factory=SensorMountConfig,
        description="Pose of the sensor in the base frame; a Range sensor needs yaw_rad (where it faces).",
    )
    angle_offset_rad: float = Field(
        default=0.0,
        allow_inf_nan=False,
        description="Scan only: the robot's forward direction in the scan frame (after mount.yaw_rad).",
    )

    @model_validator(mode="after")
    def _one_topic(self) -> ClearanceSourceConfig:
        if (self.scan_topic is None) == (self.range_topic is None):
            raise ValueError("set exactly one of scan_topic or range_topic")
        if self.range_topic is not None and self.mount.yaw_rad is None:
            raise ValueError("mount.yaw_rad: a range_topic source needs the heading the sensor faces")
        if self.range_topic is not None and self.angle_offset_rad != 0.0:
            raise ValueError("angle_offset_rad is for scan_topic sources only")
        return self


class ClearanceSensor(BaseModel):
    """One clearance sensor as the node subscribes to it (legacy keys and ``sources`` alike).

    ``kind`` ``ranges`` is the legacy group of four ``range_topics``: one source whose
    oldest reading decides its age."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: Literal["scan", "range"]
    topic: str
    topic_key: str
    mount_key: str
    mount: SensorMountConfig
    default_yaw_rad: float
    angle_offset_rad: float = 0.0
    group: str | None = None
    """``ranges`` for the four legacy range_topics (merged as one source), else None."""


class ClearanceConfig(_Model):
    """Base clearance per direction from LaserScans and Range sensors, each at its mount.

    Readings are moved into the base frame and each direction measures the corridor the
    footprint sweeps (`safety.footprint_*`), from the footprint edge. A direction is unknown
    (base motion that way is blocked) unless enough of the readings that look down its
    corridor are usable. With several sources the nearest obstacle wins per direction, and
    a direction is known when any fresh source covers it; a stale source counts for nothing.
    """

    scan_topic: str | None = Field(
        default=None, description="sensor_msgs/LaserScan from the scanner at scan_mount."
    )
    range_topics: dict[Literal["forward", "left", "backward", "right"], str] | None = Field(
        default=None, description="Four sensor_msgs/Range topics, keyed forward/left/backward/right."
    )
    sources: list[ClearanceSourceConfig] = Field(
        default_factory=list,
        description="Further LaserScan/Range sensors, each with its mount (beside scan_topic/range_topics).",
    )
    scan_angle_offset_rad: float = Field(
        default=0.0,
        description="Angle of the robot's forward direction in the scan frame "
        "(applied after scan_mount.yaw_rad).",
    )
    base_frame: str = Field(
        default="base_link",
        min_length=1,
        description="The base frame; with tf2_msgs installed, /tf_static from it to each sensor's "
        "frame_id is used and a mismatch with the mounts below is reported.",
    )
    scan_mount: SensorMountConfig = Field(
        default_factory=SensorMountConfig, description="Pose of the scanner in the base frame."
    )
    range_mounts: dict[Literal["forward", "left", "backward", "right"], SensorMountConfig] = Field(
        default_factory=dict,
        description="Pose of each Range sensor in the base frame; a sensor not listed sits at the base "
        "centre facing its direction.",
    )
    min_valid_fraction: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="Share of the readings looking down a direction's corridor that must be usable; "
        "fewer: that direction is unknown.",
    )
    min_valid_beams: int = Field(
        default=3,
        ge=1,
        description="Scan only: fewer usable beams down a corridor: that direction is unknown.",
    )
    max_age_s: float = Field(default=0.5, gt=0, description="Older readings block base motion.")
    qos: Literal["sensor_data", "reliable"] = Field(
        default="sensor_data", description="'sensor_data' (best effort, matches any publisher) or 'reliable'."
    )

    @model_validator(mode="after")
    def _one_source(self) -> ClearanceConfig:
        if self.scan_topic is not None and self.range_topics is not None:
            raise ValueError(
                "set at most one of scan_topic or range_topics (list further sensors under sources)"
            )
        if self.scan_topic is None and self.range_topics is None and not self.sources:
            raise ValueError("set scan_topic, range_topics or sources")
        if self.range_topics is not None and len(self.range_topics) != 4:
            raise ValueError("range_topics needs forward, left, backward and right")
        if self.range_mounts and self.range_topics is None:
            raise ValueError("range_mounts needs range_topics (the scanner's pose is scan_mount)")
        if "scan_mount" in self.model_fields_set and self.scan_topic is None:
            raise ValueError("scan_mount needs scan_topic (Range sensors are placed by range_mounts)")
        seen: dict[str, str] = {}
        for sensor in self.sensors():
            for label, key in ((sensor.topic, sensor.topic_key), (sensor.name, sensor.mount_key)):
                if label in seen and seen[label] != key:
                    raise ValueError(f"{key}: {label!r} is already used by {seen[label]}")
            seen.setdefault(sensor.topic, sensor.topic_key)
            seen.setdefault(sensor.name, sensor.mount_key)
        return self

    def sensors(self) -> list[ClearanceSensor]:
        """Every clearance sensor: ``scan`` (scan_topic), the four range_topics by direction,
        then each of ``sources`` (named by ``name`` or its topic)."""
        out: list[ClearanceSensor] = []
        prefix = "observations.clearance"
        if self.scan_topic is not None:
            out.append(
                ClearanceSensor(
                    name="scan",
                    kind="scan",
                    topic=self.scan_topic,
                    topic_key=f"{prefix}.scan_topic",
                    mount_key=f"{prefix}.scan_mount",
                    mount=self.scan_mount,
                    default_yaw_rad=0.0,
                    angle_offset_rad=self.scan_angle_offset_rad,
                )
            )
        for direction, yaw in _DIRECTION_YAW_RAD.items():
            if self.range_topics is None or direction not in self.range_topics:
                continue
            out.append(
                ClearanceSensor(
                    name=direction,
                    kind="range",
                    topic=self.range_topics[direction],
                    topic_key=f"{prefix}.range_topics.{direction}",
                    mount_key=f"{prefix}.range_mounts.{direction}",
                    mount=self.range_mounts.get(direction, SensorMountConfig()),
                    default_yaw_rad=yaw,
                    group="ranges",
                )
            )
        for index, source in enumerate(self.sources):
            topic = source.scan_topic if source.scan_topic is not None else source.range_topic
            assert topic is not None  # checked by ClearanceSourceConfig
            kind: Literal["scan", "range"] = "scan" if source.scan_topic is not None else "range"
            out.append(
                ClearanceSensor(
                    name=source.name or topic,
                    kind=kind,
                    topic=topic,
                    topic_key=f"{prefix}.sources[{index}].{kind}_topic",
                    mount_key=f"{prefix}.sources[{index}].mount",
                    mount=source.mount,
                    default_yaw_rad=0.0,
                    angle_offset_rad=source.angle_offset_rad,
                )
            )
        return out


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
    first_frame_timeout_s: float = Field(
        default=5.0,
        ge=0,
        description=(
            "Before a task's first decision, wait until this long after the subscriptions were made for a "
            "first frame of every Model-Visible View and depth; a view still without one is reported as not "
            "started. 0 = do not wait."
        ),
    )
    sensor_executor: Literal["dedicated", "shared"] = Field(
        default="dedicated",
        description=(
            "dedicated: camera, depth and clearance subscriptions live on a companion node "
            "<name>_sensors spun by its own single-threaded executor (5% of a core instead of 30%, see "
            "BENCHMARKS.md, ingest); shared: on the node's multi-threaded executor."
        ),
    )
    raw_subscriptions: bool = Field(
        default=False,
        description=(
            "Camera and depth subscriptions keep the serialized bytes and deserialize only the newest "
            "frame at decision time (see BENCHMARKS.md, ingest)."
        ),
    )

    @field_validator("views")
    @classmethod
    def _view_names(cls, views: dict[str, ViewTopic]) -> dict[str, ViewTopic]:
        for name in views:
            if re.fullmatch(VIEW_NAME_PATTERN, name) is None:
                raise ValueError(
                    f"view name {name[:80]!r} is not a plain name: "
                    "use a letter, then letters, digits, '_' or '-' (at most 64; it names files and "
                    "the model's text)"
                )
        return views

    @model_validator(mode="after")
    def _depth_view(self) -> ObservationConfig:
        depth = self.depth
        shared = None if depth is None or depth.view is None else self.views.get(depth.view)
        if depth is not None and shared is not None and shared.depth is not None:
            raise ValueError(
                f"depth.view {depth.view!r} also has views.{depth.view}.depth: one depth camera per view"
            )
        if depth is None or depth.view is None:
            return self
        view = self.views.get(depth.view)
        if view is None:
            raise ValueError(f"depth.view {depth.view!r} is not a key of views ({sorted(self.views)})")
        if view.camera_info is None or depth.camera_info is None:
            raise ValueError(
                f"depth.view needs views.{depth.view}.camera_info and depth.camera_info "
                "(the registration uses both cameras' intrinsics)"
            )
        return self


def _non_finite(value: Any, path: str) -> tuple[str, float] | None:
    """The key path and value of the first NaN or infinity in nested mappings and lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return path, value
    children: Any = (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    )
    for key, child in children:
        found = _non_finite(child, f"{path}.{key}")
        if found is not None:
            return found
    return None


class ToolArgument(_Model):
    """One model-facing argument of a bound tool (see ``ToolBinding.arguments``)."""

    type: Literal["number", "integer", "string", "boolean"] = Field(
        default="number", description="JSON type the model gives ('string' for a lookup)."
    )
    description: str = Field(default="", description="What the argument means, for the model.")
    unit: str | None = Field(
        default=None, description="Unit of a number (m, s, rad, deg, m/s ...); conversions check it."
    )
    minimum: float | None = Field(default=None, description="Smallest value the model may give.")
    maximum: float | None = Field(default=None, description="Largest value the model may give.")
    enum: list[str | int | float] | None = Field(default=None, description="The only values allowed.")
    required: bool = Field(default=True, description="The model must give it (else default or omitted).")
    default: Any = Field(default=None, description="Value used when the model omits the argument.")
    lookup: str | None = Field(
        default=None, description="Name of a table in the tool's lookups: the argument is one of its keys."
    )


class ToolPrerequisite(_Model):
    """A service call the harness makes itself before each call of a tool (a mode switch)."""

    service: str = Field(
        min_length=1, description="Service to call first (stretch_driver's /switch_to_navigation_mode)."
    )
    type: str = Field(
        default="std_srvs/srv/Trigger",
        pattern=r"^[A-Za-z0-9_]+/srv/[A-Za-z0-9_]+$",
        description="Its type, pkg/srv/Name; a reply without success and message fields counts as done.",
    )
    request: dict[str, Any] = Field(
        default_factory=dict,
        description="Fixed request: field path -> constant (as in a tool's goal; no model arguments).",
    )
    timeout_s: float = Field(default=10.0, gt=0, description="Bound on the call; then the tool fails.")
    server_wait_s: float = Field(default=2.0, gt=0, description="How long to wait for the service.")

    def as_binding(self, tool: str, index: int) -> ToolBinding:
        """The service binding the harness calls (``tools[].prerequisites[index]`` of ``tool``)."""
        return ToolBinding(
            name=f"{tool}.prerequisites.{index}",
            description=f"prerequisite {index} of tool {tool!r}",
            service=self.service,
            type=self.type,
            arguments={},
            goal=dict(self.request),
            timeout_s=self.timeout_s,
            server_wait_s=self.server_wait_s,
        )


class GraspConfig(_Model):
    """A gripper commanded as a joint through FollowJointTrajectory (Stretch's
    ``gripper_aperture``): the grasp reading of its outcome (``ToolBinding.grasp``)."""

    joint: str = Field(
        min_length=1, description="The gripper joint, one of the goal's trajectory.joint_names."
    )
    closed: float = Field(
        description="The joint position where the empty gripper's fingers meet (positions grow as "
        "it opens); a goal at or below closed + tolerance closes it (it may squeeze past closed)."
    )
    tolerance: float = Field(
        default=0.01,
        gt=0,
        description="A closing gripper that stops farther than this above closed holds something.",
    )
    aperture_scale: float = Field(
        default=1.0,
        gt=0,
        description="Metres of aperture per unit of the joint (1 for gripper_aperture, which is in m).",
    )


class ToolBinding(_Model):
    """An action or service of the robot exposed to the model as a typed tool."""

    name: str = Field(
        pattern=TOOL_NAME_PATTERN.pattern,
        description="Tool name the model calls (also the ledger file name).",
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
    arguments: dict[str, ToolArgument] | None = Field(
        default=None,
        description="Model-facing arguments; when set, goal maps them onto the goal/request "
        "(no schema is derived from the type). See docs/robot.md, tool bindings.",
    )
    goal: dict[str, Any] = Field(
        default_factory=dict,
        description="Goal/request field path -> a constant, {value: V}, {arg: NAME, field: KEY}, "
        "each with an optional convert, or {convert: now}. Unlisted fields keep their default.",
    )
    lookups: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Named tables (locations, arm poses): table -> name -> value or mapping of values.",
    )
    required_fields: list[str] = Field(
        default_factory=list,
        description="Goal field paths that must be mapped or constant (adds to the built-in ones).",
    )
    result_fields: dict[str, str] | None = Field(
        default=None, description="Model-facing name -> result field path; none = the whole result."
    )
    feedback_fields: dict[str, str] | None = Field(
        default=None, description="Progress name -> feedback field path; none = the whole feedback."
    )
    error_code_field: str | None = Field(
        default=None, description="Integer result field with an error code (Nav2 error_code ...)."
    )
    error_codes: dict[int, str] = Field(
        default_factory=dict, description="Error code -> words the model reads instead of the number."
    )
    success_codes: list[int] = Field(
        default_factory=lambda: [0], description="Error codes that mean success."
    )
    max_definition_tokens: int = Field(
        default=400, ge=50, description="Budget (estimate) of the tool's model-facing definition."
    )
    optional_fields: list[str] = Field(
        default_factory=list,
        description=(
            "Fields this binding uses only where the installed type has them, as goal.PATH, "
            "result.PATH or feedback.PATH (they differ between ROS distributions). Where absent, a "
            "goal constant is left out (the server's default applies) and a result or feedback "
            "field is not read, with an info log naming the distribution. Goal fields must be "
            "constants, never model arguments. See docs/robot.md, ROS distributions."
        ),
    )
    optional: bool = Field(
        default=False,
        description=(
            "When the binding does not fit the installed interface type at start-up, skip this "
            "tool with a warning instead of refusing to start (false: the node refuses)."
        ),
    )
    grasp: GraspConfig | None = Field(
        default=None,
        description=(
            "A FollowJointTrajectory gripper joint: the result gets aperture_m (from the last "
            "feedback) and holding; a closing goal that stops or stalls short of closed (even one "
            "the server aborted in motion) is a success with holding: true. See docs/robot.md."
        ),
    )
    prerequisites: list[ToolPrerequisite] = Field(
        default_factory=list,
        description=(
            "Service calls the harness makes, in order, before every call of this tool (after "
            "the server wait, before the safety hooks), each recorded as a 'prerequisite' event: "
            "a robot mode switch. One that fails fails the call and the tool does not run. "
            "See docs/robot.md, prerequisites."
        ),
    )

    @model_validator(mode="after")
    def _optional_fields(self) -> ToolBinding:
        for entry in self.optional_fields:
            role, _, path = entry.partition(".")
            if role not in ("goal", "result", "feedback") or not path:
                raise ValueError(
                    f"optional_fields entry {entry!r}: write goal.PATH, result.PATH or feedback.PATH"
                )
            if role == "goal":
                source = self.goal.get(path)
                if path not in self.goal:
                    raise ValueError(f"optional_fields entry {entry!r}: {path!r} is not a goal field it maps")
                if isinstance(source, dict) and "arg" in source:
                    raise ValueError(
                        f"optional_fields entry {entry!r}: goal field {path!r} is a model argument; "
                        "only constants may be left out (the model's value must never be dropped)"
                    )
        return self

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
        if self.arguments is None and self.goal:
            raise ValueError("goal maps arguments: set arguments too (an empty mapping for none)")
        if self.arguments is not None and self.input_schema is not None:
            raise ValueError("set arguments or input_schema, not both")
        # YAML reads .nan and .inf as numbers; a goal built from one would send it to the robot.
        for key, table in (("lookups", self.lookups), ("goal", self.goal)):
            found = _non_finite(table, key)
            if found is not None:
                where, value = found
                raise ValueError(f"{where} is {value}: a number here must be finite")
        return self


class StateSourceConfig(_Model):
    """A robot state topic the evaluator may read: measured state, never a tool's claim."""

    type: Literal["odometry", "pose", "joint_states", "pose_stamped"] = Field(
        description="'odometry' (nav_msgs/Odometry: base pose and speed), 'pose' "
        "(geometry_msgs/PoseWithCovarianceStamped, e.g. a localizer's /amcl_pose in the map "
        "frame), 'joint_states' (sensor_msgs/JointState: arm or gripper joints) or "
        "'pose_stamped' (geometry_msgs/PoseStamped: the end effector's pose, for arm_pose_check)."
    )
    topic: str = Field(min_length=1, description="The topic the state arrives on.")
    max_age_s: float = Field(default=1.0, gt=0, description="Older readings are labelled stale.")
    joints: list[str] = Field(
        default_factory=list,
        description="joint_states only: the joints reported (e.g. the gripper's finger joint); "
        "empty = all joints of the message.",
    )

    @model_validator(mode="after")
    def _joints_for_joint_states(self) -> StateSourceConfig:
        if self.joints and self.type != "joint_states":
            raise ValueError(f"joints is for type 'joint_states', not {self.type!r}")
        return self


class PoseCheckConfig(_Model):
    """A deterministic verdict: the measured base pose against the requested one."""

    source: str = Field(description="A state source (evaluator.state) of type odometry or pose.")
    position_m: float = Field(default=0.25, gt=0, description="Largest distance to the requested x, y.")
    yaw_deg: float = Field(default=15.0, gt=0, le=180, description="Largest heading error.")
    speed_source: str | None = Field(
        default=None,
        description="An odometry source whose speed says whether the base stopped, when "
        "source has no twist (type pose); default: source's own speed (odometry) or none.",
    )
    max_speed_m_s: float = Field(
        default=0.05, gt=0, description="'Stopped': largest measured linear speed (odometry sources)."
    )
    max_turn_deg_s: float = Field(
        default=5.0, gt=0, description="'Stopped': largest measured turn rate (odometry sources)."
    )


class ArmPoseCheckConfig(_Model):
    """A deterministic verdict for an arm move: the measured end-effector pose against the
    target the goal asked for (MoveIt's MoveGroup: its position and orientation constraints)."""

    source: str = Field(
        description="A state source (evaluator.state) of type pose_stamped carrying the "
        "end-effector link's pose in the goal's frame (poses in another frame are not compared)."
    )
    position_m: float | None = Field(
        default=None,
        gt=0,
        description="Largest distance to the requested point; default: the goal's tolerance "
        "(the radius of its position constraint's sphere).",
    )
    orientation: bool = Field(
        default=True, description="Also compare the orientation, when the goal constrains one."
    )
    orientation_deg: float | None = Field(
        default=None,
        gt=0,
        le=180,
        description="Largest rotation from the requested orientation; default: from the goal's "
        "axis tolerances (sqrt(3) times the largest).",
    )
    wait_s: float = Field(
        default=1.0,
        ge=0,
        le=10,
        description="How long to wait for a pose measured after the tool ended (an older one "
        "is no evidence: the verdict is then failure).",
    )


class GraspCheckConfig(_Model):
    """A deterministic verdict for a grasp or a release, from a gripper finger joint's
    measured position: a close that stops short of closed has something between the fingers
    (Stretch's joint_gripper_finger_left, TIAGo's gripper joints); open fingers after a
    place have let go."""

    source: str = Field(description="A state source (evaluator.state) of type joint_states.")
    joint: str = Field(
        min_length=1,
        description="The finger joint read (one of the source's joints, when it lists them).",
    )
    expect: Literal["holding", "empty"] = Field(
        description="'holding': the fingers stopped between holding_above and open_above (after a "
        "close, something is between them); 'empty': at or below holding_above (closed on "
        "nothing) or at or above open_above (open: released)."
    )
    holding_above: float = Field(
        allow_inf_nan=False,
        description="In the joint's unit: above this the fingers stopped short of closed. Measure "
        "it: close on nothing and read the joint; a grasp of the thinnest object stops above.",
    )
    open_above: float | None = Field(
        default=None,
        allow_inf_nan=False,
        description="In the joint's unit: at or above this the fingers are open (released), "
        "above any grasped object's width. Required with expect 'empty'; with 'holding' it "
        "bounds the grasp (default: none, any position above holding_above holds).",
    )
    wait_s: float = Field(
        default=1.0,
        ge=0,
        le=10,
        description="How long to wait for a joint reading measured after the tool ended (an "
        "older one is no evidence: the verdict is then failure).",
    )

    @model_validator(mode="after")
    def _bounds(self) -> GraspCheckConfig:
        if self.open_above is None and self.expect == "empty":
            raise ValueError(
                "open_above: required with expect 'empty' (the position at or above which the "
                "fingers are open: an open gripper after a place holds nothing)"
            )
        if self.open_above is not None and self.open_above <= self.holding_above:
            raise ValueError(
                f"open_above: {self.open_above:g} must be above holding_above ({self.holding_above:g})"
            )
        return self


class ToolEvidenceConfig(_Model):
    """What one evaluated tool's verdict is based on, besides the post-execution observation."""

    state: list[str] = Field(
        default_factory=list, description="State sources (names in evaluator.state) its evaluator gets."
    )
    pose_check: PoseCheckConfig | None = Field(
        default=None,
        description="Judge the post-condition by the measured pose instead of the model "
        "(for post-conditions such as 'the base is stopped at the requested pose').",
    )
    arm_pose_check: ArmPoseCheckConfig | None = Field(
        default=None,
        description="Judge an arm move by the measured end-effector pose instead of the model "
        "(for post-conditions such as 'the gripper is at the requested point').",
    )
    grasp_check: GraspCheckConfig | None = Field(
        default=None,
        description="Judge a grasp or a release by a finger joint's measured position instead of "
        "the model (for post-conditions such as 'the gripper holds the object').",
    )


class EvaluatorConfig(_Model):
    kind: str = Field(
        default="none",
        pattern=r"^[a-z][a-z0-9_]*$",
        description=(
            "'none'; 'model': a vision model judges; 'checks': only the deterministic checks of "
            "evaluator.evidence (pose_check, arm_pose_check, grasp_check), no model: a tool "
            "without one fails; or a kind a plugin registers "
            "('sim': the simulated robot's ground truth, from the package's own plugin)."
        ),
    )
    model: str | None = Field(default=None, description="Model for the evaluator; default: the main model.")
    options: dict[str, str | bool | int | float] = Field(
        default_factory=dict,
        description="Settings of an evaluator kind a plugin registers, read and checked by that "
        "plugin when the node builds the evaluator (a key it does not know is refused there).",
    )
    max_segments: int = Field(default=5, ge=1, description="Bound on 'process' verdicts per run_id.")
    state: dict[str, StateSourceConfig] = Field(
        default_factory=dict,
        description="Named robot state sources (odometry, a localizer's pose, joint states) an "
        "evaluator may read; evaluator.evidence says which tool gets which.",
    )
    evidence: dict[str, ToolEvidenceConfig] = Field(
        default_factory=dict,
        description="Per evaluated tool: the state sources its evaluation gets and an optional "
        "deterministic check (pose_check, arm_pose_check or grasp_check). The goal check at a "
        "task's end gets every state source.",
    )

    @model_validator(mode="after")
    def _evidence_names_state(self) -> EvaluatorConfig:
        for tool, evidence in self.evidence.items():
            for index, name in enumerate(evidence.state):
                if name not in self.state:
                    known = ", ".join(self.state) or "none"
                    raise ValueError(
                        f"evaluator.evidence.{tool}.state[{index}]: unknown state source {name!r} "
                        f"(evaluator.state has: {known})"
                    )
            checks = [
                name
                for name, value in (
                    ("pose_check", evidence.pose_check),
                    ("arm_pose_check", evidence.arm_pose_check),
                    ("grasp_check", evidence.grasp_check),
                )
                if value is not None
            ]
            if len(checks) > 1:
                raise ValueError(
                    f"evaluator.evidence.{tool}: set pose_check (the base) or arm_pose_check "
                    f"(the arm) or grasp_check (the gripper), one of them, not {' and '.join(checks)}"
                )
            grasp = evidence.grasp_check
            if grasp is not None:
                self._check_grasp_source(tool, grasp)
            arm = evidence.arm_pose_check
            if arm is not None:
                arm_source = self.state.get(arm.source)
                if arm_source is None or arm_source.type != "pose_stamped":
                    what = (
                        f"unknown state source {arm.source!r} (evaluator.state has: "
                        f"{', '.join(self.state) or 'none'})"
                        if arm_source is None
                        else f"{arm.source!r} is a {arm_source.type} source; it needs type pose_stamped"
                    )
                    raise ValueError(f"evaluator.evidence.{tool}.arm_pose_check.source: {what}")
            check = evidence.pose_check
            if check is None:
                continue
            source = self.state.get(check.source)
            if source is None:
                known = ", ".join(self.state) or "none"
                raise ValueError(
                    f"evaluator.evidence.{tool}.pose_check.source: unknown state source "
                    f"{check.source!r} (evaluator.state has: {known})"
                )
            if source.type not in ("odometry", "pose"):
                raise ValueError(
                    f"evaluator.evidence.{tool}.pose_check.source: {check.source!r} is a "
                    f"{source.type} source; a pose check needs type odometry or pose"
                )
            if check.speed_source is not None:
                speed = self.state.get(check.speed_source)
                if speed is None or speed.type != "odometry":
                    what = (
                        "unknown state source" if speed is None else f"a {speed.type} source, not odometry:"
                    )
                    raise ValueError(
                        f"evaluator.evidence.{tool}.pose_check.speed_source: {what} {check.speed_source!r}"
                    )
        return self

    def _check_grasp_source(self, tool: str, grasp: GraspCheckConfig) -> None:
        key = f"evaluator.evidence.{tool}.grasp_check"
        source = self.state.get(grasp.source)
        if source is None:
            known = ", ".join(self.state) or "none"
            raise ValueError(
                f"{key}.source: unknown state source {grasp.source!r} (evaluator.state has: {known})"
            )
        if source.type != "joint_states":
            raise ValueError(
                f"{key}.source: {grasp.source!r} is a {source.type} source; a grasp check needs "
                "type joint_states"
            )
        if source.joints and grasp.joint not in source.joints:
            raise ValueError(
                f"{key}.joint: {grasp.joint!r} is not in evaluator.state.{grasp.source}.joints "
                f"({', '.join(source.joints)}): the source would not report it"
            )


class ArmWorkspace(_Model):
    """Where an arm target may lie, in one frame: a box, or a cylinder about the frame's z axis."""

    shape: Literal["box", "cylinder"] = Field(
        description="'box' (x_m, y_m, z_m) or 'cylinder' (radius_m, z_m)."
    )
    x_m: tuple[float, float] | None = Field(default=None, description="Box: [min, max] along x.")
    y_m: tuple[float, float] | None = Field(default=None, description="Box: [min, max] along y.")
    z_m: tuple[float, float] = Field(description="[min, max] along z.")
    radius_m: float | None = Field(default=None, gt=0, description="Cylinder: reach from the z axis.")
    min_radius_m: float = Field(default=0.0, ge=0, description="Cylinder: keep-out column around the z axis.")

    @model_validator(mode="after")
    def _sizes(self) -> ArmWorkspace:
        box = (self.x_m, self.y_m)
        if self.shape == "box" and (None in box or self.radius_m is not None):
            raise ValueError("a box workspace takes x_m, y_m and z_m (no radius_m)")
        if self.shape == "cylinder" and (self.radius_m is None or box != (None, None)):
            raise ValueError("a cylinder workspace takes radius_m and z_m (no x_m, y_m)")
        for name in ("x_m", "y_m", "z_m"):
            span = getattr(self, name)
            if span is not None and not (
                math.isfinite(span[0]) and math.isfinite(span[1]) and span[0] < span[1]
            ):
                raise ValueError(f"{name} must be [min, max] with min < max, got {list(span)}")
        if self.radius_m is not None and self.min_radius_m >= self.radius_m:
            raise ValueError("min_radius_m must be below radius_m")
        return self


class SafetyConfig(_Model):
    footprint_shape: Literal["circle", "rectangle"] = Field(
        default="circle",
        description="Base footprint around the base centre: 'circle' (footprint_radius_m; the "
        "circumscribed circle covers turning in place) or 'rectangle' "
        "(footprint_length_m x footprint_width_m).",
    )
    footprint_radius_m: float = Field(default=0.3, gt=0, description="Base footprint radius (circle).")
    footprint_length_m: float | None = Field(
        default=None, gt=0, description="Rectangle: extent along x (forward), centred on the base centre."
    )
    footprint_width_m: float | None = Field(
        default=None, gt=0, description="Rectangle: extent along y (left), centred on the base centre."
    )
    margin_m: float = Field(default=0.1, ge=0, description="Extra clearance kept around the footprint.")
    max_translation_m: float = Field(default=2.0, gt=0, description="Largest single commanded translation.")
    approval_timeout_s: float = Field(default=30.0, gt=0, description="No operator answer means denied.")
    arm_workspaces: dict[str, ArmWorkspace] = Field(
        default_factory=dict,
        description="Frame -> where a MoveIt target in that frame may lie; a MoveGroup position target "
        "in a frame without one, or outside it, is refused before any goal is sent.",
    )
    max_arm_velocity_scaling: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="Cap on a MoveGroup tool's request.max_velocity_scaling_factor (lowered to it).",
    )

    @model_validator(mode="after")
    def _footprint_sizes(self) -> SafetyConfig:
        sizes = (self.footprint_length_m, self.footprint_width_m)
        if self.footprint_shape == "rectangle" and None in sizes:
            raise ValueError("footprint_shape 'rectangle' needs footprint_length_m and footprint_width_m")
        if self.footprint_shape == "circle" and sizes != (None, None):
            raise ValueError(
                "footprint_length_m and footprint_width_m are for footprint_shape 'rectangle' "
                "(a circle uses footprint_radius_m)"
            )
        return self


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


class OperatorConfig(_Model):
    """Talking to the operator: questions (``ask_operator``), notices and session continuity."""

    enabled: bool = Field(
        default=True, description="Offer ask_operator/notify_operator (the node's ~/questions, ~/answers)."
    )
    answer_timeout_s: float = Field(
        default=120.0, gt=0, description="No answer within this time: the model is told nobody answered."
    )
    session_continuity: bool = Field(
        default=True, description="Start each task with a summary of the session's earlier tasks."
    )
    session_idle_timeout_s: float = Field(
        default=1800.0, gt=0, description="A gap longer than this between tasks starts a new session."
    )
    session_max_chars: int = Field(
        default=2400, ge=200, le=20000, description="Bound on the session summary (about chars/4 tokens)."
    )


class TaskApiConfig(_Model):
    """Bounds on what clients may send to the node (instructions, revisions, cancels, approvals)."""

    max_message_bytes: int = Field(
        default=16_384, ge=256, le=1_048_576, description="Larger client messages are refused unparsed."
    )
    max_json_depth: int = Field(
        default=8, ge=2, le=64, description="JSON payloads nesting deeper than this are refused."
    )
    max_revisions_per_task: int = Field(
        default=16,
        ge=1,
        le=1000,
        description="Revisions (~/revise) one task takes; later ones are refused (never compacted).",
    )
    max_revision_chars_per_task: int = Field(
        default=8_000,
        ge=100,
        le=200_000,
        description="Characters of revisions one task takes in all; a revision past them is refused.",
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
    plugins: list[str] = Field(
        default_factory=list,
        description=(
            "'package.module:callable' entries that add tools, hooks, evaluators, model providers or "
            "observation extras (after the installed 'harness_ros.plugins' entry points)."
        ),
    )
    safety: SafetyConfig = Field(default_factory=SafetyConfig)
    record: RecordConfig = Field(default_factory=RecordConfig)
    task_api: TaskApiConfig = Field(default_factory=TaskApiConfig)
    operator: OperatorConfig = Field(default_factory=OperatorConfig)
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

    @model_validator(mode="after")
    def _limits_within_safety(self) -> HarnessConfig:
        """A distance argument's maximum (a preset's 2.0 m) never exceeds
        ``safety.max_translation_m``: the model sees the limit the safety filter enforces."""
        limit = self.safety.max_translation_m
        tools = []
        for tool in self.tools:
            spec = (tool.arguments or {}).get(tool.distance_argument or "")
            if spec is not None and spec.minimum is not None and spec.minimum > limit:
                raise ValueError(
                    f"tool {tool.name!r}: argument {tool.distance_argument!r} minimum {spec.minimum:g} m "
                    f"is above safety.max_translation_m {limit:g} m"
                )
            if spec is not None and spec.maximum is not None and spec.maximum > limit:
                arguments = dict(tool.arguments or {})
                arguments[tool.distance_argument or ""] = spec.model_copy(update={"maximum": limit})
                tools.append(tool.model_copy(update={"arguments": arguments}))
            else:
                tools.append(tool)
        object.__setattr__(self, "tools", tools)  # frozen model: set once, while validating
        return self

    @model_validator(mode="after")
    def _arm_within_safety(self) -> HarnessConfig:
        """A MoveGroup tool's velocity scaling never exceeds ``safety.max_arm_velocity_scaling``,
        and each constant frame of its position targets has a ``safety.arm_workspaces`` entry."""
        limit = self.safety.max_arm_velocity_scaling
        tools = []
        for tool in self.tools:
            if tool.type != MOVE_GROUP:
                tools.append(tool)
                continue
            for frame in sorted(position_constraint_frames(tool) or ()):
                if frame not in self.safety.arm_workspaces:
                    declared = ", ".join(self.safety.arm_workspaces) or "none"
                    raise ValueError(
                        f"tool {tool.name!r}: its targets are in frame {frame!r}, which has no "
                        f"safety.arm_workspaces entry (declared: {declared})"
                    )
            key = "request.max_velocity_scaling_factor"
            scaling = tool.goal.get(key)
            if isinstance(scaling, (int, float)) and not isinstance(scaling, bool) and scaling > limit:
                _logger.warning(
                    "tool %s: goal %s %g lowered to safety.max_arm_velocity_scaling %g",
                    tool.name,
                    key,
                    scaling,
                    limit,
                )
                tools.append(tool.model_copy(update={"goal": {**tool.goal, key: limit}}))
                continue
            if key in tool.goal and not isinstance(scaling, (int, float)):
                raise ValueError(f"tool {tool.name!r}: goal {key} must be a number (at most {limit:g})")
            tools.append(tool)
        object.__setattr__(self, "tools", tools)  # frozen model: set once, while validating
        return self

    def effective_model(self) -> str | None:
        """The model string after the HARNESS_MODEL override; None when no model is configured."""
        return (os.environ.get("HARNESS_MODEL") or "").strip() or self.model.model


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


_PRESET_MERGED_KEYS = frozenset(
    {"arguments", "goal", "lookups", "result_fields", "feedback_fields", "error_codes"}
)
"""Preset keys whose mapping an override extends instead of replacing; ``arguments`` is
merged key by key two levels deep (``arguments.distance.maximum`` alone keeps the
preset's unit, minimum and description)."""

_DEFAULT_PRESET = "default"
"""The key of a distro-keyed ``preset:`` mapping used when ``$ROS_DISTRO`` names none."""


def _preset_name(name: Any, where: str) -> Any:
    """``preset: NAME``, or ``preset: {jazzy: NAME, default: NAME}`` chosen by ``$ROS_DISTRO``."""
    if not isinstance(name, dict):
        return name
    distro = os.environ.get("ROS_DISTRO", "").strip().lower()
    if distro in name:
        return name[distro]
    if _DEFAULT_PRESET in name:
        return name[_DEFAULT_PRESET]
    keys = ", ".join(map(str, name))
    raise ConfigError(
        f"{where}: no preset for ROS_DISTRO {distro or '(unset)'!r} (keys: {keys}); add a "
        f"{_DEFAULT_PRESET!r} entry"
    )


_logger = logging.getLogger(__name__)

_PRESET_DEFAULTS_TO_SET: dict[str, dict[str, str]] = {
    "move_arm_to": {"trajectory.joint_names": "a Universal Robots (UR) arm's six joint names"},
}
"""Per preset (its ``name``), goal fields whose shipped value fits one robot only: a config
that keeps them is warned. The joint grippers' ``gripper_aperture`` is Stretch's, but it is
also what the preset is for."""


def _warn_kept_preset_defaults(preset: dict[str, Any], entry: dict[str, Any], index: int) -> None:
    goal = raw if isinstance(raw := entry.get("goal"), dict) else {}
    for field, what in _PRESET_DEFAULTS_TO_SET.get(str(preset.get("name")), {}).items():
        shipped = (preset.get("goal") or {}).get(field)
        if shipped is not None and field not in goal:
            _logger.warning(
                "tools.%d (preset %s): goal %s is not set, so the preset's default is used: %s (%s); "
                "set goal.%s to your arm's joints",
                index, entry.get("preset"), field, what, ", ".join(map(str, shipped)), field,
            )  # fmt: skip


def _preset_file(name: str, base_dir: Path) -> Path | None:
    if name.endswith((".yaml", ".yml")):
        path = Path(os.path.expandvars(name)).expanduser()
        candidates = [path if path.is_absolute() else base_dir / path]
    else:
        from harness_ros.paths import share_dir

        candidates = [base_dir / "presets" / f"{name}.yaml"]
        with contextlib.suppress(ConfigError):  # no share folder: only the config's own presets
            candidates.append(share_dir() / "config" / "presets" / f"{name}.yaml")
    return next((c for c in candidates if c.is_file()), None)


def _expand_presets(tools: Any, base_dir: Path, origin: str) -> Any:
    """``tools`` entries with ``preset: NAME`` become the preset's binding with the entry's
    other keys laid over it (config/presets/NAME.yaml, or a file path ending in .yaml)."""
    if not isinstance(tools, list):
        return tools
    out = []
    for index, entry in enumerate(tools):
        if not isinstance(entry, dict) or "preset" not in entry:
            out.append(entry)
            continue
        where = f"Invalid configuration ({origin}): tools.{index}.preset"
        name = _preset_name(entry["preset"], where)
        path = _preset_file(str(name), base_dir) if isinstance(name, str) else None
        if path is None:
            raise ConfigError(f"{where}: no preset {name!r} (config/presets/<name>.yaml or a .yaml path)")
        try:
            preset = safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as err:
            raise ConfigError(f"{where}: cannot read preset {str(path)!r}: {err}") from None
        if not isinstance(preset, dict):
            raise ConfigError(f"{where}: preset {str(path)!r} is not a mapping of binding keys")
        merged = dict(preset)
        for key, value in entry.items():
            if key == "preset":
                continue
            if key in _PRESET_MERGED_KEYS and isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = {**merged[key], **value}
                if key == "arguments":
                    # One argument's keys are merged too: an override of its maximum alone
                    # keeps the preset's unit, minimum and description.
                    for arg, spec in value.items():
                        base = preset[key].get(arg)
                        if isinstance(spec, dict) and isinstance(base, dict):
                            merged[key][arg] = {**base, **spec}
            else:
                merged[key] = value
        _warn_kept_preset_defaults(preset, entry, index)
        out.append(merged)
    return out


def config_from_dict(data: dict[str, Any], *, base_dir: Path, origin: str) -> HarnessConfig:
    """Validate a raw mapping; relative paths resolve against ``base_dir``."""
    if not isinstance(data, dict):
        raise ConfigError(f"Invalid configuration ({origin}): the top level must be a mapping")
    data = {key: (dict(value) if isinstance(value, dict) else value) for key, value in data.items()}
    if "tools" in data:
        data["tools"] = _expand_presets(data["tools"], base_dir, origin)
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
        data = safe_load(text)
    except YamlTooLarge as err:
        raise ConfigError(f"Invalid configuration ({path}): {err}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"Invalid configuration ({path}): not valid YAML: {err}") from None
    except RecursionError:
        raise ConfigError(f"Invalid configuration ({path}): YAML nests too deeply") from None
    if data is None:
        data = {}
    config = config_from_dict(data, base_dir=path.resolve().parent, origin=str(path))
    return config.model_copy(update={"source": path.resolve()})


YAML_STRING_KEYS = frozenset(
    {
        "tools",
        "observations.views",
        "observations.clearance.sources",
        "record.throttle_hz",
        "plugins",
        "evaluator.state",
        "evaluator.evidence",
        "evaluator.options",
    }
)
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


@dataclass(frozen=True)
class RunTimeParameter:
    """One parameter on the run-time allowlist: why changing it is safe, and its rule."""

    reason: str
    lower_only: bool = False
    """Only values at or below the start-up value are accepted."""


RUN_TIME_PARAMETERS: dict[str, RunTimeParameter] = {
    "harness.max_turns": RunTimeParameter(
        "fewer model decisions per task can only end a task sooner; each decision still meets every hook",
        lower_only=True,
    ),
    "harness.task_timeout_s": RunTimeParameter(
        "a shorter wall-time limit can only end a task sooner", lower_only=True
    ),
    "observations.jpeg_quality": RunTimeParameter(
        "only the compression of the images the configured cameras already send to the configured "
        "model; not which cameras, what is decoded, or where the images go"
    ),
}
"""The only ROS parameters that may change while the node runs; every other one is
read-only from start-up (YAML, params file, launch overrides) to shutdown.

Any participant on the ROS domain can call ``~/set_parameters``, so a parameter is
listed only when no value of it can widen what the robot does, redirect the model or
its key, or write or expose anything. A change takes effect at the next lifecycle
re-configure, which otherwise re-reads the start-up values.
"""


def is_read_only_parameter(key: str) -> bool:
    """Every parameter but the run-time allowlist (``RUN_TIME_PARAMETERS``)."""
    return key not in RUN_TIME_PARAMETERS


def run_time_refusal(key: str, value: Any, start_up_value: Any) -> str | None:
    """Why setting parameter ``key`` to ``value`` while the node runs is refused, or None.

    The reason names the parameter and the rule, for the SetParametersResult.
    """
    rule = RUN_TIME_PARAMETERS.get(key)
    if rule is None:
        allowed = ", ".join(sorted(RUN_TIME_PARAMETERS))
        return (
            f"parameter {key!r} is read-only at run time: only {allowed} may change while the node "
            "runs; set it in the config file, params file or launch file and restart the node"
        )
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return f"parameter {key!r} must be a finite number, got {value!r}"
    if rule.lower_only and isinstance(start_up_value, int | float) and value > start_up_value:
        return (
            f"parameter {key!r} may only be lowered at run time (start-up value {start_up_value!r}, "
            f"asked {value!r}): {rule.reason}"
        )
    return None


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
                value = safe_load(value)
            except yaml.YAMLError as err:
                raise ConfigError(
                    f"Invalid configuration ({origin}): {dotted}: not valid YAML: {err}"
                ) from None
        node[parts[-1]] = _YamlValue(value) if isinstance(value, dict) else value
    # Sections whose every key is unset (a params file that does not use depth) are absent.
    _prune_empty(data)
    return config_from_dict(data, base_dir=base_dir, origin=origin)
