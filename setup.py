"""ament_python package setup for harness_ros (colcon on a ROS install, pip in a venv)."""

from __future__ import annotations

from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = "harness_ros"


def tree(folder: str) -> list[tuple[str, list[str]]]:
    """Map every file under ``folder`` to share/harness_ros/<folder>/..., keeping sub-folders."""
    entries: dict[str, list[str]] = {}
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            target = str(Path("share") / PACKAGE / path.parent)
            entries.setdefault(target, []).append(str(path))
    return sorted(entries.items())


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "sim", "sim.*"]),
    package_data={PACKAGE: ["py.typed", "local_model/templates/*.jinja", "console/static/*"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.py") + glob("launch/*.yaml")),
        *tree("config"),
        *tree("profiles"),
        *tree("skills"),
        *tree("memory"),
    ],
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="harness_ros developers",
    maintainer_email="dev@harness-ros.local",
    description="Run an LLM agent on a ROS 2 mobile manipulator, safely, with per-tool experience memory.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "harness-ros = harness_ros.cli:main",
            "harness_node = harness_ros.ros.node:main",
        ],
    },
)
