"""Stretch 3 in MuJoCo over ROS 2: the second simulated robot (docs/physics-sim.md).

MuJoCo renders offscreen through EGL unless ``MUJOCO_GL`` says otherwise (``osmesa``
after ``apt-get install libosmesa6``); it reads the variable when it is first imported.
"""

import os

os.environ.setdefault("MUJOCO_GL", "egl")
