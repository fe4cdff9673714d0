"""Re-derive test/data/gz_sim_plugins.txt and gz_sdf_elements.txt from gazebosim's sources.

Not a test: run by hand when moving to another Gazebo release, with git mirrors of
gazebosim/gz-sim and gazebosim/sdformat (bare or not):

    python test/data/gz_extract_facts.py GZ_SIM_GIT gz-sim8_8.14.0 SDFORMAT_GIT sdformat14_14.9.0 \
        ROS_GZ_GIT jazzy

Plugins: every system under src/systems/ whose CMakeLists.txt calls gz_add_system(NAME)
is loadable as filename gz-sim-NAME-system under the names its GZ_ADD_PLUGIN_ALIAS
lines give; its parameters are the element names its .cc files read from the plugin's
SDF (Get/HasElement/GetElement/FindElement). Elements: every (parent, child) element
pair of the SDFormat description files sdf/<version>/*.sdf, includes resolved.
Bridge types: the (ROS type, Gazebo type) rows of ros_gz_bridge's README at that ref.
Only what the project's files use is written (the files stay small).
"""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent
SDF_VERSION = "1.11"


def git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={repo}", *args], check=True, capture_output=True, text=True
    ).stdout


def project_sdf_files() -> list[Path]:
    return sorted([*(REPO / "sim").glob("worlds/*.sdf"), *(REPO / "sim").glob("models/*/model.sdf")])


def used_plugins() -> set[str]:
    names: set[str] = set()
    for path in project_sdf_files():
        names.update(p.get("filename", "") for p in ET.parse(path).getroot().iter("plugin"))
    return names


def plugins(repo: str, tag: str) -> list[str]:
    lines = []
    folders = {
        Path(p).parent.name for p in git(repo, "ls-tree", "-r", "--name-only", tag, "src/systems").split()
    }
    for folder in sorted(folders):
        try:
            cmake = git(repo, "show", f"{tag}:src/systems/{folder}/CMakeLists.txt")
        except subprocess.CalledProcessError:
            continue
        match = re.search(r"gz_add_system\(\s*([\w-]+)", cmake)
        if match is None:
            continue
        filename = f"gz-sim-{match.group(1)}-system"
        if filename not in used_plugins():
            continue
        sources = [
            p
            for p in git(repo, "ls-tree", "--name-only", tag, f"src/systems/{folder}/").split()
            if p.endswith(".cc") and "TEST" not in p
        ]
        text = "".join(git(repo, "show", f"{tag}:{p}") for p in sources)
        aliases = re.findall(r'GZ_ADD_PLUGIN_ALIAS\(\s*\w+\s*,\s*"([^"]+)"', text)
        params = sorted(
            set(re.findall(r'(?:Get<[^>]*>|HasElement|GetElement|FindElement)\(\s*"([a-z_]+)"', text))
        )
        lines.extend(f"{filename} {alias} {' '.join(params)}".rstrip() for alias in aliases)
    return sorted(lines)


def element_pairs(repo: str, tag: str) -> set[tuple[str, str]]:
    folder = f"sdf/{SDF_VERSION}"
    files = {
        Path(p).name: git(repo, "show", f"{tag}:{p}")
        for p in git(repo, "ls-tree", "--name-only", tag, f"{folder}/").split()
        if p.endswith(".sdf")
    }
    roots = {name: ET.fromstring(text) for name, text in files.items()}
    pairs: set[tuple[str, str]] = set()

    def children(element: ET.Element) -> list[str]:
        names = [c.get("name", "") for c in element.findall("element")]
        for include in element.findall("include"):
            included = roots.get(include.get("filename", ""))
            if included is not None:
                names.append(included.get("name", ""))
        return names

    def walk(element: ET.Element) -> None:
        parent = element.get("name", "")
        for child in children(element):
            pairs.add((parent, child))
        for sub in element.findall("element"):
            walk(sub)

    for root in roots.values():
        walk(root)
    return pairs


def element_attributes(repo: str, tag: str) -> set[str]:
    """'element@attribute' for every attribute the description files declare."""
    folder = f"sdf/{SDF_VERSION}"
    found: set[str] = set()
    for path in git(repo, "ls-tree", "--name-only", tag, f"{folder}/").split():
        if not path.endswith(".sdf"):
            continue
        root = ET.fromstring(git(repo, "show", f"{tag}:{path}"))
        for element in root.iter("element"):
            found.update(f"{element.get('name')}@{a.get('name')}" for a in element.findall("attribute"))
    return found


def used_attributes() -> set[str]:
    found: set[str] = set()

    def walk(element: ET.Element) -> None:
        found.update(f"{element.tag}@{name}" for name in element.attrib)
        if element.tag != "plugin":
            for child in element:
                walk(child)

    for path in project_sdf_files():
        walk(ET.parse(path).getroot())
    return found


def sensor_types(repo: str, tag: str) -> set[str]:
    """The sensor type strings SDFormat's Sensor.cc accepts (kSensorTypeStrs)."""
    text = git(repo, "show", f"{tag}:src/Sensor.cc")
    block = text[text.index("kSensorTypeStrs") :]
    return set(re.findall(r'"([a-z_]+)"', block[: block.index("};")]))


def used_sensor_types() -> set[str]:
    return {s.get("type", "") for p in project_sdf_files() for s in ET.parse(p).getroot().iter("sensor")}


def used_pairs() -> set[tuple[str, str]]:
    pairs: set[tuple[str, str]] = set()

    def walk(element: ET.Element) -> None:
        if element.tag == "plugin":
            return  # a plugin's children are its system's parameters, checked separately
        for child in element:
            pairs.add((element.tag, child.tag))
            walk(child)

    for path in project_sdf_files():
        walk(ET.parse(path).getroot())
    return pairs


def bridge_pairs(repo: str, ref: str) -> set[tuple[str, str]]:
    readme = git(repo, "show", f"{ref}:ros_gz_bridge/README.md")
    return set(
        re.findall(r"^\|\s*([a-z0-9_]+/msg/\w+)\s*\|\s*(gz[.:]+msgs[.:]+\w+)\s*\|", readme, re.MULTILINE)
    )


def used_bridge_pairs() -> set[tuple[str, str]]:
    import yaml

    entries = yaml.safe_load((REPO / "sim" / "config" / "gazebo_bridge.yaml").read_text(encoding="utf-8"))
    return {(e["ros_type_name"], e["gz_type_name"]) for e in entries}


def main(argv: list[str]) -> int:
    gz_repo, gz_tag, sdf_repo, sdf_tag, ros_gz_repo, ros_gz_ref = argv
    commit = git(ros_gz_repo, "rev-parse", f"{ros_gz_ref}^{{commit}}").strip()
    known_types = bridge_pairs(ros_gz_repo, ros_gz_ref)
    if used_bridge_pairs() - known_types:
        sys.stderr.write(
            f"type pairs not in ros_gz_bridge at {ros_gz_ref}: {used_bridge_pairs() - known_types}\n"
        )
        return 1
    header = f"# gazebosim/ros_gz {ros_gz_ref} ({commit}), ros_gz_bridge/README.md: ROS type, Gazebo type\n"
    rows = [f"{r} {g}" for r, g in sorted(used_bridge_pairs())]
    (DATA / "gz_bridge_types.txt").write_text(header + "\n".join(rows) + "\n")
    gz_commit = git(gz_repo, "rev-parse", f"{gz_tag}^{{commit}}").strip()
    sdf_commit = git(sdf_repo, "rev-parse", f"{sdf_tag}^{{commit}}").strip()
    header = f"# gazebosim/gz-sim {gz_tag} ({gz_commit}): filename name parameters\n"
    (DATA / "gz_sim_plugins.txt").write_text(header + "\n".join(plugins(gz_repo, gz_tag)) + "\n")
    known = element_pairs(sdf_repo, sdf_tag)
    used = used_pairs()
    missing = sorted(used - known)
    if missing:
        sys.stderr.write(f"not in SDFormat {SDF_VERSION} at {sdf_tag}: {missing}\n")
        return 1
    header = (
        f"# gazebosim/sdformat {sdf_tag} ({sdf_commit}), sdf/{SDF_VERSION}: "
        "parent child, ELEMENT@ATTRIBUTE attribute, sensor@type TYPE (src/Sensor.cc)\n"
    )
    lines = [f"{p} {c}" for p, c in sorted(used & known)]
    types = sensor_types(sdf_repo, sdf_tag)
    if used_sensor_types() - types:
        sys.stderr.write(f"sensor types not in SDFormat at {sdf_tag}: {used_sensor_types() - types}\n")
        return 1
    lines += [f"sensor@type {t}" for t in sorted(used_sensor_types())]
    unknown = used_attributes() - element_attributes(sdf_repo, sdf_tag)
    if unknown:
        sys.stderr.write(f"attributes not in SDFormat {SDF_VERSION} at {sdf_tag}: {sorted(unknown)}\n")
        return 1
    lines += [f"{a} attribute" for a in sorted(used_attributes())]
    (DATA / "gz_sdf_elements.txt").write_text(header + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
