"""The simulated mobile manipulator's core: a kinematic world and an OpenCV renderer (no ROS).

The renderer lives in ``harness_ros_sim.sim.render`` (imports OpenCV); import it from there.
"""

from harness_ros_sim.sim.spec import WorldSpec, apartment_spec, load_world_spec, world_spec_by_name
from harness_ros_sim.sim.world import Activity, Outcome, Pose2D, World

__all__ = [
    "Activity",
    "Outcome",
    "Pose2D",
    "World",
    "WorldSpec",
    "apartment_spec",
    "load_world_spec",
    "world_spec_by_name",
]
