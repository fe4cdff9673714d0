"""Property-based fuzzing of the text parsers: Embodiment Profile, SKILL.md, MEMORY.md, ledgers.

Whatever the bytes, a parser either returns its value or raises the project's own
error (``ProfileParseError``, ``SkillError``, ``MemoryStoreError``): never a crash,
never another exception type. Consolidation writes only insert lines into MEMORY.md
and ledgers, so operator text survives byte for byte and no entry text can add a
heading.

Runs are derandomized (same examples on every machine) and bounded; see ``FUZZ``.
"""

from __future__ import annotations

import json
import re
import string
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness_ros.errors import MemoryStoreError, ProfileParseError, SkillError
from harness_ros.memory import FileMemory
from harness_ros.memory.contracts import (
    SECTIONS,
    DurableMemoryEntry,
    MemoryConsolidation,
    ToolExperienceEntry,
)
from harness_ros.memory.document import SectionedDocument
from harness_ros.profile import (
    REQUIRED_STRUCTURE,
    EmbodimentProfile,
    load_embodiment_profile,
    parse_embodiment_profile,
)
from harness_ros.skills import SkillCatalog, load_skill_file
from harness_ros.trajectory import Trajectory

# Bounded, reproducible runs: the three fuzz files together stay well under a minute
# on a 2-core machine. The autouse ``clean_environ`` fixture only sets variables, so
# sharing it across the examples of one test is safe.
FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def fuzz(max_examples: int) -> settings:
    """``FUZZ`` with this test's example budget."""
    return settings(FUZZ, max_examples=max_examples)


PROFILE_PATH = Path("profiles/fuzz.md")


@contextmanager
def scratch_dir() -> Iterator[Path]:
    """A fresh folder per example (``tmp_path`` is one folder per test, not per example)."""
    with tempfile.TemporaryDirectory(prefix="harness-fuzz-") as folder:
        yield Path(folder)


# --------------------------------------------------------------------------- text atoms

# Characters that stress Markdown and line handling: every line-break form that
# ``str.splitlines`` knows, NUL, BOM, tabs, fences, heading and list markers.
_AWKWARD = "\x00\t\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\ufeff#-*+>`~=_[]()<>!:,.\\/ "
awkward_text = st.text(
    alphabet=st.one_of(st.sampled_from(_AWKWARD), st.characters(codec="utf-8")),
    max_size=120,
)
plain_words = st.text(alphabet=string.ascii_letters + string.digits + " _-,.:`", max_size=40)
newline = st.sampled_from(["\n", "\r\n", "\r"])


# --------------------------------------------------------------------------- profile


def _name_variant(name: str) -> st.SearchStrategy[str]:
    """A required section/item name as an operator might spell it (case, punctuation)."""
    return st.sampled_from(
        [name, name.lower(), name.upper(), name.replace(" ", "-"), f"{name}:", f"**{name}**", f"{name} ##"]
    )


_ALL_NAMES = [section for section, _ in REQUIRED_STRUCTURE] + [
    item for _, items in REQUIRED_STRUCTURE for item in items
]
heading_text = st.one_of(st.sampled_from(_ALL_NAMES).flatmap(_name_variant), plain_words)


@st.composite
def markdown_heading(draw: st.DrawFn) -> str:
    text = draw(heading_text)
    if draw(st.booleans()):
        return f"{'#' * draw(st.integers(1, 7))} {text}"
    return f"{text}\n{draw(st.sampled_from(['===', '---', '-', '= =']))}"


markdown_block = st.one_of(
    markdown_heading(),
    plain_words,
    awkward_text,
    st.sampled_from(
        [
            "",
            "front, wrist",
            "- front\n- torso\n- Wrist",
            "1. front\n2) `torso`",
            "<!-- fill in -->",
            "```\n# Base Footprint\n```",
            "```",
            "~~~",
            "> ## Camera Positions",
            "- ### Sensor Modalities",
            "    # indented code",
            "<div>\n# not a heading\n</div>",
            "front, front",
            "front, 9bad",
        ]
    ),
)


@st.composite
def profile_text(draw: st.DrawFn) -> str:
    """Mostly-valid profiles with random damage, plus free-form Markdown blocks."""
    blocks: list[str] = []
    if draw(st.booleans()):
        blocks.append("# Embodiment Profile")
    for section, items in draw(st.permutations(REQUIRED_STRUCTURE)):
        if draw(st.integers(0, 9)) == 0:
            continue  # a missing section
        level = draw(st.integers(1, 3))
        blocks.append(f"{'#' * level} {draw(_name_variant(section))}")
        for item in draw(st.permutations(items)):
            if draw(st.integers(0, 9)) == 0:
                continue
            item_level = draw(st.integers(level, 6))
            blocks.append(f"{'#' * item_level} {draw(_name_variant(item))}")
            if item == "Model-Visible Views":
                blocks.append(draw(st.sampled_from(["front, wrist", "- front\n- torso", "`front`", ""])))
            else:
                blocks.append(draw(plain_words))
            blocks.extend(draw(st.lists(markdown_block, max_size=2)))
    blocks.extend(draw(st.lists(markdown_block, max_size=4)))
    return draw(newline).join(blocks)


def _check_profile(result: EmbodimentProfile) -> None:
    assert set(result.items) == set(_ALL_NAMES) - {section for section, _ in REQUIRED_STRUCTURE}
    assert all(content for content in result.items.values())
    # Prose in Model-Visible Views names no view (the configured views are then checked
    # against its text): hypothesis found b"...# Model\x00Visible\x00Views\n\x00A...".
    views = result.model_visible_views
    assert all(view and view == view.strip().lower() for view in views), views
    assert len(set(views)) == len(views)


@fuzz(300)
@given(text=st.one_of(profile_text(), awkward_text, st.text(max_size=400)))
def test_profile_parser_returns_a_profile_or_a_profile_parse_error(text: str) -> None:
    try:
        profile = parse_embodiment_profile(text, PROFILE_PATH)
    except ProfileParseError as err:
        assert str(err).startswith(f"Invalid Embodiment Profile ({PROFILE_PATH}): ")
        return
    _check_profile(profile)
    # render() is deterministic: same profile, same bytes.
    assert profile.render() == parse_embodiment_profile(text, PROFILE_PATH).render()


@fuzz(150)
@given(data=st.one_of(st.binary(max_size=300), profile_text().map(lambda t: t.encode("utf-8"))))
def test_profile_loader_on_arbitrary_bytes(data: bytes) -> None:
    with scratch_dir() as folder:
        path = folder / "profile.md"
        path.write_bytes(data)
        try:
            profile = load_embodiment_profile(path)
        except ProfileParseError as err:
            assert "Invalid Embodiment Profile (" in str(err)
            return
    _check_profile(profile)


@fuzz(200)
@given(text=profile_text().filter(lambda t: "```" not in t and "~~~" not in t))
def test_rendered_profile_parses_back_to_the_same_profile(text: str) -> None:
    try:
        profile = parse_embodiment_profile(text, PROFILE_PATH)
    except ProfileParseError:
        return
    again = parse_embodiment_profile(profile.render(), PROFILE_PATH)
    assert dict(again.items) == dict(profile.items)
    assert again.model_visible_views == profile.model_visible_views


def test_unclosed_fence_in_an_item_is_a_profile_error() -> None:
    # In the canonical render (fixed section order) an open fence would swallow every
    # later item, so the parser refuses it and names the item.
    text = (
        "# Perception Configuration\n## Sensor Modalities\nrgb\n## Model-Visible Views\nfront\n"
        "# Base-Relative Positions\n## Camera Positions\nhead\n## Initial Gripper Positions\nhome\n"
        "# Operational Envelope\n## Base Footprint\n0.5 m\n## Base Mobility\ndiff\n"
        "## Reachable Workspace\n```\n"
    )
    with pytest.raises(
        ProfileParseError,
        match="unclosed code fence in item content: Operational Envelope / Reachable Workspace",
    ):
        parse_embodiment_profile(text, PROFILE_PATH)


# --------------------------------------------------------------------------- SKILL.md

yaml_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["fuzz-skill", "Fuzz_Skill", "-fuzz", "fuzz--skill", "", " ", "x" * 70]),
)
yaml_value = st.recursive(
    yaml_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=6,
)
frontmatter_key = st.one_of(
    st.sampled_from(["name", "description", "license", "compatibility", "metadata", "allowed-tools"]),
    st.text(max_size=12),
)


@st.composite
def skill_file_text(draw: st.DrawFn) -> str:
    """A SKILL.md: YAML frontmatter (mostly valid keys, random values) or raw text."""
    front: dict[str, Any] = {}
    if draw(st.integers(0, 3)):
        front["name"] = draw(st.sampled_from(["fuzz-skill", "fuzz-skill", "other", "Fuzz-Skill"]))
    if draw(st.integers(0, 3)):
        front["description"] = draw(st.one_of(st.text(max_size=60), yaml_value))
    front.update(draw(st.dictionaries(frontmatter_key, yaml_value, max_size=3)))
    try:
        dumped = yaml.safe_dump(front, allow_unicode=True)
    except yaml.YAMLError:
        dumped = "name: fuzz-skill\n"
    opener = draw(st.sampled_from(["---\n", "---\r\n", "--- \n", "", "----\n"]))
    closer = draw(st.sampled_from(["---\n", "---", "--- \n", "", "...\n"]))
    return opener + dumped + closer + draw(awkward_text)


@fuzz(300)
@given(text=st.one_of(skill_file_text(), awkward_text, st.text(max_size=200)))
def test_skill_file_parser_returns_a_skill_or_a_skill_error(text: str) -> None:
    with scratch_dir() as folder:
        skill_dir = folder / "fuzz-skill"
        skill_dir.mkdir()
        (skill_dir / "SKILL.md").write_text(text, encoding="utf-8", newline="")
        try:
            skill = load_skill_file(skill_dir)
        except SkillError as err:
            assert "SKILL.md" in str(err) or "fuzz-skill" in str(err)
            return
        catalog = SkillCatalog.discover(folder)
    assert skill.name == "fuzz-skill"
    assert skill.description and skill.description == skill.description.strip()
    # The resident catalog is one line per skill, whatever the description held.
    assert catalog.render_catalog().count("\n") == 0
    assert catalog.render_catalog().startswith("- fuzz-skill: ")


@fuzz(100)
@given(data=st.binary(max_size=200))
def test_skill_file_parser_on_arbitrary_bytes(data: bytes) -> None:
    with scratch_dir() as folder:
        skill_dir = folder / "fuzz-skill"
        skill_dir.mkdir()
        (skill_dir / "SKILL.md").write_bytes(b"---\nname: fuzz-skill\n" + data)
        try:
            load_skill_file(skill_dir)
        except SkillError as err:
            assert "SKILL.md" in str(err)


@pytest.mark.parametrize("nesting", ["[" * 3000, "{a: " * 2000])
def test_skill_file_with_deeply_nested_yaml_is_a_skill_error(tmp_path: Path, nesting: str) -> None:
    skill_dir = tmp_path / "fuzz-skill"
    skill_dir.mkdir()
    (skill_dir / "SKILL.md").write_text(f"---\nname: fuzz-skill\ndescription: {nesting}\n---\nbody\n")
    with pytest.raises(SkillError, match=r"SKILL\.md"):
        load_skill_file(skill_dir)


# --------------------------------------------------------------------------- MEMORY.md and ledgers

_LABEL_OF = {
    "Preferences": "user-preference",
    "Conventions": "convention",
    "General Lessons": "general-lesson",
}

operator_line = st.one_of(
    plain_words,
    awkward_text.map(lambda t: t.replace("\n", " ").replace("\r", " ")),
    st.sampled_from(
        [
            "",
            "# Memory",
            "## Operator notes",
            "## Preferences",
            "##   conventions  ##",
            "## General Lessons",
            "### Not a section",
            "- operator bullet",
            "* [convention] starred",
            "```\n## fenced, not a section\n- fenced bullet\n```",
            "~~~\n# fenced\n~~~",
            "   - indented bullet",
            "<!-- keep me -->",
            "text without newline at EOF",
        ]
    ),
)


@st.composite
def memory_file_text(draw: st.DrawFn) -> str:
    lines = draw(st.lists(operator_line, max_size=12))
    text = draw(newline).join(lines)
    return text + draw(st.sampled_from(["", "\n", "\r\n"]))


entry_text = st.one_of(
    st.lists(plain_words, min_size=2, max_size=6).map(" ".join),
    awkward_text,
    st.sampled_from(
        [
            "## Injected heading",
            "line one\n## Injected\n- bullet",
            "# Top heading",
            "[convention] labelled",
            "- already a bullet",
            "```\n## fenced\n```",
            "tab\there\u2028and\x85more",
            "Prefer the left gripper for mugs",
        ]
    ),
)
memory_entry = st.builds(
    DurableMemoryEntry,
    section=st.sampled_from(SECTIONS),
    text=entry_text,
    confidence=st.sampled_from([0.9, 1.0]),
)


class _FixedConsolidator:
    """Proposes exactly the given entries (the fuzzed part), whatever the task was."""

    def __init__(self, proposal: MemoryConsolidation) -> None:
        self.proposal = proposal

    def consolidate(self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]):
        return self.proposal


def _insert_only(before: str, after: str, allowed_inserts: set[str]) -> None:
    """``after`` is ``before`` plus whole inserted lines (bullets or new headings) only;
    an unterminated line at an insertion point may gain its newline, nothing else changes."""
    old = before.splitlines(keepends=True)
    position = 0
    for line in after.splitlines(keepends=True):
        if position < len(old) and line == old[position]:
            position += 1
        elif (
            position < len(old)
            and not old[position].endswith("\n")
            and line.startswith(old[position])
            and line[len(old[position]) :] in {"\n", "\r\n"}
        ):
            position += 1  # the line before an insertion point got its newline
        else:
            assert line.rstrip("\r\n") in allowed_inserts, f"unexpected line {line!r} in {after!r}"
    assert position == len(old), f"operator lines lost from {before!r}: {old[position:]!r}"


def _headings(text: str) -> list[str]:
    return [section.key for section in SectionedDocument(text).sections]


_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


def _ends_inside_fence(text: str) -> bool:
    """Whether the file ends inside an unclosed code fence (same rule as SectionedDocument)."""
    fence: str | None = None
    for line in text.splitlines():
        match = _FENCE.match(line)
        if match:
            marker = match.group(1)[0]
            fence = marker if fence is None else (None if marker == fence else fence)
    return fence is not None


def _check_write(original: str, after: str, inserted_lines: set[str], headings: set[str]) -> None:
    if original:  # an empty file is replaced by the template: nothing to preserve
        _insert_only(original, after, inserted_lines | {f"## {h}" for h in headings})
    # No entry text adds a heading: only the controlled sections that were missing may appear.
    assert set(_headings(after)) - set(_headings(original)) <= {h.casefold() for h in headings}


@fuzz(250)
@given(original=memory_file_text(), entries=st.lists(memory_entry, min_size=1, max_size=4))
def test_memory_consolidation_only_inserts_and_keeps_operator_text(
    original: str, entries: list[DurableMemoryEntry]
) -> None:
    with scratch_dir() as folder:
        (folder / "MEMORY.md").write_bytes(original.encode("utf-8"))
        memory = FileMemory(folder, consolidator=_FixedConsolidator(MemoryConsolidation(tuple(entries))))
        before_entries = memory.memory_entries()
        trajectory = {"task_id": "t1", "goal": "g", "phase": "", "status": "completed", "events": []}
        result = memory.consolidate_trajectory(Trajectory.from_json(trajectory), allowed_tools=[])
        after = (folder / "MEMORY.md").read_bytes().decode("utf-8")
        after_entries = memory.memory_entries()
        resident = memory.resident_memory()
    accepted = [d for d in result["decisions"] if d["accepted"]]
    assert result["memory_written"] == len(accepted)
    _check_write(
        original, after, {f"- [{_LABEL_OF[d['section']]}] {d['text']}" for d in accepted}, set(SECTIONS)
    )
    for decision in accepted:
        assert "\n" not in decision["text"] and "\r" not in decision["text"]
    for section in SECTIONS:
        # No entry lost, none invented (order may differ when a section heading repeats).
        expected = Counter(before_entries[section])
        if not _ends_inside_fence(original):  # see the xfail test below
            expected.update(d["text"] for d in accepted if d["section"] == section)
        assert Counter(after_entries[section]) == expected
    # The projection shows the sections that have entries, in fixed order; nothing at all
    # when none has one.
    shown = [s for s in SECTIONS if after_entries[s]]
    headings = [line for line in resident.splitlines() if line.startswith("#")]
    assert headings == (["# Memory", *(f"## {s}" for s in shown)] if shown else [])


def test_entry_written_after_an_unclosed_fence_is_visible(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("Operator notes\n```\n")
    entry = DurableMemoryEntry("Preferences", "Prefer the left gripper for mugs", 0.9)
    memory = FileMemory(tmp_path, consolidator=_FixedConsolidator(MemoryConsolidation((entry,))))
    goal = "Use the left gripper for mugs, I prefer it"  # a Preference needs the operator's words
    trajectory = {"task_id": "t1", "goal": goal, "phase": "", "status": "completed", "events": []}
    result = memory.consolidate_trajectory(Trajectory.from_json(trajectory), allowed_tools=[])
    assert result["memory_written"] == 1
    assert memory.memory_entries()["Preferences"] == ["Prefer the left gripper for mugs"]


ledger_entry = st.builds(
    ToolExperienceEntry,
    tool=st.just("grasp"),
    outcome=st.sampled_from(["success", "failure"]),
    text=entry_text,
    confidence=st.just(0.95),
)
_EVIDENCE = [
    {
        "index": 0,
        "tool": "grasp",
        "arguments": {},
        "result": {"success": False, "reason": "slip"},
        "verdict": None,
    },
    {
        "index": 1,
        "tool": "grasp",
        "arguments": {},
        "result": {"success": True, "run_id": "r1"},
        "verdict": {"status": "success", "run_id": "r1", "failure_reason": None, "evidence": "held"},
    },
]


@fuzz(200)
@given(original=memory_file_text(), entries=st.lists(ledger_entry, min_size=1, max_size=4))
def test_ledger_consolidation_only_inserts_and_keeps_operator_text(
    original: str, entries: list[ToolExperienceEntry]
) -> None:
    proposal = MemoryConsolidation(tool_experience_entries=tuple(entries))
    with scratch_dir() as folder:
        memory = FileMemory(
            folder,
            consolidator=_FixedConsolidator(proposal),
            tool_experience_summarizer=_NoSummary(),
        )
        memory.ledger_path("grasp").write_bytes(original.encode("utf-8"))
        trajectory = {"task_id": "t1", "goal": "g", "phase": "", "status": "completed", "events": _EVIDENCE}
        result = memory.consolidate_trajectory(Trajectory.from_json(trajectory), allowed_tools=["grasp"])
        after = memory.ledger_path("grasp").read_bytes().decode("utf-8")
        ledger = memory.ledger_entries("grasp")
    accepted = [d for d in result["decisions"] if d["accepted"]]
    assert accepted or entries  # the evidence makes both outcomes acceptable
    _check_write(original, after, {f"- {d['text']}" for d in accepted}, {"Success", "Failure"})
    for decision in accepted:
        if not _ends_inside_fence(original):
            assert decision["text"] in ledger[decision["outcome"]]


class _NoSummary:
    def summarize(self, tool: str, *, success: list[str], failure: list[str]) -> str:
        return f"{tool}: {len(success)} successes, {len(failure)} failures"


@fuzz(200)
@given(
    memory_bytes=st.one_of(st.binary(max_size=200), memory_file_text().map(str.encode)),
    ledger_bytes=st.one_of(st.binary(max_size=200), memory_file_text().map(str.encode)),
    summary_cache=st.one_of(st.binary(max_size=60), st.just(b'{"grasp": {"sha256": 1, "summary": []}}')),
)
def test_memory_readers_on_arbitrary_bytes(
    memory_bytes: bytes, ledger_bytes: bytes, summary_cache: bytes
) -> None:
    with scratch_dir() as folder:
        memory = FileMemory(folder, tool_experience_summarizer=_NoSummary())
        (folder / "MEMORY.md").write_bytes(memory_bytes)
        memory.ledger_path("grasp").write_bytes(ledger_bytes)
        (folder / ".summary_cache.json").write_bytes(summary_cache)
        for read in (
            memory.memory_entries,
            memory.resident_memory,
            lambda: memory.ledger_entries("grasp"),
            lambda: memory.tool_experience_summaries(["grasp", "missing", "../escape"]),
            lambda: memory.cached_summary("grasp"),
        ):
            try:
                value = read()
            except MemoryStoreError as err:
                assert "not UTF-8" in str(err)
                continue
            json.dumps(value)  # plain data


@fuzz(300)
@given(name=st.one_of(st.text(max_size=20), st.sampled_from(["..", ".", "../x", "a/b", "a\x00b", "grasp"])))
def test_ledger_path_stays_in_the_ledger_folder(name: str) -> None:
    with scratch_dir() as folder:
        memory = FileMemory(folder)
        try:
            path = memory.ledger_path(name)
        except MemoryStoreError as err:
            assert "Invalid tool name" in str(err)
            return
        assert path.parent == folder / "tool_experience"
        assert path.name == f"{name}.md"


@fuzz(400)
@given(text=st.one_of(memory_file_text(), awkward_text, st.text(max_size=300)))
def test_sectioned_document_round_trips_and_entries_are_one_line(text: str) -> None:
    document = SectionedDocument(text)
    assert document.text() == text
    for section in ("Preferences", "operator notes", "Success"):
        for entry in document.entries(section, labels=tuple(_LABEL_OF.values())):
            assert entry and entry == entry.strip()
            assert len(entry.splitlines()) == 1
