"""What the two simulated robots' nodes (``sim_robot``, ``gz_manipulation``) share: their
parameters read into one pydantic model, and action servers that accept every goal and
every cancel (each node decides in its execute callback, where it can answer why)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from harness_ros.errors import ConfigError

__all__ = ["SENSOR_QOS", "STATE_QOS", "accepting_action_server", "declare_parameters", "parameter_problems"]

ConfigT = TypeVar("ConfigT", bound=BaseModel)

SENSOR_QOS = QoSProfile(
    reliability=ReliabilityPolicy.RELIABLE,
    history=HistoryPolicy.KEEP_LAST,
    depth=1,
    durability=DurabilityPolicy.VOLATILE,
)
"""Camera, depth and scan topics: reliable, keep-last 1 (matches best-effort and reliable
subscribers alike)."""

STATE_QOS = QoSProfile(
    reliability=ReliabilityPolicy.RELIABLE,
    history=HistoryPolicy.KEEP_LAST,
    depth=1,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
"""The sims' ground-truth QoS: late joiners get the latest state."""


def parameter_problems(err: ValidationError) -> str:
    """Every bad parameter on one line: ``name:=value: why; ...``."""
    return "; ".join(f"{'.'.join(map(str, e['loc']))}:={e['input']!r}: {e['msg']}" for e in err.errors())


def declare_parameters(
    node: Node, config_type: type[ConfigT], descriptions: Mapping[str, str], who: str
) -> ConfigT:
    """Declare one ROS parameter per field of ``config_type`` and validate them together.

    dynamic_typing: rclpy would refuse ``-p time_scale:=2`` (an integer for a double) with
    an exception from inside declare_parameter; pydantic checks the types instead, accepts
    an int for a float and names every bad parameter on one line (``ConfigError``, with
    ``who``: ``Invalid sim_robot parameters: ...``)."""
    values: dict[str, Any] = {}
    for name, field in config_type.model_fields.items():
        descriptor = ParameterDescriptor(description=descriptions[name], dynamic_typing=True)
        values[name] = node.declare_parameter(name, field.default, descriptor).value
    try:
        return config_type.model_validate(values)
    except ValidationError as err:
        raise ConfigError(f"Invalid {who} parameters: {parameter_problems(err)}") from None


def accepting_action_server(
    node: Node, action_type: Any, name: str, execute: Callable[[Any], Any], group: Any
) -> ActionServer:
    """An action server that accepts every goal and cancel request; ``execute`` answers."""
    return ActionServer(
        node,
        action_type,
        name,
        execute_callback=execute,
        goal_callback=lambda _goal: GoalResponse.ACCEPT,
        cancel_callback=lambda _handle: CancelResponse.ACCEPT,
        callback_group=group,
    )
