"""The names the simulated robots are known by, in one place (the harness knows none of them).

The scripted demo policy is the litellm provider ``harness_demo``; the sim's actions come
from the interface package ``harness_sim_msgs``.
"""

from __future__ import annotations

__all__ = ["DEMO_MODEL", "DEMO_PROVIDER", "POLICY_LABEL", "SIM_INTERFACE_PACKAGE"]

DEMO_PROVIDER = "harness_demo"
"""The litellm provider prefix of the scripted demo policy: models ``harness_demo/...``."""
DEMO_MODEL = f"{DEMO_PROVIDER}/scripted"
"""The model string of the scripted demo policy (not a language model)."""
POLICY_LABEL = "scripted demo policy, not a language model"
"""How every output names the policy's decisions: never passed off as a model's."""
SIM_INTERFACE_PACKAGE = "harness_sim_msgs"
"""The simulator's interface package: a tool typed from it is one of the sim's own tools."""
