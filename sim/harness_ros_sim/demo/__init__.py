"""The demo: a scripted policy standing in for a model, its tasks, and the runner.

``harness_ros_sim.demo.policy`` is what model strings ``harness_demo/...`` resolve to
(a litellm custom provider; "scripted demo policy, not a language model").
``harness_ros_sim.demo.runner`` starts the simulated robot and the harness node and runs
the demo tasks (``harness-ros demo``).
"""

from harness_ros_sim.demo.decide import POLICY_LABEL

__all__ = ["POLICY_LABEL"]
