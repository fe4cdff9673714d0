"""Where rclpy differs between the ROS 2 distributions the node runs on.

Humble ships rclpy 3.3.x, Jazzy 7.1.x and Kilted (the pip wheels of ``make``) 9.x. The
code outside this module uses only what all three offer (test/test_rclpy_api_surface.py
checks that against the API each distro's rclpy offers, read from its upstream sources);
every place where they differ goes through a helper here, each branch naming its distro:

- ``ros_init``: ``with rclpy.init(...)`` needs rclpy 7.4+ (Kilted); on Humble and Jazzy
  ``init()`` returns None.
- ``create_subscription_with_info``: a callback taking ``(msg, info)``; Humble's executor
  passes ``msg`` alone, so there the callback gets ``NO_MESSAGE_INFO``.
- ``message_publisher_gid``: ``MessageInfo['publisher_gid']`` arrived with Kilted's rclpy;
  Humble's and Jazzy 7.1's message info carries no publisher GID (publisher trust then
  falls back to the graph: ``harness_ros.ros.publisher_trust``).
- ``gid_key``: an endpoint GID is 24 bytes on Humble's middleware (a 16-byte GUID and
  zero padding), 16 bytes from Iron on.
- ``service_name``: ``Client.service_name`` is Jazzy+; Humble's client has ``srv_name``.
- ``ParameterSetter``: ``rclpy.parameter_client`` is absent on Humble; the
  ``set_parameters`` service of ``rcl_interfaces`` is the same on all three.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rclpy.client import Client
    from rclpy.context import Context
    from rclpy.node import Node
    from rclpy.signals import SignalHandlerOptions
    from rclpy.subscription import Subscription
    from rclpy.task import Future

__all__ = [
    "GID_SIZE",
    "NO_MESSAGE_INFO",
    "ParameterSetter",
    "create_subscription_with_info",
    "gid_key",
    "message_info_carries_gid",
    "message_publisher_gid",
    "ros_init",
    "service_name",
    "subscription_passes_message_info",
]

GID_SIZE = 16
"""Bytes of an endpoint GID from Iron on (a DDS GUID); Humble's middleware pads it to 24."""

NO_MESSAGE_INFO: dict[str, Any] = {}
"""The message info a ``(msg, info)`` callback gets on Humble, whose executor passes none:
no ``publisher_gid`` key, so publisher trust judges by the graph."""


# ---------------------------------------------------------------------- init
@contextmanager
def ros_init(
    *,
    args: list[str] | None = None,
    context: Context | None = None,
    domain_id: int | None = None,
    signal_handler_options: SignalHandlerOptions | None = None,
) -> Iterator[None]:
    """``rclpy.init(...)`` for the block, shut down when it ends, on every distro.

    Kilted: ``rclpy.init`` returns a context manager (rclpy 7.4+) doing what this does.
    Humble, Jazzy: ``init`` returns None, so it is called plainly and the context is shut
    down in ``finally``, uninstalling the signal handlers that ``init`` installed (as
    Kilted's ``InitContextManager`` does).
    """
    import rclpy
    from rclpy.signals import SignalHandlerOptions, uninstall_signal_handlers
    from rclpy.utilities import get_default_context, try_shutdown

    default = context is None or context is get_default_context()
    installs = (
        signal_handler_options != SignalHandlerOptions.NO
        if signal_handler_options is not None
        else default  # rclpy's default: handlers for the default context only
    )
    rclpy.init(args=args, context=context, domain_id=domain_id, signal_handler_options=signal_handler_options)
    try:
        yield
    finally:
        # the default context is replaced by a fresh one only when shut down as None
        try_shutdown(context=None if default else context)
        if installs:
            uninstall_signal_handlers()


# ---------------------------------------------------------------------- subscriptions
def subscription_passes_message_info() -> bool:
    """Whether the executor hands a two-argument callback the message info.

    Jazzy, Kilted: yes (``Subscription.CallbackType``, rclpy 3.4+). Humble: no, it calls
    every subscription callback with the message alone.
    """
    from rclpy.subscription import Subscription

    return hasattr(Subscription, "CallbackType")


def create_subscription_with_info(
    node: Node,
    msg_type: Any,
    topic: str,
    callback: Callable[[Any, Any], None],
    qos_profile: Any,
    **kwargs: Any,
) -> Subscription[Any]:
    """``node.create_subscription`` for a ``callback(msg, info)`` on every distro.

    Jazzy, Kilted: the callback is passed as it is. Humble: wrapped, and it gets
    ``NO_MESSAGE_INFO`` (Humble's executor passes the message alone).
    """
    if subscription_passes_message_info():
        return node.create_subscription(msg_type, topic, callback, qos_profile, **kwargs)

    def message_only(msg: Any) -> None:  # Humble
        callback(msg, NO_MESSAGE_INFO)

    return node.create_subscription(msg_type, topic, message_only, qos_profile, **kwargs)


# ---------------------------------------------------------------------- GIDs
def message_info_carries_gid(info: Any) -> bool:
    """Whether this rclpy's message info has a ``publisher_gid`` field at all.

    Kilted: yes (None where the middleware gave none). Humble and Jazzy 7.1: no such key
    (rclpy PR #1466, 2025, added it), and Humble's ``NO_MESSAGE_INFO`` has none either.
    """
    return isinstance(info, dict) and "publisher_gid" in info


def message_publisher_gid(info: Any) -> bytes | None:
    """The publisher GID of one received message, or None (no field, or the middleware gave none)."""
    gid = info.get("publisher_gid") if isinstance(info, dict) else None
    data = gid.get("data") if isinstance(gid, dict) else None
    return gid_key(data) if data is not None else None


def gid_key(data: Any) -> bytes:
    """An endpoint or publisher GID as comparable bytes, whatever its storage size.

    Humble: GIDs are stored in 24 bytes, the 16-byte GUID followed by zeros; the padding is
    dropped. Jazzy, Kilted: 16 bytes, unchanged.
    """
    raw = bytes(data)
    if len(raw) > GID_SIZE and not any(raw[GID_SIZE:]):
        return raw[:GID_SIZE]
    return raw


# ---------------------------------------------------------------------- clients
def service_name(client: Client[Any, Any], node: Node) -> str:
    """The fully resolved service name of ``client``.

    Jazzy, Kilted: ``Client.service_name`` (rclpy 5.1+). Humble: the client keeps only the
    name it was created with (``srv_name``); the node resolves it the same way.
    """
    name = getattr(client, "service_name", None)
    if isinstance(name, str):
        return name
    return node.resolve_service_name(client.srv_name)  # Humble


class ParameterSetter:
    """Sets another node's parameters through its ``~/set_parameters`` service.

    ``rclpy.parameter_client.AsyncParameterClient`` exists from Jazzy on only (rclpy 3.6+);
    Humble has none. The service and ``rcl_interfaces/srv/SetParameters`` are the same on
    Humble, Jazzy and Kilted, so this one path serves all three.
    """

    def __init__(self, node: Node, remote_node: str) -> None:
        from rcl_interfaces.srv import SetParameters

        self._request = SetParameters.Request
        self.service = f"{remote_node.rstrip('/')}/set_parameters"
        # generated service classes are untyped (no stubs): Any request and response
        self._client: Client[Any, Any] = node.create_client(SetParameters, self.service)

    def service_is_ready(self) -> bool:
        return bool(self._client.service_is_ready())

    def set_parameters(self, parameters: list[Any]) -> Future[Any]:
        """Send ``parameters`` (``rclpy.parameter.Parameter``); the future's result is the
        ``SetParameters`` response (one result per parameter, in order)."""
        request = self._request(parameters=[parameter.to_parameter_msg() for parameter in parameters])
        return self._client.call_async(request)
