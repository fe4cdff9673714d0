"""Embodiment Profile: structure validation, heading matching, views, rendering, config paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_ros.config import load_config
from harness_ros.errors import ProfileParseError
from harness_ros.profile import (
    REQUIRED_STRUCTURE,
    EmbodimentProfile,
    load_embodiment_profile,
    load_embodiment_profile_document_from_config,
    parse_embodiment_profile,
)
from harness_ros.profile.contracts import OTHER_NOTES_HEADING

REPO_ROOT = Path(__file__).resolve().parents[1]
SHIPPED = REPO_ROOT / "profiles" / "mobile_manipulator.md"
ITEMS = [(section, item) for section, items in REQUIRED_STRUCTURE for item in items]
SECTIONS = [section for section, _ in REQUIRED_STRUCTURE]


def profile_text(
    *,
    drop_items: tuple[str, ...] = (),
    drop_sections: tuple[str, ...] = (),
    empty_items: tuple[str, ...] = (),
    views: str = "front, torso, wrist",
) -> str:
    out = ["# Embodiment Profile", ""]
    for section, items in REQUIRED_STRUCTURE:
        if section not in drop_sections:
            out += [f"## {section}", ""]
        for item in items:
            if item in drop_items:
                continue
            body = views if item == "Model-Visible Views" else f"Content of {item.lower()}."
            out += [f"### {item}", "" if item in empty_items else body, ""]
    return "\n".join(out)


def write(tmp_path: Path, text: str, name: str = "robot.md") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_profile_is_valid_with_three_views() -> None:
    profile = load_embodiment_profile(SHIPPED)
    assert isinstance(profile, EmbodimentProfile)
    assert profile.model_visible_views == ("front", "torso", "wrist")
    assert set(profile.items) == {item for _, item in ITEMS}
    assert "0.39 m" in profile.item("Base Footprint")


def test_render_is_canonical_stable_and_idempotent(tmp_path: Path) -> None:
    profile = load_embodiment_profile(SHIPPED)
    rendered = profile.render()
    assert rendered == load_embodiment_profile(SHIPPED).render()
    # The file's preamble (what the robot is, the frame convention) follows the title.
    assert rendered.startswith("# Embodiment Profile\n\nA generic indoor mobile manipulator:")
    assert "x forward, y left, z up.\n\n## Operational Envelope\n\n### Base Footprint\n" in rendered
    assert rendered.endswith("\n") and not rendered.endswith("\n\n")
    order = [rendered.index(f"### {item}\n") for _, item in ITEMS]
    assert order == sorted(order)
    # The authoring note is an HTML comment: it stays out of the context.
    assert "Replace the numbers" not in rendered and "<!--" not in rendered
    again = load_embodiment_profile(write(tmp_path, rendered))
    assert again.render() == rendered


def test_valid_minimal_profile_items() -> None:
    profile = parse_embodiment_profile(profile_text(), Path("robot.md"))
    assert profile.item("Camera Positions") == "Content of camera positions."
    assert profile.path == Path("robot.md")


@pytest.mark.parametrize(("section", "item"), ITEMS)
def test_each_missing_item_is_named(tmp_path: Path, section: str, item: str) -> None:
    path = write(tmp_path, profile_text(drop_items=(item,)))
    with pytest.raises(ProfileParseError) as info:
        load_embodiment_profile(path)
    assert str(info.value) == f"Invalid Embodiment Profile ({path}): missing item: {section} / {item}"


@pytest.mark.parametrize(("section", "item"), ITEMS)
def test_each_empty_item_is_named(tmp_path: Path, section: str, item: str) -> None:
    path = write(tmp_path, profile_text(empty_items=(item,)))
    with pytest.raises(ProfileParseError) as info:
        load_embodiment_profile(path)
    assert str(info.value) == (
        f"Invalid Embodiment Profile ({path}): missing item content: {section} / {item}"
    )


@pytest.mark.parametrize("section", SECTIONS)
def test_each_missing_section_is_named_once(tmp_path: Path, section: str) -> None:
    path = write(tmp_path, profile_text(drop_sections=(section,)))
    with pytest.raises(ProfileParseError) as info:
        load_embodiment_profile(path)
    # Its items, now outside any section, are not reported separately.
    assert str(info.value) == f"Invalid Embodiment Profile ({path}): missing section: {section}"


def test_message_uses_the_path_relative_to_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "profiles").mkdir()
    write(tmp_path / "profiles", profile_text(empty_items=("Camera Positions",)))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProfileParseError) as info:
        load_embodiment_profile((tmp_path / "profiles" / "robot.md").resolve())
    assert str(info.value) == (
        "Invalid Embodiment Profile (profiles/robot.md): "
        "missing item content: Base-Relative Positions / Camera Positions"
    )


def test_all_problems_are_reported_one_per_line(tmp_path: Path) -> None:
    text = profile_text(
        drop_sections=("Operational Envelope",),
        drop_items=("Sensor Modalities",),
        empty_items=("Initial Gripper Positions",),
    )
    with pytest.raises(ProfileParseError) as info:
        load_embodiment_profile(write(tmp_path, text))
    lines = str(info.value).splitlines()
    assert lines[0].endswith("): missing section: Operational Envelope")
    assert lines[1:] == [
        "  missing item: Perception Configuration / Sensor Modalities",
        "  missing item content: Base-Relative Positions / Initial Gripper Positions",
    ]


@pytest.mark.parametrize(
    ("original", "variant"),
    [
        ("## Operational Envelope", "## OPERATIONAL ENVELOPE"),
        ("### Base Footprint", "#### base-footprint:"),
        ("### Base Footprint", "### Base footprint."),
        ("### Base Footprint", "# **Base Footprint**"),
        ("## Base-Relative Positions", "# base relative positions ##"),
        ("### Model-Visible Views", "###### model visible views"),
        ("## Perception Configuration", "Perception configuration\n------------------------"),
    ],
)
def test_heading_variants_match(original: str, variant: str) -> None:
    text = profile_text().replace(original, variant)
    assert variant in text
    profile = parse_embodiment_profile(text, Path("robot.md"))
    assert profile.item("Base Footprint") == "Content of base footprint."
    assert profile.model_visible_views == ("front", "torso", "wrist")
    assert "### Base Footprint\n" in profile.render()


def test_item_under_the_wrong_section_is_missing_with_a_hint() -> None:
    text = profile_text(drop_items=("Base Footprint",)).replace(
        "### Sensor Modalities", "### Base Footprint\nCircle.\n\n### Sensor Modalities"
    )
    with pytest.raises(
        ProfileParseError,
        match=r"missing item: Operational Envelope / Base Footprint "
        r"\(found under 'Perception Configuration'\)$",
    ):
        parse_embodiment_profile(text, Path("robot.md"))


def test_heading_inside_a_list_or_quote_is_content_not_an_item() -> None:
    text = profile_text(drop_items=("Base Mobility",)).replace(
        "Content of base footprint.", "Circle.\n\n> ### Base Mobility\n> quoted\n\n- ### Base Mobility"
    )
    with pytest.raises(ProfileParseError, match=r"missing item: Operational Envelope / Base Mobility"):
        parse_embodiment_profile(text, Path("robot.md"))


def test_text_outside_the_items_is_sent_not_validated() -> None:
    extra = (
        "\n## Maintenance Notes\nOil the wheels.\n<!-- not for the model -->\n\n"
        "### Base Footprint\nNot this one.\n\n# Appendix\nMore.\n"
    )
    head = "# TIAGo Embodiment Profile\n\nFrames: x forward, y left, z up.\n\n"
    text = head + profile_text().replace("# Embodiment Profile\n", "", 1) + extra
    profile = parse_embodiment_profile(text, Path("robot.md"))
    # The items are still only what their own headings hold.
    assert profile.item("Base Footprint") == "Content of base footprint."
    assert profile.item("Initial Gripper Positions") == "Content of initial gripper positions."
    # The robot's name and the frame convention lead; the rest follows the seven items.
    assert profile.preamble == "### TIAGo Embodiment Profile\n\nFrames: x forward, y left, z up."
    rendered = profile.render()
    assert rendered.startswith(f"# Embodiment Profile\n\n{profile.preamble}\n\n## Operational Envelope\n")
    notes = rendered.split(f"## {OTHER_NOTES_HEADING}\n", 1)[1]
    assert rendered.index("### Initial Gripper Positions") < rendered.index(OTHER_NOTES_HEADING)
    for kept in ("### Maintenance Notes", "Oil the wheels.", "Not this one.", "### Appendix", "More."):
        assert kept in notes
    assert "not for the model" not in rendered
    assert profile.unvalidated_chars == len(profile.preamble) + len(profile.other_notes) > 0


def test_a_profile_of_items_only_renders_as_before() -> None:
    profile = parse_embodiment_profile(profile_text(), Path("robot.md"))
    assert (profile.preamble, profile.other_notes) == ("", "")
    assert profile.render().startswith(
        "# Embodiment Profile\n\n## Operational Envelope\n\n### Base Footprint\n"
    )
    assert OTHER_NOTES_HEADING not in profile.render()


def test_an_unclosed_fence_outside_the_items_is_refused() -> None:
    text = profile_text().replace("# Embodiment Profile\n", "# Embodiment Profile\n\n```\nstray\n", 1)
    with pytest.raises(ProfileParseError, match="unclosed code fence in the text outside the seven items"):
        parse_embodiment_profile(text, Path("robot.md"))


def test_deeper_subheading_before_items_keeps_the_section_open() -> None:
    text = profile_text().replace(
        "## Operational Envelope\n", "## Operational Envelope\n\n### Overview\nA base.\n"
    )
    profile = parse_embodiment_profile(text, Path("robot.md"))
    assert profile.item("Base Footprint") == "Content of base footprint."


def test_item_content_keeps_sub_headings_relevelled_and_drops_comments() -> None:
    body = "#### Front camera\nx = 0.22\n\n<!-- measured 2024 -->\n\n##### Mount\nbolted\n"
    text = profile_text().replace("Content of camera positions.", body)
    profile = parse_embodiment_profile(text, Path("robot.md"))
    assert profile.item("Camera Positions") == "#### Front camera\nx = 0.22\n\n\n##### Mount\nbolted"
    # An item at level 1 with level-2 sub-headings renders them below the ### item heading.
    shallow = text.replace("### Camera Positions", "# Camera Positions").replace(
        "#### Front camera", "## Front camera"
    )
    assert "#### Front camera" in parse_embodiment_profile(shallow, Path("r.md")).item("Camera Positions")


def test_comment_only_item_counts_as_empty() -> None:
    text = profile_text().replace("Content of base mobility.", "<!-- fill in -->")
    with pytest.raises(
        ProfileParseError, match=r"missing item content: Operational Envelope / Base Mobility"
    ):
        parse_embodiment_profile(text, Path("robot.md"))


def test_duplicate_item_and_section_are_reported() -> None:
    text = profile_text() + "\n## Operational Envelope\n\n### Base Mobility\nAgain.\n"
    with pytest.raises(ProfileParseError) as info:
        parse_embodiment_profile(text, Path("robot.md"))
    message = str(info.value)
    assert "duplicate section: Operational Envelope" in message
    assert "duplicate item: Operational Envelope / Base Mobility" in message


@pytest.mark.parametrize(
    ("views", "expected"),
    [
        ("front, torso, wrist", ("front", "torso", "wrist")),
        ("- Front\n- `Torso`\n* wrist", ("front", "torso", "wrist")),
        ("1. front\n2. wrist", ("front", "wrist")),
        ("front,\ntorso_low, wrist-left,", ("front", "torso_low", "wrist-left")),
    ],
)
def test_views_parsing(views: str, expected: tuple[str, ...]) -> None:
    profile = parse_embodiment_profile(profile_text(views=views), Path("robot.md"))
    assert profile.model_visible_views == expected


@pytest.mark.parametrize(
    ("views", "problem"),
    [
        (
            "front camera, wrist",
            r"invalid view name 'front camera' in Perception Configuration / Model-Visible",
        ),
        ("front, wrist, Front", r"duplicate view 'front'"),
        ("-\n,", r"no view names in Perception Configuration / Model-Visible Views"),
    ],
)
def test_bad_views_are_errors(views: str, problem: str) -> None:
    with pytest.raises(ProfileParseError, match=problem):
        parse_embodiment_profile(profile_text(views=views), Path("robot.md"))


def test_crlf_file_parses(tmp_path: Path) -> None:
    path = tmp_path / "robot.md"
    path.write_bytes(profile_text().replace("\n", "\r\n").encode())
    assert load_embodiment_profile(path).item("Base Mobility") == "Content of base mobility."


def test_unreadable_and_non_utf8_files_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "absent.md"
    with pytest.raises(ProfileParseError, match=r"absent\.md\): cannot read file: No such file"):
        load_embodiment_profile(missing)
    binary = tmp_path / "binary.md"
    binary.write_bytes(b"# Embodiment Profile\n\xff\xfe")
    with pytest.raises(ProfileParseError, match=r"binary\.md\): not UTF-8 text"):
        load_embodiment_profile(binary)


def test_config_path_resolves_against_the_config_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deploy = tmp_path / "deploy"
    (deploy / "profiles").mkdir(parents=True)
    write(deploy / "profiles", profile_text(views="wrist"))
    config_file = deploy / "robot.yaml"
    config_file.write_text("embodiment_profile_file: profiles/robot.md\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    profile = load_embodiment_profile_document_from_config(load_config(config_file))
    assert profile is not None
    assert profile.path == (deploy / "profiles" / "robot.md").resolve()
    assert profile.model_visible_views == ("wrist",)


def test_config_without_profile_gives_none_and_missing_file_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("{}\n", encoding="utf-8")
    assert load_embodiment_profile_document_from_config(load_config(empty)) is None
    broken = tmp_path / "broken.yaml"
    broken.write_text("embodiment_profile_file: nowhere.md\n", encoding="utf-8")
    with pytest.raises(ProfileParseError, match=r"nowhere\.md\): cannot read file"):
        load_embodiment_profile_document_from_config(load_config(broken))


def test_package_root_exports_the_profile_api() -> None:
    import harness_ros

    assert (
        harness_ros.load_embodiment_profile_document_from_config
        is load_embodiment_profile_document_from_config
    )
    assert harness_ros.EmbodimentProfile is EmbodimentProfile


def _with_camera_positions(text: str) -> str:
    return text.replace(
        "Content of camera positions.",
        "- `front`: on the mast, 1.2 m up; joints: `joint_head_pan`, `joint_head_tilt`\n"
        "- wrist: on the gripper, it moves with the arm.",
    )


def test_camera_positions_may_name_the_joints_that_move_a_view() -> None:
    profile = parse_embodiment_profile(_with_camera_positions(profile_text()), Path("robot.md"))
    assert dict(profile.camera_joints) == {"front": ("joint_head_pan", "joint_head_tilt")}
    assert parse_embodiment_profile(profile_text(), Path("robot.md")).camera_joints == {}
    bad = profile_text().replace("Content of camera positions.", "The head moves, joints: pan and tilt.")
    with pytest.raises(ProfileParseError, match=r"'joints:' outside a view's bullet in .*Camera Positions"):
        parse_embodiment_profile(bad, Path("robot.md"))
    bad = profile_text().replace("Content of camera positions.", "- front: on the mast; joints: pan and tilt")
    with pytest.raises(ProfileParseError, match=r"'joints:' of view 'front' .* names no joint in backticks"):
        parse_embodiment_profile(bad, Path("robot.md"))


def test_a_joint_the_profile_names_must_be_the_views_pan_or_tilt_in_the_config(tmp_path: Path) -> None:
    write(tmp_path, _with_camera_positions(profile_text()))
    views = "    torso: {topic: /t}\n    wrist: {topic: /w}\n"
    config = tmp_path / "cfg.yaml"
    config.write_text(
        "embodiment_profile_file: robot.md\nobservations:\n  views:\n"
        "    front: {topic: /f, pan: {joint: joint_head_pan, positive: left}}\n" + views,
        encoding="utf-8",
    )
    with pytest.raises(ProfileParseError) as info:
        load_embodiment_profile_document_from_config(load_config(config))
    assert (
        "says joint 'joint_head_tilt' moves view 'front', but neither observations.views.front.pan nor .tilt"
        in str(info.value)
    )
    assert "joint_head_pan'" not in str(info.value)
    config.write_text(
        "embodiment_profile_file: robot.md\nobservations:\n  views:\n"
        "    front:\n      topic: /f\n      pan: {joint: joint_head_pan, positive: left}\n"
        "      tilt: {joint: joint_head_tilt, positive: up}\n" + views,
        encoding="utf-8",
    )
    profile = load_embodiment_profile_document_from_config(load_config(config))
    assert profile is not None and profile.camera_joints["front"] == ("joint_head_pan", "joint_head_tilt")
