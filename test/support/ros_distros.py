"""The environment of a subprocess that imports one ROS distribution's stand-ins.

scripts/build_interfaces.sh --test-stand-ins puts the Kilted nav2_msgs / control_msgs
stand-ins into the venv and Jazzy's and Humble's into prefixes of their own under
build/ros_distros (test/interfaces/README.md). A process for Jazzy or Humble gets the
prefix's Python packages ahead of the venv's (PYTHONPATH) and its libraries ahead of the
venv's (LD_LIBRARY_PATH): the generated C extensions must load the prefix's
typesupport libraries, never the venv's Kilted ones of the same name. The ROS wheels'
bootstrapper would re-order LD_LIBRARY_PATH (it builds it from a set), so this sets
the whole path itself and tells the bootstrapper it is done.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DISTRO_ROOT = REPO_ROOT / "build" / "ros_distros"
DISTROS = ("humble", "jazzy", "kilted")

_PREFIXES: dict[str, tuple[str, ...]] = {
    "humble": ("humble", "jazzy"),  # Humble's control_msgs types are Jazzy's (the README)
    "jazzy": ("jazzy",),  # moveit_msgs: the venv's (Jazzy's types are Kilted's, the README)
    "kilted": (),  # in the venv
}


def prefixes(distro: str) -> list[Path]:
    """The install prefixes a ``distro`` process reads first (none for Kilted)."""
    return [DISTRO_ROOT / name / "install" for name in _PREFIXES[distro]]


def missing(distro: str) -> str | None:
    """Why the ``distro`` stand-ins cannot be used (not built), or None."""
    for prefix in prefixes(distro):
        if not (prefix / "share").is_dir():
            return f"{prefix} is not built (scripts/build_interfaces.sh .venv --test-stand-ins)"
    return None


def _site(prefix: Path) -> Path:
    return prefix / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def distro_env(distro: str, base: dict[str, str]) -> dict[str, str]:
    """``base`` (a ros_env) for a process that imports ``distro``'s stand-ins."""
    env = dict(base)
    env["ROS_DISTRO"] = distro
    return prefix_env(prefixes(distro), env)


def prefix_env(chosen: list[Path], base: dict[str, str]) -> dict[str, str]:
    """``base`` for a process that imports the packages installed in ``chosen`` (install
    prefixes, e.g. one ``scripts/build_interfaces.sh --prefix`` built) ahead of the venv's."""
    env = dict(base)
    if not chosen:
        return env
    venv = Path(sys.prefix)
    site = _site(venv)
    libs = [str(p / "lib") for p in chosen] + [str(venv / "lib")]
    libs += sorted(str(d.resolve()) for d in site.glob("ros_*.libs") if d.is_dir())
    libs += _parts(os.environ.get("LD_LIBRARY_PATH", ""))
    env["LD_LIBRARY_PATH"] = os.pathsep.join(dict.fromkeys(libs))
    env["_ROS_WHEELS_BOOTSTRAP_COMPLETE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(_site(p)) for p in chosen] + _parts(env.get("PYTHONPATH", "")))
    ament = [str(p) for p in chosen] + _parts(env.get("AMENT_PREFIX_PATH", ""))
    env["AMENT_PREFIX_PATH"] = os.pathsep.join(ament)
    return env


def _parts(path: str) -> list[str]:
    return [part for part in path.split(os.pathsep) if part]
