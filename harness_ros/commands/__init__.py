"""Sub-commands of ``harness-ros``: one module each, exposing ``register(subparsers)``."""
