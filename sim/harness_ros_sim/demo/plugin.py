"""The demo's plugin: the scripted demo policy as the litellm provider ``harness_demo``.

Registered through the ``harness_ros.plugins`` entry point, so the model adapter never
imports the demo: models ``harness_demo/...`` resolve to it only where it is installed.
It is registered as what it is, not a language model, with a label every output uses,
and it refuses any config that binds a tool the simulator does not serve: a script
written for the sim never drives a real robot.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from harness_ros.plugins.contracts import PluginRegistry
from harness_ros_sim.names import DEMO_PROVIDER, POLICY_LABEL, SIM_INTERFACE_PACKAGE

if TYPE_CHECKING:
    from harness_ros.config import HarnessConfig, ToolBinding

__all__ = ["register", "scripted_policy_problem"]

_EXAMPLES = "e.g. openai/gpt-4o-mini, anthropic/..., ollama/..."


def _register_provider(litellm: Any) -> None:
    # import_module (not ``from harness_ros_sim.demo import policy``): it honours sys.modules.
    policy = importlib.import_module("harness_ros_sim.demo.policy")
    policy.register(litellm)


def _is_sim_tool(tool: ToolBinding) -> bool:
    return tool.type.split("/", 1)[0] == SIM_INTERFACE_PACKAGE


def scripted_policy_problem(config: HarnessConfig, key: str, name: str, require_tools: bool) -> str | None:
    """Why the scripted demo policy may not run with this config, or None.

    Any bound tool that is not the sim's is refused. ``require_tools`` (the node,
    ``check``) also refuses a config that binds no sim tool: the policy is a script
    for the simulator and has nothing to do anywhere else. Offline consolidation
    (replay, ``memory consolidate``) binds no tools and may use it.
    """
    foreign = [tool for tool in config.tools if not _is_sim_tool(tool)]
    if foreign:
        listed = ", ".join(f"{tool.name} ({tool.type})" for tool in foreign)
        noun = "tool {} is" if len(foreign) == 1 else "tools {} are"
        detail = f"{noun.format(listed)} not the simulator's ({SIM_INTERFACE_PACKAGE})"
    elif require_tools and not config.tools:
        detail = f"this config binds no tool of the simulator ({SIM_INTERFACE_PACKAGE})"
    else:
        return None
    return (
        f"{key} {name!r} is the scripted demo policy, not a language model; it only drives "
        f"the simulated robot (config/sim.yaml, harness-ros demo, harness-ros eval), and {detail}. "
        f"Set model.model or HARNESS_MODEL to a language model ({_EXAMPLES})"
    )


def register(registry: PluginRegistry) -> None:
    registry.add_model_provider(
        DEMO_PROVIDER,
        _register_provider,
        language_model=False,
        label=POLICY_LABEL,
        config_problem=scripted_policy_problem,
    )
