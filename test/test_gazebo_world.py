"""worlds/apartment.sdf is generated from the Python sim's world spec and matches it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness_ros_sim.gazebo.world_sdf import REST_GAP_M, WORLD_SYSTEMS, main, pose_topic, world_sdf
from harness_ros_sim.sim.spec import apartment_spec

REPO = Path(__file__).resolve().parents[1]
WORLD = REPO / "sim" / "worlds" / "apartment.sdf"


def numbers(element: ET.Element | None) -> list[float]:
    assert element is not None and element.text is not None
    return [float(v) for v in element.text.split()]


def test_committed_world_is_the_generators_output() -> None:
    assert WORLD.read_text(encoding="utf-8") == world_sdf(apartment_spec()), (
        "worlds/apartment.sdf is stale: run python -m harness_ros_sim.gazebo.world_sdf"
    )


def test_check_mode_reports_a_stale_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "apartment.sdf"
    stale.write_text(world_sdf(apartment_spec()).replace("red_cup", "red_mug"), encoding="utf-8")
    assert main(["--output", str(stale), "--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["--output", str(stale)]) == 0
    assert main(["--output", str(stale), "--check"]) == 0


def test_world_has_the_systems_and_the_specs_name() -> None:
    world = ET.parse(WORLD).getroot().find("world")
    assert world is not None and world.get("name") == apartment_spec().name
    plugins = {(p.get("filename"), p.get("name")) for p in world.findall("plugin")}
    assert plugins == set(WORLD_SYSTEMS)
    assert {name.rsplit("::", 1)[1] for _, name in WORLD_SYSTEMS} == {
        "Physics",
        "SceneBroadcaster",
        "UserCommands",
        "Sensors",
    }


def test_every_box_of_the_spec_is_a_static_model_of_its_size_and_place() -> None:
    spec = apartment_spec()
    models = {m.get("name"): m for m in ET.parse(WORLD).getroot().iter("model")}
    for box in spec.boxes:
        model = models.pop(box.id)
        assert model.findtext("static") == "true"
        x, y, z, *_ = numbers(model.find("pose"))
        assert (x, y, z) == pytest.approx((box.x, box.y, box.height / 2))
        assert numbers(model.find("link/collision/geometry/box/size")) == pytest.approx(
            [box.size_x, box.size_y, box.height]
        )
        diffuse = numbers(model.find("link/visual/material/diffuse"))
        assert [round(c * 255) for c in diffuse[:3]] == list(box.rgb)
    for obj in spec.objects:
        model = models.pop(obj.id)
        assert model.findtext("static") is None, f"{obj.id} must be dynamic to be grasped"
        surface = spec.surface(obj.surface)
        assert surface is not None
        x, y, z, *_ = numbers(model.find("pose"))
        assert (x, y) == pytest.approx((obj.x, obj.y))
        # Resting on its surface: the cylinder's bottom just above the surface's top.
        assert z - obj.height / 2 == pytest.approx(surface.height + REST_GAP_M)
        cylinder = model.find("link/collision/geometry/cylinder")
        assert cylinder is not None
        assert float(cylinder.findtext("radius", "nan")) == pytest.approx(obj.radius)
        assert float(cylinder.findtext("length", "nan")) == pytest.approx(obj.height)
        assert float(model.findtext("link/inertial/mass", "0")) > 0
        publisher = model.find("plugin")
        assert publisher is not None and publisher.get("name") == "gz::sim::systems::PosePublisher"
        assert publisher.findtext("topic") == pose_topic(obj.id)
    assert set(models) == {"ground_plane"}, f"models not in the spec: {sorted(models)}"


def test_a_changed_spec_changes_the_world() -> None:
    spec = apartment_spec()
    moved = spec.model_copy(
        update={"objects": tuple(o.model_copy(update={"x": o.x + 0.01}) for o in spec.objects)}
    )
    assert world_sdf(moved) != world_sdf(spec)
