"""Fast DDS settings the harness's own processes (demo, sim, tests) run with.

``FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA`` alone keeps Fast DDS's 512 KB shared-memory
segment: a 640x480 ``rgb8`` frame (921 KB) is then sent in fragments through it, and a
subscriber whose process is starved of CPU for a moment loses every frame of the stream,
not some (measured here: 5 of 16 process pairs received 0 of 30 frames with the reader at
``nice 19`` against three busy loops). With a 1 MB maximum message and 4 MB socket buffers
Fast DDS sizes the segment at 8 MB and sends each frame whole: 0 of 16 pairs received
nothing under the same load. It matters on the publishing side (the writer's segment);
processes with and without the options discover each other (both are ``LARGE_DATA``).
"""

from __future__ import annotations

LARGE_DATA_TRANSPORTS = "LARGE_DATA?max_msg_size=1MB&sockets_size=4MB"
"""The ``FASTDDS_BUILTIN_TRANSPORTS`` value for processes that publish camera frames."""
