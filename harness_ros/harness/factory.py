"""Build a Harness from the configuration: memory, profile, skills, hooks, run log."""

from __future__ import annotations

from collections.abc import Sequence

from harness_ros.config import HarnessConfig
from harness_ros.evaluation import EvaluatorProtocol
from harness_ros.evaluation.evidence import RobotStateSource
from harness_ros.harness.loop import Harness
from harness_ros.hooks import ApprovalProvider, PreExecutionHook, standard_hooks
from harness_ros.model.contracts import ChatModel
from harness_ros.observation.contracts import Clearance, ObservationSource
from harness_ros.operator import OperatorChannel, Session
from harness_ros.plugins import model_provider
from harness_ros.plugins.contracts import PluginRegistry
from harness_ros.tools import Tool

__all__ = ["build_harness"]


def _no_clearance() -> Clearance | None:
    # Without an observation source there is no clearance: base motion is blocked.
    return None


def build_hooks(
    config: HarnessConfig,
    tools: Sequence[Tool],
    observations: ObservationSource | None,
    approval: ApprovalProvider | None,
    extra: Sequence[PreExecutionHook] = (),
) -> list[PreExecutionHook]:
    """The configured chain (``hooks.standard_hooks`` says its order and why)."""
    return standard_hooks(
        config.safety,
        observations.clearance if observations is not None else _no_clearance,
        approval,
        needs_approval=any(tool.spec.requires_approval for tool in tools),
        extra=extra,
        bindings=config.tools,
    )


def build_harness(
    config: HarnessConfig,
    *,
    tools: Sequence[Tool] = (),
    observations: ObservationSource | None = None,
    evaluator: EvaluatorProtocol | None = None,
    approval: ApprovalProvider | None = None,
    model: ChatModel | None = None,
    operator: OperatorChannel | None = None,
    plugins: PluginRegistry | None = None,
    robot_state: RobotStateSource | None = None,
) -> Harness:
    """The configured harness. Raises ``ProfileParseError``, ``SkillError`` or
    ``MemoryStoreError`` with the precise problem when an input is invalid."""
    from harness_ros.memory import FileMemory
    from harness_ros.model import build_model, model_takes_images
    from harness_ros.profile import load_embodiment_profile_document_from_config
    from harness_ros.skills import SkillCatalog

    chat = model if model is not None else build_model(config, providers=model_provider)
    memory = FileMemory.from_config(config.memory, model=chat)
    profile = load_embodiment_profile_document_from_config(config)
    skills = SkillCatalog.discover(config.skills.dir)
    return Harness(
        model=chat,
        tools=tools,
        memory=memory,
        profile=profile,
        skills=skills,
        observations=observations,
        evaluator=evaluator,
        hooks=build_hooks(
            config, tools, observations, approval, plugins.hooks if plugins is not None else ()
        ),
        limits=config.harness,
        evaluator_config=config.evaluator,
        post_execution_wait_s=config.observations.post_execution_wait_s,
        first_frame_timeout_s=config.observations.first_frame_timeout_s,
        runs_dir=config.harness.runs_dir,
        context_window_tokens=config.model.context_window_tokens,
        safety=config.safety,
        operator=operator if config.operator.enabled else None,
        operator_timeout_s=config.operator.answer_timeout_s,
        session=Session(
            idle_timeout_s=config.operator.session_idle_timeout_s,
            max_chars=config.operator.session_max_chars,
            enabled=config.operator.session_continuity,
        ),
        # Only the configured model's name says what it can take (a given chat object's
        # name may be anything); without images the observation says the views are not shown.
        model_vision=model_takes_images(
            config.model, config.effective_model() or getattr(chat, "name", ""), model_provider
        ),
        robot_state=robot_state,
        revision_limits=config.task_api,
    )
