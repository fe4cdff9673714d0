"""Evaluation as exit codes: after an evaluated tool, the harness asks an evaluator
whether the post-condition holds; verdicts are validated fail-closed."""

from __future__ import annotations

from harness_ros.evaluation.checks import CHECKS_KIND, ChecksEvaluator
from harness_ros.evaluation.contracts import (
    EvaluatorProtocol,
    TaskEvaluatorProtocol,
    Verdict,
    VerdictStatus,
    parse_verdict,
)
from harness_ros.evaluation.gate import EvaluationGate
from harness_ros.evaluation.model_evaluator import (
    EVALUATE_SYSTEM_PROMPT,
    ModelEvaluator,
    build_evaluation_messages,
    read_verdict_object,
)

__all__ = [
    "CHECKS_KIND",
    "EVALUATE_SYSTEM_PROMPT",
    "ChecksEvaluator",
    "EvaluationGate",
    "EvaluatorProtocol",
    "ModelEvaluator",
    "TaskEvaluatorProtocol",
    "Verdict",
    "VerdictStatus",
    "build_evaluation_messages",
    "parse_verdict",
    "read_verdict_object",
]
