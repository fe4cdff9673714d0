"""harness_ros_sim: the simulated robots that harness_ros is tested and demonstrated against.

A package of its own, depending on ``harness_ros`` and never the other way round: the
kinematic sim (``sim``) and its ``sim_robot`` node, the Gazebo files and the
``gz_manipulation`` node, the scripted demo policy and ``harness-ros demo``, and the
learning eval (``learning_eval``, ``harness-ros eval``). It plugs into the harness the way a
user's own package would, through entry points (``setup.py``): the ``sim`` evaluator kind,
the ``harness_demo`` model provider and the ``demo``, ``eval`` and ``sim`` commands.
"""

__version__ = "0.1.0"
