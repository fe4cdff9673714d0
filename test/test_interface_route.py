"""The documented route to a robot of another distribution builds what the tests use.

docs/robot.md ("One route per distribution") tells a pip-venv user to copy the robot
distribution's nav2_msgs / control_msgs definitions into a folder and build them with
``scripts/build_interfaces.sh VENV --interfaces DIR``. Here that command builds Humble's
NavigateToPose, Spin, BackUp and DriveOnHeading (the Humble stand-in's .action files, the
upstream 1.1.20 definitions, without its CMake files) into a prefix of its own, and a
process importing it gets Humble's layout and the very type hashes of the stand-in the
graph check's tests serve (test/test_graph_type_hash.py), so the two cannot drift apart.

Also: a tool whose interface package is missing is named in the error.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy")

from support.ros_distros import DISTRO_ROOT, missing, prefix_env

REPO_ROOT = Path(__file__).resolve().parents[1]
SCRIPT = REPO_ROOT / "scripts" / "build_interfaces.sh"
DOC = REPO_ROOT / "docs" / "robot.md"
HUMBLE_NAV2 = REPO_ROOT / "test" / "interfaces" / "humble" / "nav2_msgs"


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), str(Path(sys.prefix)), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_the_documented_command_builds_a_distros_definitions_into_a_prefix(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if missing("humble") is not None:
        pytest.skip(missing("humble") or "")
    # the command as docs/robot.md gives it
    doc = DOC.read_text(encoding="utf-8")
    assert "scripts/build_interfaces.sh .venv --interfaces ~/robot_interfaces/nav2_msgs" in doc

    source = tmp_path / "nav2_msgs"
    shutil.copytree(HUMBLE_NAV2 / "action", source / "action")  # the definitions only
    prefix = tmp_path / "prefix"
    # the script's build folder for this prefix, removed with the test's prefix
    build = REPO_ROOT / "build" / "interfaces" / hashlib.sha256(str(prefix).encode()).hexdigest()[:12]
    request.addfinalizer(lambda: shutil.rmtree(build, ignore_errors=True))
    proc = run_script("--interfaces", str(source), "--prefix", str(prefix))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"built nav2_msgs in \d+ s|nav2_msgs is up to date", proc.stdout), proc.stdout

    probe = (
        "import json, nav2_msgs; from nav2_msgs.action import NavigateToPose; "
        "from harness_ros.ros.distros import installed_distro; "
        "from harness_ros.ros.graph_check import own_type_hashes; "
        "fields = sorted(NavigateToPose.Result.get_fields_and_field_types()); "
        "print(json.dumps({'file': nav2_msgs.__file__, 'fields': fields, "
        "'looks': installed_distro('nav2_msgs'), "
        "'hashes': own_type_hashes('nav2_msgs/action/NavigateToPose')}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env=prefix_env([prefix], dict(os.environ)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["file"].startswith(str(prefix)), got["file"]
    assert got["looks"].startswith("Humble"), got["looks"]
    assert got["fields"] == ["result"]  # Humble's std_msgs/Empty result
    stand_in = json.loads(
        (
            DISTRO_ROOT / "humble" / "install" / "share" / "nav2_msgs" / "action" / "NavigateToPose.json"
        ).read_text()
    )
    assert got["hashes"] == {entry["type_name"]: entry["hash_string"] for entry in stand_in["type_hashes"]}

    # a second run with the same definitions rebuilds nothing
    again = run_script("--interfaces", str(source), "--prefix", str(prefix))
    assert again.returncode == 0 and "nav2_msgs is up to date in" in again.stdout, again.stdout + again.stderr


def test_the_command_refuses_what_it_cannot_build(tmp_path: Path) -> None:
    empty = tmp_path / "nav2_msgs"
    empty.mkdir()
    proc = run_script("--interfaces", str(empty), "--prefix", str(tmp_path / "prefix"))
    assert proc.returncode != 0
    assert f"--interfaces '{empty}': no definitions in {empty}/msg/*.msg" in proc.stderr, proc.stderr

    needs = tmp_path / "my_msgs" / "msg"
    needs.mkdir(parents=True)
    (needs / "Plan.msg").write_text("# a plan\nno_such_msgs/Step[] steps\nstring name\n", encoding="utf-8")
    proc = run_script("--interfaces", str(needs.parent), "--prefix", str(tmp_path / "prefix"))
    assert proc.returncode != 0
    assert "its definitions use 'no_such_msgs', which is not in the venv (pip install ros-no-such-msgs" in (
        proc.stderr
    ), proc.stderr

    proc = run_script("--prefix", str(tmp_path / "prefix"))
    assert proc.returncode != 0 and "--prefix only applies to --interfaces" in proc.stderr


def test_a_missing_interface_package_names_the_tool(tmp_path: Path) -> None:
    config = tmp_path / "robot.yaml"
    config.write_text(
        "tools:\n"
        "  - name: go_somewhere\n"
        "    description: go\n"
        "    action: /go\n"
        "    type: missing_robot_msgs/action/Go\n"
        "    arguments: {}\n"
        "    goal: {speed: {value: 1.0}}\n"
        "    optional_fields: [goal.speed]\n",
        encoding="utf-8",
    )
    from harness_ros.commands.tools import model_tool_definitions
    from harness_ros.config import load_config
    from harness_ros.errors import ToolError

    with pytest.raises(ToolError) as err:
        model_tool_definitions(load_config(config))
    assert str(err.value).startswith(
        "tool 'go_somewhere': interface type 'missing_robot_msgs/action/Go': package "
        "'missing_robot_msgs' is not installed"
    ), err.value
    assert "docs/robot.md#one-route-per-distribution" in str(err.value)
