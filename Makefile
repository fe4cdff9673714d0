# harness_ros: two commands on a fresh machine.
#   make demo   run the demo against the simulated robot
#   make test   lint + type check + the whole test suite
#   make demo-local   the same demo, decided by a local language model (llama.cpp, offline)
# They create .venv on first use and are no-ops afterwards.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.harness_ros-installed
IFACE_STAMP := $(VENV)/.harness_ros-interfaces-built
STAND_IN_STAMP := $(VENV)/.harness_ros-test-interfaces-built

.PHONY: all venv interfaces test-interfaces demo demo-local local-model test-model test lint typecheck format check bench faults clean

# The local model: 1.5b (Qwen2.5-Coder-1.5B-Instruct, 1.1 GB, the demo's) or 0.5b (0.5 GB,
# what the tests drive). Files go to ~/.cache/harness_ros/models, checked by sha256.
LOCAL_MODEL ?= 1.5b
TEST_LOCAL_MODEL ?= 0.5b

all: test

venv: $(STAMP)

# The first install downloads about 1 GB: pip prints what it collects and installs, so
# progress shows (no --quiet there).
$(STAMP): requirements.txt constraints.txt setup.py sim/setup.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "installing the Python and ROS 2 packages into $(VENV) (about 1 GB the first time)"
	$(BIN)/python -m pip install --progress-bar on -r requirements.txt -c constraints.txt
	$(BIN)/python -m pip install --quiet --no-deps -e . -e sim
	@touch $@

# What the demo runs: harness_sim_msgs only.
interfaces: $(IFACE_STAMP)

$(IFACE_STAMP): $(STAMP) $(shell find interfaces -type f -not -path '*/build/*' 2>/dev/null)
	scripts/build_interfaces.sh $(VENV)
	@touch $@

# What only the tests need: the nav2_msgs / control_msgs stand-ins of Humble, Jazzy and
# Kilted (test/interfaces/README.md).
test-interfaces: $(STAND_IN_STAMP)

$(STAND_IN_STAMP): $(IFACE_STAMP) $(shell find test/interfaces -type f 2>/dev/null) scripts/build_interfaces.sh
	scripts/build_interfaces.sh $(VENV) --test-stand-ins
	@touch $@

demo: $(IFACE_STAMP)
	$(BIN)/harness-ros demo

local-model: $(STAMP)
	scripts/install_local_model.sh $(VENV) $(LOCAL_MODEL)

demo-local: $(IFACE_STAMP) local-model
	$(BIN)/harness-ros demo --model local/$(LOCAL_MODEL)

# The physics robot (Stretch 3 in MuJoCo) and one harness task on it, with scripted
# decisions: the physics node, the harness node with config/robots/stretch3_physics.yaml
# and `harness-ros task`, as test/test_physics_harness.py runs them (docs/physics-sim.md).
demo-physics: $(STAND_IN_STAMP)
	$(BIN)/python -m pytest -q -s -p no:cacheprovider test/test_physics_harness.py -k scripted_fetch

# The model the real-model test drives (test/test_local_model_sim.py requires it in `make test`).
test-model: $(STAMP)
	scripts/install_local_model.sh $(VENV) $(TEST_LOCAL_MODEL)

check: $(STAMP)
	$(BIN)/harness-ros check --config config/example.yaml

lint: $(STAMP)
	$(BIN)/ruff check harness_ros sim test launch bench scripts setup.py
	$(BIN)/ruff format --check harness_ros sim test launch bench scripts setup.py

# mypy --strict on harness_ros (ros/ and commands/ too) and the sim's core (what and how: [tool.mypy] in pyproject.toml).
typecheck: $(STAMP)
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format harness_ros sim test launch bench scripts setup.py
	$(BIN)/ruff check --fix harness_ros sim test launch bench scripts setup.py

# The suite in three phases, each its own pytest summary: the tests that need no DDS domain
# on every core (pytest-xdist, TEST_JOBS workers); the `dds` ones (they take ros_env,
# test/conftest.py marks them; each has its own domain) on DDS_JOBS workers: they mostly
# wait on discovery and other processes (about a fifth of a core each), so three at once
# took 66 s where one at a time took 159 s; then the `serial` ones (a language model, a
# physics engine or a whole eval, CPU-heavy and timed) one at a time. All phases run; the
# first failure's status is make's. Soaks and benchmark runs (marker `bench`) are `make
# bench`'s. pytest exits 5 when it collected no test: that is a failure here too.
TEST_JOBS ?= auto
DDS_JOBS ?= 3
PYTEST := HARNESS_REQUIRE_LOCAL_MODEL=$(TEST_LOCAL_MODEL) $(BIN)/python -m pytest -q --durations=15

test: $(STAND_IN_STAMP) lint typecheck test-model
	@status=0; \
	$(PYTEST) -n $(TEST_JOBS) -m "not dds and not bench" test || status=$$?; \
	$(PYTEST) -n $(DDS_JOBS) -m "dds and not serial and not bench" test || { s=$$?; [ $$status -ne 0 ] || status=$$s; }; \
	$(PYTEST) -m "dds and serial and not bench" test || { s=$$?; [ $$status -ne 0 ] || status=$$s; }; \
	exit $$status

# The benchmark scripts, then the soaks and benchmark runs of the test suite (marker `bench`).
bench: $(IFACE_STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done
	$(BIN)/python -m pytest -q -m bench test

faults: $(IFACE_STAMP)
	HARNESS_FAULTS=1 $(BIN)/python -m pytest -q test/test_faults_memory.py test/test_faults_model.py test/test_faults_sensors.py test/test_faults_actions.py

clean:
	rm -rf $(VENV) build install log .pytest_cache .ruff_cache .mypy_cache
