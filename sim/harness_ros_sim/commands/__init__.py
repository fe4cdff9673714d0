"""``harness-ros demo``, ``eval`` and ``sim``: registered through the ``harness_ros.commands``
entry-point group, so the harness's own command line never imports this package."""
