"""What the model saw, on ``~/model_view/<view>/compressed`` (``sensor_msgs/CompressedImage``).

The topic ends in ``/compressed``, image_transport's name for its compressed transport:
RViz's Image display (image_transport underneath) shows it when given that topic (it
takes ``~/model_view/<view>`` as the base topic and ``compressed`` as the transport);
Foxglove and Lichtblick show the ``CompressedImage`` topic directly.

``ModelViewSource`` wraps the node's observation source. Each decision's observation
(``observe()``: the one the harness shows the model) has its budgeted JPEGs already
built; they are published as they are, one message per view (and per depth preview),
with no decoding or re-encoding: Foxglove, Lichtblick, RViz and ``harness-ros console``
show them next to the raw sensors. ``observe_after`` (a tool waiting for fresh frames)
is not a decision and publishes nothing. Nothing is published while ``enabled`` is false
(a model that takes no images saw none).

QoS: reliable, transient local, depth 1: a viewer that joins late gets the latest one.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from harness_ros.context.observation import observation_images
from harness_ros.observation.contracts import Clearance, FirstFrameSource, Observation, ObservationSource

if TYPE_CHECKING:
    from rclpy.node import Node
    from rclpy.publisher import Publisher

__all__ = ["MODEL_VIEW_QOS", "TRANSPORT", "ModelViewSource", "model_view_topic"]

TRANSPORT = "compressed"
"""image_transport's compressed transport: the last name of each model-view topic."""


def model_view_topic(view: str) -> str:
    """The node-relative topic of one view: ``~/model_view/<view>/compressed``."""
    return f"~/model_view/{view}/{TRANSPORT}"


MODEL_VIEW_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=1,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)


class ModelViewSource:
    """An ObservationSource that publishes each decision's images on ``~/model_view/<name>/compressed``."""

    def __init__(self, node: Node, source: ObservationSource) -> None:
        self._node = node
        self._source = source
        self._publishers: dict[str, Publisher[Any]] = {}  # of sensor_msgs/CompressedImage (no stubs)
        self._lock = threading.Lock()
        self.enabled = True

    def now(self) -> float:
        return self._source.now()

    def clearance(self) -> Clearance | None:
        return self._source.clearance()

    def observe(self) -> Observation:
        observation = self._source.observe()
        if self.enabled:
            try:
                self._publish(observation)
            except Exception as err:  # noqa: BLE001  a viewer topic must never fail a decision
                self._node.get_logger().warning(
                    f"cannot publish the model views: {type(err).__name__}: {err}"
                )
        return observation

    def observe_after(self, after: float, timeout_s: float) -> Observation:
        return self._source.observe_after(after, timeout_s)

    def wait_for_first_frames(self, timeout_s: float) -> bool:
        source = self._source
        return source.wait_for_first_frames(timeout_s) if isinstance(source, FirstFrameSource) else True

    def destroy(self) -> None:
        with self._lock:
            for publisher in self._publishers.values():
                self._node.destroy_publisher(publisher)
            self._publishers.clear()

    def _publish(self, observation: Observation) -> None:
        from sensor_msgs.msg import CompressedImage

        images = observation_images(observation)
        if not images:
            return
        stamp = self._node.get_clock().now().to_msg()
        for name, jpeg in images:
            with self._lock:
                publisher = self._publishers.get(name)
                if publisher is None:
                    publisher = self._publishers[name] = self._node.create_publisher(
                        CompressedImage, model_view_topic(name), MODEL_VIEW_QOS
                    )
            message = CompressedImage(format="jpeg")
            message.header.stamp = stamp
            message.header.frame_id = name
            message.data = jpeg
            publisher.publish(message)
