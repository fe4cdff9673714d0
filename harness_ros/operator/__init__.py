"""Talking to the operator: questions mid-task, notices, and session continuity.

The core defines the channel (``OperatorChannel``), the two tools the model uses
(``ask_operator``, ``notify_operator``) and the session that carries a compact summary
of earlier tasks into the next one. The ROS layer implements the channel over topics.
"""

from harness_ros.operator.contracts import (
    ASK_OPERATOR,
    NOTIFY_OPERATOR,
    OperatorAnswer,
    OperatorChannel,
    OperatorQuestion,
)
from harness_ros.operator.session import Session, TaskSummary, summarize_task
from harness_ros.operator.tools import AskOperatorTool, NotifyOperatorTool, operator_tools

__all__ = [
    "ASK_OPERATOR",
    "NOTIFY_OPERATOR",
    "AskOperatorTool",
    "NotifyOperatorTool",
    "OperatorAnswer",
    "OperatorChannel",
    "OperatorQuestion",
    "Session",
    "TaskSummary",
    "operator_tools",
    "summarize_task",
]
