"""Per-episode resets: ``World.reset`` and the sim node's ``~/reset`` service (for ``harness-ros eval``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_ros.errors import HarnessError
from harness_ros_sim.learning_eval import make_scenario, write_world
from harness_ros_sim.sim.spec import apartment_spec
from harness_ros_sim.sim.world import World


def _slips(world: World, object_id: str, attempts: int) -> list[bool]:
    """Pick and put back ``attempts`` times from where the robot is; True where it slipped."""
    results = []
    for _ in range(attempts):
        outcome = world.pick_object(object_id)
        results.append(not outcome.success)
        if outcome.success:
            surface = world.objects[object_id].spec.surface
            assert world.place_object(surface).success
    return results


def test_reset_returns_to_the_initial_state_and_version_keeps_growing() -> None:
    world = World(apartment_spec(), seed=3)
    initial = world.ground_truth()
    assert world.navigate_to("red_cup").success
    assert world.pick_object("red_cup").success
    before = world.version
    world.reset()
    state = world.ground_truth()
    assert world.version > before
    assert state["actions"] == [] and state["gripper"] == {"holding": None}
    for key in ("robot", "objects", "seed"):
        assert state[key] == initial[key]


def test_reset_to_another_spec_and_seed_equals_a_fresh_world() -> None:
    scenario = make_scenario(5, 2)  # slippery: the slips depend on the seed
    world = World(apartment_spec(), seed=0)
    assert world.navigate_to("kitchen").success
    world.reset(scenario.world, seed=scenario.world_seed)
    fresh = World(scenario.world, seed=scenario.world_seed)
    for each in (world, fresh):
        assert each.navigate_to(scenario.object_id).success
    assert world.ground_truth()["objects"] == fresh.ground_truth()["objects"]
    assert _slips(world, scenario.object_id, 6) == _slips(fresh, scenario.object_id, 6)
    assert world.seed == scenario.world_seed


def test_reset_is_refused_while_an_action_runs() -> None:
    world = World(apartment_spec())
    activity = world.start_navigate("kitchen")
    with pytest.raises(RuntimeError, match="while navigate_to is running"):
        world.reset()
    assert world.active is activity
    world.run(activity)
    world.reset()
    assert world.active is None


# ---------------------------------------------------------------------- the node's ~/reset
@pytest.fixture
def sim_process(ros_env: dict[str, str], tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    pytest.importorskip("harness_sim_msgs", reason="build it first: scripts/build_interfaces.sh .venv")
    command = [
        sys.executable, "-m", "harness_ros_sim.ros.sim.node", "--ros-args",
        "-p", "image_width:=160", "-p", "image_height:=120", "-p", "time_scale:=10.0",
    ]  # fmt: skip
    log = (tmp_path / "sim.log").open("wb")
    process = subprocess.Popen(command, env=ros_env, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.mark.ros
def test_sim_node_resets_to_a_scenario_world(
    sim_process: subprocess.Popen[bytes], ros_env: dict[str, str], tmp_path: Path
) -> None:
    import threading
    import time

    from harness_ros_sim.ros.eval_runner import EvalClient

    scenario = make_scenario(2, 0)
    world_file = write_world(scenario, tmp_path)
    client = EvalClient(int(ros_env["ROS_DOMAIN_ID"]))
    try:
        deadline = time.monotonic() + 30.0
        pause = threading.Event()
        while not client.sim_ready():
            assert sim_process.poll() is None, (tmp_path / "sim.log").read_text()
            assert time.monotonic() < deadline, "the sim did not come up"
            pause.wait(0.1)
        before = client.state_after(0.0)
        state = client.reset_sim(world_file, scenario.world_seed, scenario.slip_probability)
        robot = scenario.world.robot
        obj = next(o for o in scenario.world.objects if o.id == scenario.object_id)
        assert state["seed"] == scenario.world_seed
        assert state["version"] > before["version"]
        assert (state["robot"]["x"], state["robot"]["y"]) == (robot.x, robot.y)
        assert state["objects"][scenario.object_id]["on"] == scenario.source
        assert (state["objects"][scenario.object_id]["x"], state["objects"][scenario.object_id]["y"]) == (
            obj.x,
            obj.y,
        )
        with pytest.raises(HarnessError, match=r"reset failed for .*missing\.yaml.*Cannot read world file"):
            client.reset_sim(tmp_path / "missing.yaml", 1, 0.5)
        with pytest.raises(HarnessError, match=r"invalid sim_robot parameters: slip_probability:=2\.0"):
            client.reset_sim(world_file, 1, 2.0)
        # A refused reset leaves the world as it was.
        assert client.state_after(time.time())["seed"] == scenario.world_seed
    finally:
        client.close()
