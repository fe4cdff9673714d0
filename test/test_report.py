"""The HTML run report, built from run folders the real Harness wrote.

The main run drives the Harness with a scripted model, real FunctionTools, the real
base-motion safety filter, FileMemory with a scripted consolidator, and an
observation source that returns real OpenCV-drawn JPEGs (fresh, stale and missing
views, plus a depth preview). The page is checked as text and, when Chromium is
installed (scripts/ensure_chromium.sh), loaded headless to prove every image decodes.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from harness_ros.cli import main
from harness_ros.config import SafetyConfig
from harness_ros.errors import HarnessError, LLMError
from harness_ros.harness import Harness
from harness_ros.hooks import BaseMotionSafetyFilter
from harness_ros.memory import FileMemory, MemoryConsolidation
from harness_ros.memory.contracts import DurableMemoryEntry, ToolExperienceEntry
from harness_ros.model.contracts import ModelReply, ToolCall
from harness_ros.observation.contracts import Clearance, DepthSummary, Observation, ViewImage
from harness_ros.observation.pipeline import encode_jpeg, render_depth_preview, summarize_depth
from harness_ros.plugins import model_provider
from harness_ros.report import (
    REPORT_FILE,
    ReportError,
    model_label,
    render_report,
    write_report,
)
from harness_ros.tools import FeedbackSink, failure, success, tool
from harness_ros.trajectory import Trajectory
from harness_ros_sim.names import POLICY_LABEL

INSTRUCTION = "Bring the red cup <script>document.title='pwned'</script> & tell me"
FINAL = "I picked up the red cup. <b>Done</b>"
EVIDENCE = "Wrist view: the red cup sits between the gripper fingers, lifted 5 cm off the table."
OUT_OF_REACH = "object out of reach: the red cup is 0.90 m away, arm reach is 0.70 m"
FAILURE_LESSON = "Drive within 0.6 m of an object before pick_object; from farther it fails out of reach."
SUCCESS_LESSON = "pick_object succeeds when the object is within reach and visible in the wrist view."
TRANSIENT = "The red cup is currently on the kitchen table."
TIMID = "Maybe the user prefers mugs."


# ---------------------------------------------------------------------- fakes
class ScriptedModel:
    """Serves the decide replies in order (the ChatModel protocol)."""

    name = "scripted/report-test"

    def __init__(self, steps: Sequence[ModelReply | Exception]) -> None:
        self.steps = list(steps)

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        assert str(messages[0]["content"]).startswith("# harness_ros: decide")
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(f"id_{name}", name, json.dumps(arguments), arguments)


def camera_jpeg(label: str, colour: tuple[int, int, int], size: tuple[int, int] = (320, 240)) -> bytes:
    """A small scene: floor, a table and a coloured cup, with the view's name written in."""
    width, height = size
    img = np.full((height, width, 3), (200, 190, 180), np.uint8)
    cv2.rectangle(img, (0, height * 2 // 3), (width, height), (90, 110, 130), -1)
    cv2.rectangle(img, (width // 4, height // 2), (width * 3 // 4, height // 2 + 12), (40, 70, 120), -1)
    cv2.circle(img, (width // 2, height // 2 - 14), 12, colour, -1)
    cv2.putText(img, label, (8, 24), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (0, 0, 0), 2)
    return encode_jpeg(img, 80)


class CameraSource:
    """ObservationSource: a fresh front view, a stale wrist view, a missing torso view."""

    def __init__(self) -> None:
        self.front = camera_jpeg("front", (0, 0, 220))
        self.wrist = camera_jpeg("wrist", (0, 0, 220), (160, 120))
        depth = np.full((120, 160), 2.5, np.float32)
        depth[40:80, 60:100] = 0.9
        self.regions = summarize_depth(depth)
        self.preview = render_depth_preview(depth)

    def now(self) -> float:
        return 1_700_000_000.0

    def clearance(self) -> Clearance | None:
        return Clearance(1.5, 0.6, 0.8, 0.6, self.now(), 0.05, False)

    def observe(self) -> Observation:
        now = self.now()
        return Observation(
            time=now,
            views=(
                ViewImage("front", self.front, 320, 240, now - 0.1, 0.1, False),
                ViewImage("wrist", self.wrist, 160, 120, now - 3.2, 3.2, True),
                ViewImage("torso", b"", 0, 0, None, None, False, missing=True),
            ),
            depth=DepthSummary(self.regions, now - 0.2, 0.2, False, self.preview),
            clearance=self.clearance(),
            notes=("torso camera: no frame yet",),
        )

    def observe_after(self, after: float, timeout_s: float) -> Observation:
        return self.observe()


class HoldEvaluator:
    def evaluate(self, *, tool: str, run_id: str, post_condition: str, observation: Observation) -> Any:
        return {"status": "success", "evidence": EVIDENCE}


class LessonConsolidator:
    def consolidate(
        self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]
    ) -> MemoryConsolidation:
        return MemoryConsolidation(
            memory_entries=(
                DurableMemoryEntry("General Lessons", TRANSIENT, 0.9),
                DurableMemoryEntry("Preferences", TIMID, 0.2),
            ),
            tool_experience_entries=(
                ToolExperienceEntry("pick_object", "failure", FAILURE_LESSON, 0.9),
                ToolExperienceEntry("pick_object", "success", SUCCESS_LESSON, 0.9),
            ),
        )


def robot_tools() -> list[Any]:
    attempts: list[str] = []

    @tool(
        description="Drive straight.",
        physical=True,
        base_motion=True,
        distance_argument="distance_m",
        direction_argument="direction",
    )
    def drive(distance_m: float, direction: str, feedback: FeedbackSink) -> dict[str, Any]:
        feedback("drive", {"remaining_m": round(distance_m / 2, 3)})
        return success(moved_m=distance_m)

    @tool(
        description="Pick an object.",
        physical=True,
        evaluated=True,
        post_condition="the object is held in the gripper",
    )
    def pick_object(target: str) -> dict[str, Any]:
        attempts.append(target)
        if len(attempts) == 1:
            return failure(OUT_OF_REACH)
        return success(picked=target, run_id="pick-2")

    return [drive, pick_object]


def run_harness(runs_dir: Path, task_id: str, steps: Sequence[ModelReply | Exception], **kwargs: Any) -> Path:
    harness = Harness(model=ScriptedModel(steps), tools=robot_tools(), runs_dir=runs_dir, **kwargs)
    events = list(harness.run(INSTRUCTION, task_id=task_id))
    assert events[-1].type.value == "done"
    return runs_dir / task_id


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A completed fetch: clamped drive, out-of-reach pick, confirmed pick, final report."""
    root = tmp_path_factory.mktemp("report")
    source = CameraSource()
    steps = [
        ModelReply(
            "The cup is far away; driving closer.", (call("drive", distance_m=2.0, direction="forward"),)
        ),
        ModelReply(None, (call("pick_object", target="red cup"),)),
        ModelReply("Closer now, trying again.", (call("pick_object", target="red cup"),)),
        ModelReply(None, (call("finish_task", outcome="succeeded", summary=FINAL),)),
    ]
    return run_harness(
        root / "runs",
        "fetch-1",
        steps,
        memory=FileMemory(
            root / "memory", consolidator=LessonConsolidator(), tool_experience_summarizer=None
        ),
        observations=source,
        evaluator=HoldEvaluator(),
        hooks=[BaseMotionSafetyFilter(SafetyConfig(), source.clearance)],
        post_execution_wait_s=0.0,
    )


def images_in(page: str) -> list[str]:
    return re.findall(r'<img src="data:image/jpeg;base64,([A-Za-z0-9+/=]+)"', page)


# ---------------------------------------------------------------------- the page
def test_header_shows_instruction_status_model_and_turns(run_dir: Path) -> None:
    page = render_report(run_dir)
    assert "<title>Task fetch-1: unverified (completed)</title>" in page
    assert (
        "Bring the red cup &lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt; &amp; tell me"
        in page
    )
    assert "<script" not in page  # the instruction is text, and the page has no script of its own
    assert "scripted/report-test" in page
    assert POLICY_LABEL not in page  # only the demo policy is labelled so
    assert "<dt>Turns</dt><dd>4 (limit" in page
    assert page.count('<section class="turn"') == 4


def test_each_turn_shows_the_views_the_model_saw(run_dir: Path) -> None:
    page = render_report(run_dir)
    saved = sorted(run_dir.glob("turn_*.jpg"))
    assert len(saved) == 4 * 3  # front, wrist and the depth preview at each of 4 turns
    encoded = images_in(page)
    assert len(encoded) == len(saved) == page.count("<img ")
    assert {base64.b64decode(data) for data in encoded} == {path.read_bytes() for path in saved}
    decoded = cv2.imdecode(np.frombuffer(base64.b64decode(encoded[0]), np.uint8), cv2.IMREAD_COLOR)
    assert decoded is not None and decoded.shape == (240, 320, 3)
    assert 'alt="front view at turn 1 (age 0.10 s)"' in page
    assert "<strong>front</strong> · age 0.10 s" in page
    assert "<strong>wrist</strong> · STALE (age 3.20 s)" in page
    assert "<strong>torso</strong> · not started (no frame received yet)" in page
    assert "<strong>depth_preview</strong> · age 0.20 s" in page
    assert "forward 1.50 m · left 0.60 m · backward 0.80 m · right 0.60 m" in page
    assert "torso camera: no frame yet" in page
    assert re.search(r'(?:src|href)="(?!data:)', page) is None  # nothing fetched from outside


def test_turns_show_decision_safety_feedback_result_and_verdict(run_dir: Path) -> None:
    page = render_report(run_dir)
    turns = page.split('<section class="turn"')[1:]
    drive, failed_pick, confirmed_pick, final = turns
    assert "The cup is far away; driving closer." in drive
    assert "Tool call <code>drive</code>" in drive and "&quot;distance_m&quot;: 2.0" in drive
    assert "rewrite</span> <code>base_motion_safety</code> on <code>drive</code>" in drive
    assert "translation forward clamped: requested 2.000 m, admitted 1.400 m" in drive
    assert "&quot;distance_m&quot;: 1.4" in drive  # the rewritten arguments
    assert "<code>drive</code>: 1 update; last: <code>{&quot;remaining_m&quot;: 0.7}</code>" in drive
    assert "&quot;moved_m&quot;: 1.4" in drive
    assert "failure</span>" in failed_pick and OUT_OF_REACH in failed_pick
    assert "Evaluator verdict" not in failed_pick
    assert "<code>pick_object</code> run <code>pick-2</code>" in confirmed_pick
    assert EVIDENCE in confirmed_pick
    assert "Tool call <code>finish_task</code> with arguments" in final


def test_final_report_and_memory_changes(run_dir: Path) -> None:
    page = render_report(run_dir)
    final = page[page.index('<section id="final">') : page.index('<section id="memory">')]
    assert "I picked up the red cup. &lt;b&gt;Done&lt;/b&gt;" in final
    memory = page[page.index('<section id="memory">') :]
    accepted = memory[memory.index("<h3>Accepted (2)</h3>") : memory.index("<h3>Rejected (2)</h3>")]
    rejected = memory[memory.index("<h3>Rejected (2)</h3>") :]
    assert "ledger pick_object · failure" in accepted and FAILURE_LESSON in accepted
    assert "ledger pick_object · success" in accepted and SUCCESS_LESSON in accepted
    assert accepted.count("<code>accepted</code>") == 2
    assert (
        "a failure of pick_object was followed by an evaluator-confirmed success of pick_object" in accepted
    )
    assert TRANSIENT in rejected and "<code>transient:currently</code>" in rejected
    assert TIMID in rejected and "<code>below_confidence</code>" in rejected


def test_same_folder_gives_the_same_page(run_dir: Path, tmp_path: Path) -> None:
    first = render_report(run_dir)
    copy = tmp_path / "elsewhere" / run_dir.name
    shutil.copytree(run_dir, copy)
    assert render_report(copy) == first  # no clock, no absolute path in the page
    written = write_report(copy)
    assert written == copy / REPORT_FILE
    assert written.read_text(encoding="utf-8") == first
    assert render_report(copy) == first  # the report file itself is not read back


# ---------------------------------------------------------------------- partial runs
def test_task_that_failed_at_its_first_decision(tmp_path: Path) -> None:
    run = run_harness(tmp_path, "early", [LLMError("provider down after 3 retries")])
    page = render_report(run)
    assert "<title>Task early: failed</title>" in page
    assert "model provider failed: provider down after 3 retries" in page
    assert "No observation was recorded at this turn." in page
    assert "<img " not in page
    assert "Consolidation skipped" in page  # no memory configured


def test_torn_log_without_report_md_or_images(run_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "torn"
    shutil.copytree(run_dir, copy)
    lines = (copy / "events.jsonl").read_text(encoding="utf-8").splitlines()
    ended = [line for line in lines if json.loads(line)["type"] not in {"done", "memory_consolidation"}]
    (copy / "events.jsonl").write_text("\n".join([*ended, '{"type": "tool_res']), encoding="utf-8")
    (copy / "report.md").unlink()
    for image in copy.glob("turn_1_*.jpg"):
        image.unlink()
    page = render_report(copy)
    assert "<title>Task fetch-1: unfinished</title>" in page
    assert "The task did not finish" in page
    assert "No memory consolidation was recorded." in page
    assert "1 unreadable line(s) of events.jsonl were skipped" in page
    assert "image file turn_1_front.jpg is missing" in page
    assert page.count("<img ") == 3 * 3  # turns 2 to 4 keep their images


def test_only_image_files_of_the_run_folder_are_embedded(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "secret.jpg").write_bytes(camera_jpeg("secret", (0, 200, 0)))
    (run / "turn_1_front.jpg").write_bytes(camera_jpeg("front", (0, 0, 200)))
    view = {"name": "front", "width": 320, "height": 240, "age_s": 0.1, "freshness": "age 0.10 s"}
    data = {"views": [view], "images": ["turn_1_front.jpg", "../secret.jpg"]}
    event = {"type": "observation", "task_id": "t", "turn": 1, "time": 1.0, "data": data}
    (run / "events.jsonl").write_text(json.dumps(event) + "\n", encoding="utf-8")
    page = render_report(run)
    assert [base64.b64decode(data) for data in images_in(page)] == [(run / "turn_1_front.jpg").read_bytes()]
    assert "secret" not in page


@pytest.mark.parametrize("junk", [7, "x<i>", None, [1, "two"], {"a": {"b": 1}}, True])
def test_payloads_of_the_wrong_shape_still_render(run_dir: Path, tmp_path: Path, junk: Any) -> None:
    copy = tmp_path / "junk"
    shutil.copytree(run_dir, copy)
    mangled = []
    for line in (copy / "events.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        event["data"] = {key: junk for key in event["data"]}
        event["turn"] = junk if event["type"] == "verdict" else event["turn"]
        mangled.append(json.dumps(event))
    (copy / "events.jsonl").write_text("\n".join(mangled) + "\n", encoding="utf-8")
    page = render_report(copy)
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert "x<i>" not in page


@pytest.mark.parametrize(
    ("model", "label"),
    [
        ("harness_demo/fetch", f"{POLICY_LABEL} (harness_demo/fetch)"),
        ("openai/gpt-4o-mini", "openai/gpt-4o-mini"),
        ("", "not recorded"),
    ],
)
def test_model_label(model: str, label: str) -> None:
    # The label comes from the installed plugin that registered the provider as scripted.
    assert model_label(model, model_provider) == label


def test_a_scripted_provider_is_labelled_by_its_own_plugin() -> None:
    from harness_ros.model.contracts import ModelProvider

    def lookup(prefix: str) -> ModelProvider | None:
        return ModelProvider(lambda litellm: None, False, "a test script") if prefix == "mine" else None

    assert model_label("mine/x", lookup) == "a test script (mine/x)"
    assert model_label("harness_demo/fetch", lookup) == "harness_demo/fetch"  # not this lookup's
    assert model_label("mine/x") == "mine/x"  # no lookup: nothing is known of the provider


def test_demo_policy_is_announced_in_the_header(tmp_path: Path) -> None:
    event = {"type": "task_started", "task_id": "demo", "turn": None, "time": 1.0}
    event["data"] = {"instruction": "fetch", "model": "harness_demo/fetch"}
    (tmp_path / "events.jsonl").write_text(json.dumps(event) + "\n", encoding="utf-8")
    page = render_report(tmp_path, model_provider)
    assert f"<dt>Model</dt><dd>{POLICY_LABEL} (harness_demo/fetch)</dd>" in page
    assert "The task ended before its first turn." in page


# ---------------------------------------------------------------------- errors and CLI
def test_missing_folder_or_events_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"run folder '.*nowhere' does not exist"):
        render_report(tmp_path / "nowhere")
    with pytest.raises(ReportError, match=r"has no 'events.jsonl'"):
        write_report(tmp_path)
    assert issubclass(ReportError, HarnessError)


def test_cli_writes_the_page_and_prints_its_path(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "out" / "fetch.html"
    assert main(["report", str(run_dir), "-o", str(output)]) == 0
    assert capsys.readouterr().out.strip() == str(output)
    assert output.read_text(encoding="utf-8") == render_report(run_dir)


def test_cli_error_names_folder_and_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(tmp_path) in err and "events.jsonl" in err
    assert "Traceback" not in err


# ---------------------------------------------------------------------- headless Chromium
_PROBE = (
    '<pre id="probe">pending</pre><script>addEventListener("load", () => {'
    "const images = Array.from(document.images);"
    'document.getElementById("probe").textContent = "images=" + images.length'
    ' + " decoded=" + images.filter((i) => i.complete && i.naturalWidth > 0).length'
    ' + " scripts=" + document.scripts.length;});</script>'
)


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(
    _chromium() is None, reason="Chromium is not installed (scripts/ensure_chromium.sh installs it)"
)
def test_images_render_in_headless_chromium(run_dir: Path, tmp_path: Path) -> None:
    page = render_report(run_dir)
    assert '<meta http-equiv="Content-Security-Policy"' in page
    # The page forbids scripts; this copy drops that policy so the probe can count what
    # the browser decoded, and the instruction's <script> text could run if it were not escaped.
    probed = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>\n', "", page, count=1)
    probed = probed.replace("</body>", _PROBE + "\n</body>")
    assert "Content-Security-Policy" not in probed
    path = tmp_path / "probe.html"
    path.write_text(probed, encoding="utf-8")
    chromium = _chromium()
    assert chromium is not None
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=2000",
        "--dump-dom",
        path.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="probe">images=(\d+) decoded=(\d+) scripts=(\d+)</pre>', done.stdout)
    assert found is not None, f"probe did not run; DOM tail: {done.stdout[-500:]!r}"
    images, decoded, scripts = (int(value) for value in found.groups())
    expected = len(list(run_dir.glob("turn_*.jpg")))
    assert (images, decoded) == (expected, expected)
    assert scripts == 1  # only the probe: the instruction's <script> stayed text
    assert "pwned" not in re.search(r"<title>(.*?)</title>", done.stdout, re.S).group(1)
