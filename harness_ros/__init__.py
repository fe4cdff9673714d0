"""harness_ros: run an LLM agent on a ROS 2 mobile manipulator, safely, learning from its tool outcomes.

The core (everything outside ``harness_ros.ros``) never imports rclpy. Public names
are imported lazily so ``import harness_ros`` stays cheap (litellm is only imported
when a model is first called).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # configuration and errors
    "HarnessConfig": "harness_ros.config",
    "load_config": "harness_ros.config",
    "HarnessError": "harness_ros.errors",
    "ConfigError": "harness_ros.errors",
    "ProfileParseError": "harness_ros.errors",
    "SkillError": "harness_ros.errors",
    "MemoryStoreError": "harness_ros.errors",
    "LLMError": "harness_ros.errors",
    "ServerUnavailableError": "harness_ros.errors",
    # embodiment profile
    "EmbodimentProfile": "harness_ros.profile",
    "load_embodiment_profile": "harness_ros.profile",
    "load_embodiment_profile_document_from_config": "harness_ros.profile",
    # skills
    "SkillCatalog": "harness_ros.skills",
    # memory
    "FileMemory": "harness_ros.memory",
    "ModelMemoryConsolidator": "harness_ros.memory",
    "ModelToolExperienceSummarizer": "harness_ros.memory",
    "MemoryConsolidatorProtocol": "harness_ros.memory.contracts",
    "ToolExperienceSummarizerProtocol": "harness_ros.memory.contracts",
    "MemoryConsolidation": "harness_ros.memory.contracts",
    "DurableMemoryEntry": "harness_ros.memory.contracts",
    "ToolExperienceEntry": "harness_ros.memory.contracts",
    # model
    "LiteLLMModel": "harness_ros.model",
    # runtime
    "Harness": "harness_ros.harness",
    "HarnessEvent": "harness_ros.events",
    "EventType": "harness_ros.events",
    "TaskStatus": "harness_ros.events",
    "ToolSpec": "harness_ros.tools.contracts",
    "Observation": "harness_ros.observation.contracts",
    "Verdict": "harness_ros.evaluation.contracts",
    "EvaluatorProtocol": "harness_ros.evaluation.contracts",
    "ModelEvaluator": "harness_ros.evaluation",
    "BaseMotionSafetyFilter": "harness_ros.hooks",
    "PreExecutionHook": "harness_ros.hooks.contracts",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness_ros' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
