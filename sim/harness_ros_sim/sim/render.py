"""OpenCV renderer of the simulated world: RGB camera views, a depth image and a laser scan.

Each view is a pinhole projection of the same scene (floors, walls, furniture boxes,
objects as 16-sided cylinders, the gripper jaws), filled face by face with a per-pixel
z-buffer, so the RGB and depth images agree. Camera frames are optical (z forward,
x right, y down); depth is Z along the optical axis in millimetres (16UC1, 0 = no
return). The scan is 2D ray casting at the laser's height in the base frame
(REP 103: x forward, y left, angles counter-clockwise).

Cameras (base frame, metres; pitch down in degrees):
    front  x=0.25 z=0.40 pitch 0    low on the base, looking ahead (navigation)
    torso  x=0.05 z=1.25 pitch 35   above the arm, looking down at tables and gripper;
                                    the depth image is this camera's
    wrist  behind/above the gripper, pitch 60: shows the jaws and what is held or near
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from harness_ros_sim.sim.world import World

__all__ = [
    "CAMERA_MOUNTS",
    "CameraMount",
    "LaserScanData",
    "Renderer",
    "SceneView",
]

_SKY = np.array([205, 215, 225], dtype=np.uint8)
_LIGHT = np.array([0.35, 0.5, 0.8]) / np.linalg.norm([0.35, 0.5, 0.8])
_JAW_RGB = (70, 70, 75)
_CYLINDER_SIDES = 16
_NEAR = 0.03


@dataclass(frozen=True)
class CameraMount:
    """A camera fixed to the base (or, with ``on_gripper``, to the gripper)."""

    name: str
    x: float
    z: float
    pitch_deg: float
    hfov_deg: float
    on_gripper: bool = False


CAMERA_MOUNTS: dict[str, CameraMount] = {
    "front": CameraMount("front", x=0.25, z=0.40, pitch_deg=0.0, hfov_deg=80.0),
    "torso": CameraMount("torso", x=0.05, z=1.25, pitch_deg=35.0, hfov_deg=80.0),
    # Relative to the gripper centre: 0.10 m behind, 0.16 m above.
    "wrist": CameraMount("wrist", x=-0.10, z=0.16, pitch_deg=60.0, hfov_deg=90.0, on_gripper=True),
}


@dataclass(frozen=True)
class SceneView:
    """One rendered camera view: RGB (H x W x 3 uint8) and depth in metres (inf = nothing)."""

    name: str
    rgb: np.ndarray
    depth_m: np.ndarray

    def depth_mm(self) -> np.ndarray:
        """16UC1 depth: millimetres, 0 where nothing was hit or beyond 65.535 m."""
        depth = np.where(np.isfinite(self.depth_m), self.depth_m * 1000.0, 0.0)
        return np.clip(np.rint(depth), 0, 65535).astype(np.uint16)


@dataclass(frozen=True)
class LaserScanData:
    angle_min: float
    angle_max: float
    angle_increment: float
    range_min: float
    range_max: float
    ranges: np.ndarray


@dataclass(frozen=True)
class _Face:
    points: np.ndarray  # (N, 3) world coordinates, convex, counter-clockwise seen from outside
    normal: np.ndarray  # (3,) outward unit normal
    rgb: tuple[int, int, int]


@dataclass(frozen=True)
class _Label:
    text: str
    anchor: np.ndarray  # (3,) world point the label is attached to


class _Camera:
    """Pinhole camera at a world pose: projects world points, casts pixel rays."""

    def __init__(
        self, position: np.ndarray, yaw: float, pitch: float, hfov: float, *, width: int, height: int
    ) -> None:
        self.position = position
        forward = np.array(
            [math.cos(pitch) * math.cos(yaw), math.cos(pitch) * math.sin(yaw), -math.sin(pitch)]
        )
        right = np.array([math.sin(yaw), -math.cos(yaw), 0.0])
        down = np.cross(forward, right)
        self.rotation = np.stack([right, down, forward])  # world -> optical
        self.width, self.height = width, height
        self.fx = (width / 2) / math.tan(hfov / 2)
        self.fy = self.fx
        self.cx, self.cy = width / 2, height / 2
        self.tan_x = (width / 2) / self.fx * 1.02
        self.tan_y = (height / 2) / self.fy * 1.02
        # Ray direction components per column / row, for plane depth per pixel.
        self.ray_x = ((np.arange(width) + 0.5 - self.cx) / self.fx).astype(np.float32)
        self.ray_y = ((np.arange(height) + 0.5 - self.cy) / self.fy).astype(np.float32)

    def to_camera(self, points: np.ndarray) -> np.ndarray:
        camera: np.ndarray = (points - self.position) @ self.rotation.T
        return camera

    def project(self, cam_points: np.ndarray) -> np.ndarray:
        z = cam_points[:, 2]
        return np.stack(
            [self.fx * cam_points[:, 0] / z + self.cx, self.fy * cam_points[:, 1] / z + self.cy], axis=1
        )

    def clip(self, cam_points: np.ndarray) -> np.ndarray:
        """Sutherland-Hodgman clipping of a convex polygon to the view frustum."""
        planes = (
            np.array([0.0, 0.0, 1.0, -_NEAR]),
            np.array([1.0, 0.0, self.tan_x, 0.0]),
            np.array([-1.0, 0.0, self.tan_x, 0.0]),
            np.array([0.0, 1.0, self.tan_y, 0.0]),
            np.array([0.0, -1.0, self.tan_y, 0.0]),
        )
        polygon = cam_points
        for plane in planes:
            if len(polygon) == 0:
                break
            side = polygon @ plane[:3] + plane[3]
            if np.all(side >= 0):
                continue
            out: list[np.ndarray] = []
            count = len(polygon)
            for i in range(count):
                a, b = polygon[i], polygon[(i + 1) % count]
                sa, sb = side[i], side[(i + 1) % count]
                if sa >= 0:
                    out.append(a)
                if (sa >= 0) != (sb >= 0):
                    out.append(a + (b - a) * (sa / (sa - sb)))
            polygon = np.array(out) if out else np.zeros((0, 3))
        return polygon


class Renderer:
    """Renders views of a ``World``; one instance per image size, reusable across frames."""

    def __init__(self, width: int = 640, height: int = 480, *, labels: bool = True) -> None:
        if width < 16 or height < 16:
            msg = f"image size must be at least 16x16, got {width}x{height}"
            raise ValueError(msg)
        self.width, self.height = width, height
        self.labels = labels

    # -- cameras -------------------------------------------------------------------

    def camera(self, world: World, name: str) -> _Camera:
        mount = CAMERA_MOUNTS[name]
        pose = world.pose
        c, s = math.cos(pose.yaw), math.sin(pose.yaw)
        if mount.on_gripper:
            gx, gy, gz = world.gripper_position()
            position = np.array([gx + c * mount.x, gy + s * mount.x, gz + mount.z])
        else:
            position = np.array([pose.x + c * mount.x, pose.y + s * mount.x, mount.z])
        return _Camera(
            position,
            pose.yaw,
            math.radians(mount.pitch_deg),
            math.radians(mount.hfov_deg),
            width=self.width,
            height=self.height,
        )

    # -- views ---------------------------------------------------------------------

    def render(self, world: World, name: str) -> SceneView:
        """Render camera ``name`` (front, torso or wrist)."""
        camera = self.camera(world, name)
        faces, labels = _scene(world)
        rgb = np.empty((self.height, self.width, 3), dtype=np.uint8)
        rgb[:] = _SKY
        depth = np.full((self.height, self.width), np.inf, dtype=np.float32)
        for face in faces:
            _draw_face(camera, face, rgb, depth)
        if self.labels:
            for label in labels:
                _draw_label(camera, label, rgb, depth)
        return SceneView(name, rgb, depth)

    def render_all(self, world: World) -> dict[str, SceneView]:
        return {name: self.render(world, name) for name in CAMERA_MOUNTS}

    def scan(
        self,
        world: World,
        *,
        beams: int = 360,
        range_min: float = 0.05,
        range_max: float = 10.0,
        height: float = 0.2,
    ) -> LaserScanData:
        """A 360-beam LaserScan at the base centre: nearest box taller than the laser plane."""
        increment = 2 * math.pi / beams
        angles = -math.pi + increment * np.arange(beams)
        world_angles = angles + world.pose.yaw
        dx, dy = np.cos(world_angles), np.sin(world_angles)
        ranges = np.full(beams, np.inf)
        ox, oy = world.pose.x, world.pose.y
        with np.errstate(divide="ignore", invalid="ignore"):
            for box in world.spec.boxes:
                if box.height <= height:
                    continue
                x0, y0, x1, y1 = box.bounds
                tx0, tx1 = (x0 - ox) / dx, (x1 - ox) / dx
                ty0, ty1 = (y0 - oy) / dy, (y1 - oy) / dy
                t_near = np.maximum(np.minimum(tx0, tx1), np.minimum(ty0, ty1))
                t_far = np.minimum(np.maximum(tx0, tx1), np.maximum(ty0, ty1))
                hit = (t_far >= np.maximum(t_near, 0.0)) & ~np.isnan(t_near) & ~np.isnan(t_far)
                t_hit = np.where(t_near > 0, t_near, 0.0)
                ranges = np.where(hit, np.minimum(ranges, t_hit), ranges)
        ranges = np.where(ranges > range_max, np.inf, ranges)
        ranges = np.where(ranges < range_min, -np.inf, ranges)  # REP 117: too close
        return LaserScanData(
            angle_min=-math.pi,
            angle_max=-math.pi + increment * (beams - 1),
            angle_increment=increment,
            range_min=range_min,
            range_max=range_max,
            ranges=ranges.astype(np.float32),
        )


# -- scene -------------------------------------------------------------------------


def _scene(world: World) -> tuple[list[_Face], list[_Label]]:
    faces: list[_Face] = []
    labels: list[_Label] = []
    for area in reversed(world.spec.areas):  # earlier areas win: drawn last, same depth
        x0, y0, x1, y1 = area.region
        floor = np.array([[x0, y0, 0.0], [x1, y0, 0.0], [x1, y1, 0.0], [x0, y1, 0.0]])
        faces.append(_Face(floor, np.array([0.0, 0.0, 1.0]), area.floor_rgb))
    for box in world.spec.boxes:
        faces.extend(_box_faces((box.x, box.y), 0.0, (box.size_x, box.size_y), (0.0, box.height), box.rgb))
        if box.kind == "surface":
            labels.append(_Label(box.id, np.array([box.x, box.y, box.height])))
    for object_id, state in world.objects.items():
        x, y, z = world.object_position(object_id)
        spec = state.spec
        faces.extend(_cylinder_faces((x, y, z), spec.radius, spec.height, spec.rgb))
        labels.append(_Label(object_id, np.array([x, y, z + spec.height])))
    faces.extend(_jaw_faces(world))
    return faces, labels


def _box_faces(
    centre: tuple[float, float],
    yaw: float,
    size: tuple[float, float],
    z_range: tuple[float, float],
    rgb: tuple[int, int, int],
) -> list[_Face]:
    """Top and four sides of a box turned by ``yaw`` (the bottom is never seen)."""
    (cx, cy), (sx, sy), (z0, z1) = centre, size, z_range
    c, s = math.cos(yaw), math.sin(yaw)
    local = [(-sx / 2, -sy / 2), (sx / 2, -sy / 2), (sx / 2, sy / 2), (-sx / 2, sy / 2)]
    corners = [(cx + c * u - s * v, cy + s * u + c * v) for u, v in local]
    bottom = [np.array([x, y, z0]) for x, y in corners]
    top = [np.array([x, y, z1]) for x, y in corners]
    faces = [_Face(np.array(top), np.array([0.0, 0.0, 1.0]), rgb)]
    for i in range(4):
        j = (i + 1) % 4
        edge = top[j] - top[i]
        normal = np.array([edge[1], -edge[0], 0.0])
        normal /= np.linalg.norm(normal)
        faces.append(_Face(np.array([bottom[i], bottom[j], top[j], top[i]]), normal, rgb))
    return faces


def _cylinder_faces(
    base: tuple[float, float, float], radius: float, height: float, rgb: tuple[int, int, int]
) -> list[_Face]:
    """An upright cylinder as a 16-sided prism standing on ``base``."""
    x, y, z = base
    angles = np.linspace(0, 2 * math.pi, _CYLINDER_SIDES, endpoint=False)
    ring = np.stack([x + radius * np.cos(angles), y + radius * np.sin(angles)], axis=1)
    red, green, blue = (min(255, int(v * 1.15 + 20)) for v in rgb)
    lighter = (red, green, blue)
    faces = [
        _Face(np.column_stack([ring, np.full(len(ring), z + height)]), np.array([0.0, 0.0, 1.0]), lighter)
    ]
    for i in range(len(ring)):
        j = (i + 1) % len(ring)
        mid = angles[i] + math.pi / _CYLINDER_SIDES
        normal = np.array([math.cos(mid), math.sin(mid), 0.0])
        quad = np.array(
            [[*ring[i], z], [*ring[j], z], [*ring[j], z + height], [*ring[i], z + height]], dtype=float
        )
        faces.append(_Face(quad, normal, rgb))
    return faces


def _jaw_faces(world: World) -> list[_Face]:
    """Two gripper fingers around the gripper centre; closed on a held object."""
    gx, gy, gz = world.gripper_position()
    yaw = world.pose.yaw
    half_gap = 0.07
    if world.holding is not None:
        half_gap = world.objects[world.holding].spec.radius + 0.008
    faces: list[_Face] = []
    for side in (-1.0, 1.0):
        offset = side * (half_gap + 0.008)
        cx, cy = gx - math.sin(yaw) * offset, gy + math.cos(yaw) * offset
        faces.extend(_box_faces((cx, cy), yaw, (0.05, 0.016), (gz - 0.05, gz + 0.06), _JAW_RGB))
    return faces


# -- rasterisation -----------------------------------------------------------------------


def _shade(rgb: tuple[int, int, int], normal: np.ndarray) -> tuple[int, int, int]:
    light = 0.6 + 0.4 * max(0.0, float(normal @ _LIGHT))
    return tuple(min(255, int(v * light)) for v in rgb)  # type: ignore[return-value]


def _draw_face(camera: _Camera, face: _Face, rgb: np.ndarray, depth: np.ndarray) -> None:
    # Back faces cannot be seen: every solid here is closed.
    if float((camera.position - face.points[0]) @ face.normal) <= 0:
        return
    cam = camera.clip(camera.to_camera(face.points))
    if len(cam) < 3:
        return
    pixels = camera.project(cam)
    u0 = max(0, math.floor(pixels[:, 0].min()))
    v0 = max(0, math.floor(pixels[:, 1].min()))
    u1 = min(camera.width, math.ceil(pixels[:, 0].max()) + 1)
    v1 = min(camera.height, math.ceil(pixels[:, 1].max()) + 1)
    if u1 <= u0 or v1 <= v0:
        return
    mask = np.zeros((v1 - v0, u1 - u0), dtype=np.uint8)
    shifted = np.rint((pixels - [u0, v0]) * 16 - 8).astype(np.int32)  # 4 fractional bits
    cv2.fillConvexPoly(mask, shifted, 1, lineType=cv2.LINE_8, shift=4)
    if not mask.any():
        return
    # Depth of the face's plane along each pixel ray: Z = (n . p) / (n . ray).
    normal_cam = (camera.rotation @ face.normal).astype(np.float32)
    offset = np.float32(normal_cam @ cam[0])
    denominator = normal_cam[0] * camera.ray_x[None, u0:u1] + normal_cam[1] * camera.ray_y[v0:v1, None]
    denominator += normal_cam[2]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = offset / denominator
    region = depth[v0:v1, u0:u1]
    write = mask.view(bool)
    write &= z > 0
    write &= z <= region
    np.copyto(region, z, where=write)
    np.copyto(
        rgb[v0:v1, u0:u1], np.array(_shade(face.rgb, face.normal), dtype=np.uint8), where=write[..., None]
    )


def _draw_label(camera: _Camera, label: _Label, rgb: np.ndarray, depth: np.ndarray) -> None:
    cam = camera.to_camera(label.anchor[None, :])
    if cam[0, 2] <= _NEAR:
        return
    u, v = camera.project(cam)[0]
    if not (0 <= u < camera.width and 0 <= v < camera.height):
        return
    seen = depth[int(v), int(u)]
    if seen + 0.05 < cam[0, 2]:  # something nearer hides the anchor
        return
    scale = max(0.35, min(0.6, camera.width / 1100))
    (text_w, _), _ = cv2.getTextSize(label.text, cv2.FONT_HERSHEY_SIMPLEX, scale, 1)
    org = (int(u - text_w / 2), int(v - 6))
    cv2.putText(rgb, label.text, org, cv2.FONT_HERSHEY_SIMPLEX, scale, (0, 0, 0), 3, cv2.LINE_AA)
    cv2.putText(rgb, label.text, org, cv2.FONT_HERSHEY_SIMPLEX, scale, (255, 255, 255), 1, cv2.LINE_AA)
