"""Stretch 3 in MuJoCo (harness_ros_sim.physics): the physics real-time factor alone, then
with the cameras rendered, the lidar cast, and a pick; ratios against the physics-alone
baseline measured in the same run.

    .venv/bin/python bench/bench_physics_sim.py [--seconds 10] [--width 320 --height 240]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("MUJOCO_GL", "egl")  # read when mujoco is first imported

import mujoco
import numpy as np

from harness_ros_sim.physics.model import GRIPPER_CAMERA, HEAD_CAMERA
from harness_ros_sim.physics.sim import PhysicsSim


def physics_rtf(sim: PhysicsSim, seconds: float) -> float:
    start_sim, start = sim.time, time.perf_counter()
    sim.advance(seconds)
    return (sim.time - start_sim) / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per measurement")
    parser.add_argument("--width", type=int, default=320)
    parser.add_argument("--height", type=int, default=240)
    parser.add_argument("--frames", type=int, default=20, help="frames per render measurement")
    args = parser.parse_args()
    sim = PhysicsSim(speed=0, width=args.width, height=args.height)
    baseline = physics_rtf(sim, args.seconds)
    print(f"physics alone (500 Hz steps): {baseline:.1f}x real time")

    rgb = mujoco.Renderer(sim.model, args.height, args.width)
    depth = mujoco.Renderer(sim.model, args.height, args.width)
    depth.enable_depth_rendering()
    timings: dict[str, list[float]] = {
        "head rgb": [],
        "head depth": [],
        "gripper rgb": [],
        "gripper depth": [],
    }
    for _ in range(args.frames):
        sim.advance(0.05)
        for camera, label in ((HEAD_CAMERA, "head"), (GRIPPER_CAMERA, "gripper")):
            for renderer, kind in ((rgb, "rgb"), (depth, "depth")):
                start = time.perf_counter()
                renderer.update_scene(sim.data, camera=camera)
                renderer.render()
                timings[f"{label} {kind}"].append(time.perf_counter() - start)
    frame_s = sum(float(np.median(v)) for v in timings.values())
    for name, values in timings.items():
        print(f"{name} {args.width}x{args.height}: {np.median(values) * 1000:.1f} ms median")
    print(
        f"one observation (2 views, rgb + depth): {frame_s * 1000:.0f} ms "
        f"-> at most {1 / frame_s:.1f} Hz on one core"
    )
    start = time.perf_counter()
    for _ in range(100):
        sim.scan()
    print(f"lidar (360 beams, mj_multiRay): {(time.perf_counter() - start) * 10:.2f} ms a scan")

    # Physics with a 2 Hz observation rendered in the same thread (the cost one core pays).
    start_sim, start = sim.time, time.perf_counter()
    while sim.time - start_sim < args.seconds:
        sim.advance(0.5)
        for camera in (HEAD_CAMERA, GRIPPER_CAMERA):
            for renderer in (rgb, depth):
                renderer.update_scene(sim.data, camera=camera)
                renderer.render()
        sim.scan()
    with_render = (sim.time - start_sim) / (time.perf_counter() - start)
    print(
        f"physics + 2 Hz observation: {with_render:.1f}x real time "
        f"({with_render / baseline:.2f} of physics alone)"
    )

    sim.reset()
    start_sim, start = sim.time, time.perf_counter()
    outcome = sim.pick("red_cup")
    pick_rtf = (sim.time - start_sim) / (time.perf_counter() - start)
    print(
        f"pick ({outcome.message}): {sim.time - start_sim:.1f} s simulated at {pick_rtf:.1f}x "
        f"real time ({pick_rtf / baseline:.2f} of idle physics)"
    )
    rgb.close()
    depth.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
