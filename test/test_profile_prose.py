"""Embodiment Profiles written for the peer harness: prose and described bullets (issue 16)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_ros.config import load_config
from harness_ros.errors import ProfileParseError
from harness_ros.profile import (
    REQUIRED_STRUCTURE,
    load_embodiment_profile_document_from_config,
    parse_embodiment_profile,
)

PORT_TEMPLATE = (
    "Replace this text with the named camera views the model receives at every decision, "
    "for example: head camera, wrist camera."
)


def profile_text(views: str) -> str:
    out = ["# Embodiment Profile", ""]
    for section, items in REQUIRED_STRUCTURE:
        out += [f"## {section}", ""]
        for item in items:
            out += [
                f"### {item}",
                views if item == "Model-Visible Views" else f"Content of {item.lower()}.",
                "",
            ]
    return "\n".join(out)


def deployment(tmp_path: Path, views: str, configured: list[str]) -> Path:
    (tmp_path / "robot.md").write_text(profile_text(views), encoding="utf-8")
    lines = ["embodiment_profile_file: robot.md", "observations:", "  views:" + ("" if configured else " {}")]
    lines += [f"    {name}:\n      topic: /camera/{name}/image_raw" for name in configured]
    config = tmp_path / "robot.yaml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


@pytest.mark.parametrize(
    ("views", "expected"),
    [
        ("- `front`: head RGB camera, 640x480\n- `wrist`: gripper camera, 320x240", ("front", "wrist")),
        ("- front: head camera\n- wrist - gripper camera\n- torso (chest)", ("front", "wrist", "torso")),
        ("Head and chest.", ()),
        ("Model-Visible Views: Head and chest.", ()),
        (PORT_TEMPLATE, ()),
        ("- Head RGB camera, used for navigation.\n- Chest depth camera.", ()),
    ],
)
def test_prose_and_described_bullets_parse(views: str, expected: tuple[str, ...]) -> None:
    assert parse_embodiment_profile(profile_text(views), Path("robot.md")).model_visible_views == expected


def test_prose_views_must_name_every_configured_view(tmp_path: Path) -> None:
    profile = load_embodiment_profile_document_from_config(
        load_config(deployment(tmp_path, "Head and chest.", ["head", "chest"]))
    )
    assert profile is not None and profile.model_visible_views == ("head", "chest")
    with pytest.raises(ProfileParseError) as info:
        load_embodiment_profile_document_from_config(
            load_config(deployment(tmp_path, "Head and chest.", ["head", "chest", "wrist_left"]))
        )
    message = str(info.value)
    assert "does not name configured view 'wrist_left' (observations.views.wrist_left)" in message
    assert "'head'" not in message and "'chest'" not in message


def test_view_names_match_as_words_with_separators_interchangeable(tmp_path: Path) -> None:
    text = "The wrist-left camera and the head camera; no chest."
    profile = load_embodiment_profile_document_from_config(
        load_config(deployment(tmp_path, text, ["wrist_left", "head"]))
    )
    assert profile is not None and profile.model_visible_views == ("wrist_left", "head")
    with pytest.raises(ProfileParseError, match="configured view 'ead'"):
        load_embodiment_profile_document_from_config(load_config(deployment(tmp_path, text, ["ead"])))


def test_the_port_template_is_accepted_without_configured_views_and_named_views_checked(
    tmp_path: Path,
) -> None:
    profile = load_embodiment_profile_document_from_config(
        load_config(deployment(tmp_path, PORT_TEMPLATE, []))
    )
    assert profile is not None and profile.model_visible_views == ()
    with pytest.raises(ProfileParseError, match="does not name configured view 'front'"):
        load_embodiment_profile_document_from_config(
            load_config(deployment(tmp_path, PORT_TEMPLATE, ["front"]))
        )


def test_a_listed_profile_keeps_selecting_views(tmp_path: Path) -> None:
    # A list of names selects the views (the node checks each has a topic); unchanged.
    profile = load_embodiment_profile_document_from_config(
        load_config(deployment(tmp_path, "- `front`: head RGB camera, 640x480", ["front", "wrist"]))
    )
    assert profile is not None and profile.model_visible_views == ("front",)
