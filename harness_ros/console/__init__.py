"""``harness-ros console``: a live operator console in the browser for one harness node.

Pure Python (no rclpy): ``contracts`` holds what the console knows of the node (tasks,
events, pending approvals and questions, the model's latest views) and the rules it
enforces (the token, the approval hash); ``app`` is the Starlette application that serves
it. The ROS side (``harness_ros.ros.console_client``) is a client of the node like
``harness-ros task``, ``approve`` and ``answer``, and feeds a ``ConsoleState``.
"""

from harness_ros.console.contracts import (
    ConsoleBackend,
    ConsoleRefusal,
    ConsoleState,
    approval_hash,
    new_token,
    token_matches,
)

__all__ = [
    "ConsoleBackend",
    "ConsoleRefusal",
    "ConsoleState",
    "approval_hash",
    "new_token",
    "token_matches",
]
