"""Where the package's shipped files live, and how paths are shown to users.

``share_dir()`` is the folder holding ``config/``, ``profiles/``, ``skills/`` and
``memory/``: the ament share directory when the package is installed in a prefix
on ``AMENT_PREFIX_PATH`` (colcon), else the source tree next to the package (an
editable pip install), else ``<sys.prefix>/share/harness_ros`` (a plain pip install).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from harness_ros.errors import ConfigError

__all__ = ["PACKAGE", "default_config_path", "display_path", "share_dir"]

PACKAGE = "harness_ros"


def _ament_share_dir() -> Path | None:
    # The ament index marker, read directly so this works without ament_index_python.
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix and (Path(prefix) / "share/ament_index/resource_index/packages" / PACKAGE).is_file():
            return Path(prefix) / "share" / PACKAGE
    return None


def share_dir() -> Path:
    """The folder with the shipped config, profiles, skills and memory."""
    candidates = [
        _ament_share_dir(),
        Path(__file__).resolve().parents[1],
        Path(sys.prefix) / "share" / PACKAGE,
    ]
    for candidate in candidates:
        if candidate is not None and (candidate / "config").is_dir():
            return candidate
    looked = ", ".join(repr(str(c)) for c in candidates if c is not None)
    raise ConfigError(f"Cannot find the {PACKAGE} share folder with config/ (looked in {looked})")


def default_config_path(name: str = "example.yaml") -> Path:
    """A shipped config file, ``<share_dir>/config/<name>``."""
    return share_dir() / "config" / name


def display_path(path: Path) -> str:
    """``path`` relative to the working folder when it lies inside it, else as given."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if relative.startswith("..") else relative
