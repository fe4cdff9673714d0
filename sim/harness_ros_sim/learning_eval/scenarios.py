"""The scenario suite: seeded fetch tasks in the apartment, each with a known difficulty.

Episode ``i`` of suite seed ``S`` depends on (S, i) only, never on how many episodes a
run has. Its kind follows a fixed rotation (``KIND_ROTATION``), so every run mixes the
difficulties evenly and a lesson learned on one kind has later episodes to pay off on.
The seed picks the object, the surfaces, where the object lies, where the robot starts,
the sim seed and the wording.

A candidate is kept only when rehearsing the direct plan on the pure ``World`` (drive to
the source surface, pick, drive to the target, place; what an agent does without
experience) meets exactly the kind's challenges, and when a reference plan (approach
the object, grasp again, go through areas) ends with the object on the target. So a
``reach`` scenario really fails with "object out of reach" from the default standoff,
and every scenario is solvable. The furniture never changes; only objects and the
robot's start move, so the world keeps the name ``apartment`` (the sim evaluator
looks surface sizes up by that name).
"""

from __future__ import annotations

import copy
import itertools
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness_ros.errors import HarnessError
from harness_ros_sim.learning_eval.contracts import Challenge, ObjectOnSurface, Scenario, ScenarioKind
from harness_ros_sim.sim.spec import ObjectSpec, RobotSpec, WorldSpec, apartment_spec
from harness_ros_sim.sim.world import Outcome, World

__all__ = [
    "KIND_ROTATION",
    "REQUIRED_CHALLENGES",
    "SLIP_PROBABILITY",
    "generate_suite",
    "make_scenario",
    "phrase",
    "world_yaml",
    "write_world",
]

KIND_ROTATION: tuple[ScenarioKind, ...] = (
    ScenarioKind.REACH,
    ScenarioKind.HIDDEN,
    ScenarioKind.SLIPPERY,
    ScenarioKind.BLOCKED,
    ScenarioKind.PLAIN,
)
REQUIRED_CHALLENGES: dict[ScenarioKind, frozenset[Challenge]] = {
    ScenarioKind.REACH: frozenset({Challenge.OUT_OF_REACH}),
    ScenarioKind.HIDDEN: frozenset({Challenge.NOT_VISIBLE}),
    ScenarioKind.SLIPPERY: frozenset({Challenge.SLIP}),
    ScenarioKind.BLOCKED: frozenset({Challenge.PATH_BLOCKED}),
    ScenarioKind.PLAIN: frozenset(),
}
SLIP_PROBABILITY = 0.5
"""The sim's slip probability in every episode (the rehearsal uses the same)."""

_OFFICE_SURFACES = ("office_desk", "office_shelf")
_OPEN_SURFACES = ("kitchen_table", "kitchen_counter", "coffee_table")
_HIDDEN_SOURCES = ("kitchen_counter", "kitchen_table")
_START_AREAS = ("kitchen", "living_room")
_OBJECT_GAP_M = 0.15
"""Closest distance between two objects' centres on one surface."""
_EDGE_MARGIN_M = 0.03
_MAX_CANDIDATES = 3000
_MAX_REGRASPS = 3

_TEMPLATES = (
    "Could you bring me the {object} from the {source} and leave it on the {target}?",
    "Please fetch the {object} from the {source} and put it on the {target}.",
    "Would you move the {object} from the {source} over to the {target}?",
    "Can you grab the {object} from the {source} and set it down on the {target}, please?",
)
"""How a person asks. Each names the source with "from the" and the target with
"on/to the", which is also how the scripted demo policy reads an instruction."""


def _words(identifier: str) -> str:
    return identifier.replace("_", " ")


def phrase(template: int, object_id: str, source: str, target: str) -> str:
    """The instruction for a fetch, in the words of template ``template``."""
    text = _TEMPLATES[template % len(_TEMPLATES)]
    return text.format(object=_words(object_id), source=_words(source), target=_words(target))


# ---------------------------------------------------------------------- rehearsal
class _UnwantedChallengeError(Exception):
    """The rehearsal met a challenge the scenario kind does not allow: reject early."""


@dataclass
class _Rehearsal:
    """Runs plans on the pure world and notes what failed and how it was fixed."""

    world: World
    allowed: frozenset[Challenge]
    challenges: list[Challenge] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)

    def _note(self, challenge: Challenge) -> None:
        # Stopping here keeps the search cheap: a waypoint search costs ~100 ms.
        if challenge not in self.allowed:
            raise _UnwantedChallengeError(challenge.value)
        if challenge not in self.challenges:
            self.challenges.append(challenge)

    def _act(self, call: str, run: Callable[[], Outcome]) -> Outcome:
        outcome = run()
        self.steps.append(f"{call}: {'ok' if outcome.success else outcome.message}")
        return outcome

    def navigate(self, target: str) -> bool:
        """Drive to ``target``; a blocked straight line is tried again through 1-2 areas."""
        outcome = self._act(f"navigate_to({target})", lambda: self.world.navigate_to(target))
        if outcome.success:
            return True
        if not outcome.message.startswith("path blocked"):
            return False
        self._note(Challenge.PATH_BLOCKED)
        areas = [a.name for a in self.world.spec.areas if a.name != target]
        for route in itertools.chain.from_iterable(itertools.permutations(areas, n) for n in (1, 2)):
            trial = copy.deepcopy(self.world)
            if all(trial.navigate_to(area).success for area in route) and trial.navigate_to(target).success:
                for area in route:
                    self._act(f"navigate_to({area})", lambda a=area: self.world.navigate_to(a))  # type: ignore[misc]
                return self._act(f"navigate_to({target})", lambda: self.world.navigate_to(target)).success
        return False

    def pick(self, object_id: str) -> bool:
        """Pick; out of reach or not visible -> approach the object; a slip -> grasp again."""
        outcome = self._act(f"pick_object({object_id})", lambda: self.world.pick_object(object_id))
        if not outcome.success and outcome.message.startswith(("object out of reach", "object not visible")):
            reach = outcome.message.startswith("object out of reach")
            self._note(Challenge.OUT_OF_REACH if reach else Challenge.NOT_VISIBLE)
            if not self.navigate(object_id):
                return False
            outcome = self._act(f"pick_object({object_id})", lambda: self.world.pick_object(object_id))
        regrasps = 0
        while (
            not outcome.success and outcome.message.startswith("grasp slipped") and regrasps < _MAX_REGRASPS
        ):
            self._note(Challenge.SLIP)
            regrasps += 1
            outcome = self._act(f"pick_object({object_id})", lambda: self.world.pick_object(object_id))
        return outcome.success

    def place(self, surface_id: str) -> bool:
        return self._act(f"place_object({surface_id})", lambda: self.world.place_object(surface_id)).success


def _rehearse(
    candidate: _Candidate, allowed: frozenset[Challenge]
) -> tuple[tuple[Challenge, ...], tuple[str, ...]] | None:
    """(challenges met, reference plan) when the fetch can be done in this world meeting
    only ``allowed`` challenges, else None."""
    world = World(candidate.world, seed=candidate.world_seed, slip_probability=SLIP_PROBABILITY)
    rehearsal = _Rehearsal(world, allowed)
    object_id, target = candidate.object_id, candidate.target
    try:
        done = (
            rehearsal.navigate(candidate.source)
            and rehearsal.pick(object_id)
            and rehearsal.navigate(target)
            and rehearsal.place(target)
        )
    except _UnwantedChallengeError:
        return None
    if not done:
        return None
    condition = ObjectOnSurface(object_id, target)
    if not condition.check(rehearsal.world.ground_truth())[0]:
        return None
    return tuple(rehearsal.challenges), tuple(rehearsal.steps)


# ---------------------------------------------------------------------- candidates
@dataclass(frozen=True)
class _Candidate:
    object_id: str
    source: str
    target: str
    world: WorldSpec
    world_seed: int


def _surfaces(kind: ScenarioKind) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(possible sources, possible targets): only ``blocked`` sends the robot into the office."""
    if kind is ScenarioKind.BLOCKED:
        return _OPEN_SURFACES, _OFFICE_SURFACES
    if kind is ScenarioKind.HIDDEN:
        # Only the kitchen's long sides leave an object outside the 80 deg field of view
        # from the default standoff; sampling elsewhere would only be rejected.
        return _HIDDEN_SOURCES, _OPEN_SURFACES
    return _OPEN_SURFACES, _OPEN_SURFACES


def _start_pose(rng: random.Random, base: WorldSpec, kind: ScenarioKind) -> RobotSpec | None:
    """Anywhere free in the kitchen or the living room (``hidden``: the kitchen), facing anywhere."""
    name = "kitchen" if kind is ScenarioKind.HIDDEN else rng.choice(_START_AREAS)
    area = next(a for a in base.areas if a.name == name)
    x0, y0, x1, y1 = area.region
    x = round(rng.uniform(x0, x1), 3)
    y = round(rng.uniform(y0, y1), 3)
    yaw = round(rng.uniform(-math.pi, math.pi), 3)
    probe = World(base)
    if probe.collision(x, y) is not None or probe.area_of(x, y) != name:
        return None
    return base.robot.model_copy(update={"x": x, "y": y, "yaw": yaw})


def _placed(
    rng: random.Random, base: WorldSpec, object_id: str, source: str, slippery: bool
) -> ObjectSpec | None:
    surface = base.surface(source)
    assert surface is not None
    spec = next(o for o in base.objects if o.id == object_id)
    inset = spec.radius + _EDGE_MARGIN_M
    x0, y0, x1, y1 = surface.bounds
    x = round(rng.uniform(x0 + inset, x1 - inset), 3)
    y = round(rng.uniform(y0 + inset, y1 - inset), 3)
    crowded = any(
        o.id != object_id and o.surface == source and math.hypot(o.x - x, o.y - y) < _OBJECT_GAP_M
        for o in base.objects
    )
    if crowded:
        return None
    return spec.model_copy(update={"x": x, "y": y, "surface": source, "slippery": slippery})


def _candidate(rng: random.Random, kind: ScenarioKind, base: WorldSpec) -> _Candidate | None:
    sources, targets = _surfaces(kind)
    object_id = rng.choice([o.id for o in base.objects])
    source = rng.choice(sources)
    target = rng.choice([t for t in targets if t != source])
    robot = _start_pose(rng, base, kind)
    placed = _placed(rng, base, object_id, source, slippery=kind is ScenarioKind.SLIPPERY)
    world_seed = rng.randrange(1, 2**31)
    if robot is None or placed is None:
        return None
    objects = [placed if o.id == object_id else o for o in base.objects]
    data = base.model_dump()
    data.update(objects=[o.model_dump() for o in objects], robot=robot.model_dump())
    return _Candidate(object_id, source, target, WorldSpec.model_validate(data), world_seed)


def make_scenario(suite_seed: int, episode: int, base: WorldSpec | None = None) -> Scenario:
    """Episode ``episode`` of suite ``suite_seed`` (deterministic; ``base`` defaults to the apartment)."""
    if episode < 0:
        raise ValueError(f"episode must be >= 0, got {episode}")
    base = base or apartment_spec()
    kind = KIND_ROTATION[episode % len(KIND_ROTATION)]
    rng = random.Random(f"harness_ros.eval:{suite_seed}:{episode}")
    required = REQUIRED_CHALLENGES[kind]
    for _ in range(_MAX_CANDIDATES):
        candidate = _candidate(rng, kind, base)
        if candidate is None:
            continue
        rehearsed = _rehearse(candidate, required)
        if rehearsed is None or frozenset(rehearsed[0]) != required:
            continue
        challenges, plan = rehearsed
        return Scenario(
            episode=episode,
            suite_seed=suite_seed,
            kind=kind,
            world_seed=candidate.world_seed,
            slip_probability=SLIP_PROBABILITY,
            instruction=phrase(
                rng.randrange(len(_TEMPLATES)), candidate.object_id, candidate.source, candidate.target
            ),
            object_id=candidate.object_id,
            source=candidate.source,
            target=candidate.target,
            challenges=challenges,
            reference_plan=plan,
            world=candidate.world,
            success=ObjectOnSurface(candidate.object_id, candidate.target),
        )
    msg = f"no {kind.value!r} scenario for seed {suite_seed}, episode {episode} in {_MAX_CANDIDATES} tries"
    raise HarnessError(msg)


def generate_suite(suite_seed: int, episodes: int, base: WorldSpec | None = None) -> tuple[Scenario, ...]:
    """Episodes 0..episodes-1 of suite ``suite_seed``."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    base = base or apartment_spec()
    return tuple(make_scenario(suite_seed, index, base) for index in range(episodes))


def world_yaml(spec: WorldSpec) -> str:
    """The world as YAML that ``load_world_spec`` reads back to an equal spec."""
    return yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False)


def write_world(scenario: Scenario, folder: Path) -> Path:
    """Write the scenario's world to ``<folder>/<scenario id>.yaml``; returns the path."""
    path = folder / f"{scenario.id}.yaml"
    header = (
        f"# {scenario.id}: {scenario.instruction}\n"
        f"# challenges: {', '.join(c.value for c in scenario.challenges) or 'none'}; "
        f"sim seed {scenario.world_seed}\n"
    )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(header + world_yaml(scenario.world), encoding="utf-8")
    except OSError as err:
        raise HarnessError(f"cannot write the scenario world {str(path)!r}: {err.strerror or err}") from None
    return path
