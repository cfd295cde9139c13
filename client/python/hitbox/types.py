"""Value types of the Hitbox client: shapes, poses, colliders, changes, queries, results.

Conventions (as proto/hitbox/v1/geometry.proto): right-handed, metres, double
precision; vectors are (x, y, z), quaternions (x, y, z, w); a shape is placed
by a Pose: world = position + rotation * local. Ids are Python ints in
[0, 2^64 - 1] and are never rounded through a float.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple, Union

Vec3 = Tuple[float, float, float]
Quat = Tuple[float, float, float, float]

_U64_MAX = (1 << 64) - 1
_U32_MAX = (1 << 32) - 1


def vec3(v, what: str) -> Vec3:
    """`v` as a tuple of 3 floats, or ValueError naming `what`."""
    try:
        x, y, z = v
        return (float(x), float(y), float(z))
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected 3 numbers (x, y, z), got {v!r}") from None


def quat(q, what: str) -> Quat:
    """`q` as a tuple of 4 floats (x, y, z, w), or ValueError naming `what`."""
    try:
        x, y, z, w = q
        return (float(x), float(y), float(z), float(w))
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected 4 numbers (x, y, z, w), got {q!r}") from None


def uint64(v, what: str) -> int:
    """`v` as an int in [0, 2^64 - 1], or an error naming `what` (floats are refused: they round)."""
    if isinstance(v, bool) or not isinstance(v, int):
        if hasattr(v, "dtype") and getattr(v.dtype, "kind", "") in "ui":
            v = int(v)
        else:
            raise TypeError(f"{what}: expected an integer id in [0, 2^64), got {type(v).__name__} "
                            f"{v!r} (a float would lose precision above 2^53)")
    if not 0 <= v <= _U64_MAX:
        raise ValueError(f"{what}: {v} is outside [0, 2^64)")
    return v


def uint32(v, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        if hasattr(v, "dtype") and getattr(v.dtype, "kind", "") in "ui":
            v = int(v)
        else:
            raise TypeError(f"{what}: expected an integer in [0, 2^32), got {v!r}")
    if not 0 <= v <= _U32_MAX:
        raise ValueError(f"{what}: {v} is outside [0, 2^32)")
    return v


# --- Geometry ----------------------------------------------------------------


@dataclass(frozen=True)
class Pose:
    """A rigid placement: world = position + rotation * local (metres; unit quaternion x, y, z, w)."""

    position: Vec3 = (0.0, 0.0, 0.0)
    rotation: Quat = (0.0, 0.0, 0.0, 1.0)

    def __post_init__(self):
        object.__setattr__(self, "position", vec3(self.position, "Pose.position"))
        object.__setattr__(self, "rotation", quat(self.rotation, "Pose.rotation"))


def axis_angle(axis: Sequence[float], radians: float) -> Quat:
    """The unit quaternion turning `radians` about `axis` (any non-zero length)."""
    x, y, z = vec3(axis, "axis")
    n = math.sqrt(x * x + y * y + z * z)
    if n == 0:
        raise ValueError("axis: must not be zero")
    s = math.sin(radians / 2) / n
    return (x * s, y * s, z * s, math.cos(radians / 2))


@dataclass(frozen=True)
class Sphere:
    """A sphere about the local origin; radius in metres, in [1e-7, 1e6]."""

    radius: float


@dataclass(frozen=True)
class Box:
    """A box centred on the local origin; half-size along local x, y, z, metres."""

    half_extents: Vec3

    def __post_init__(self):
        object.__setattr__(self, "half_extents", vec3(self.half_extents, "Box.half_extents"))


@dataclass(frozen=True)
class Capsule:
    """The segment (0, -h, 0)..(0, h, 0) swept by a sphere of `radius`: total height 2h + 2r."""

    radius: float
    half_height: float


@dataclass(frozen=True)
class Cylinder:
    """A cylinder along local y with flat caps at y = +-half_height."""

    radius: float
    half_height: float


@dataclass(frozen=True)
class ConvexHull:
    """The solid convex hull of 4 to 256 points (local frame, metres)."""

    points: Tuple[Vec3, ...]

    def __post_init__(self):
        object.__setattr__(self, "points", tuple(vec3(p, f"ConvexHull.points[{i}]")
                                                 for i, p in enumerate(self.points)))


@dataclass(frozen=True)
class Mesh:
    """A two-sided triangle surface (colliders only): vertices (metres) and index triples.

    `vertices` and `triangles` may be sequences or numpy arrays of shape (V, 3) and (T, 3).
    """

    vertices: object
    triangles: object


@dataclass(frozen=True)
class Heightfield:
    """A heightfield surface (colliders only): p(r, c) = (c * dx, heights[r * cols + c], r * dz)."""

    rows: int
    cols: int
    cell_size: Tuple[float, float]
    heights: object


@dataclass(frozen=True)
class CompoundChild:
    """A convex child of a Compound, placed in the compound's frame."""

    shape: "Shape"
    position: Vec3 = (0.0, 0.0, 0.0)
    rotation: Quat = (0.0, 0.0, 0.0, 1.0)


@dataclass(frozen=True)
class Compound:
    """The union of 1 to 64 convex children moving as one collider (colliders only)."""

    children: Tuple[CompoundChild, ...]


Shape = Union[Sphere, Box, Capsule, Cylinder, ConvexHull, Mesh, Heightfield, Compound]


# --- Colliders and changes ----------------------------------------------------


@dataclass
class Collider:
    """One collider of a session: caller-chosen id (uint64), shape, pose, layer in [0, 31], user data."""

    id: int
    shape: Shape
    pose: Pose = field(default_factory=Pose)
    layer: int = 0
    user_data: int = 0


@dataclass(frozen=True)
class Add:
    """Change: insert a new collider (its id must not exist)."""

    collider: Collider


@dataclass(frozen=True)
class Replace:
    """Change: replace shape, pose, layer and user data of an existing id."""

    collider: Collider


@dataclass(frozen=True)
class Move:
    """Change: set the pose of an existing collider."""

    id: int
    pose: Pose


@dataclass(frozen=True)
class Remove:
    """Change: remove the collider with this id."""

    id: int


@dataclass(frozen=True)
class Watch:
    """A standing overlap query of a session (a trigger volume, an area of interest).

    shape: Sphere, Box, Capsule, Cylinder or ConvexHull. Fixed: `pose` is its
    world pose; attached (attach_to a collider id): `pose` is in that
    collider's frame and it moves with it (that collider is never inside it,
    and removing it removes the watch). mask: layer bits (None: every
    layer); ignore_ids: never inside (at most 256).
    """

    id: int
    shape: Shape
    pose: Pose = field(default_factory=Pose)
    attach_to: Optional[int] = None
    mask: Optional[int] = None
    ignore_ids: Sequence[int] = ()

    def __post_init__(self):
        # A tuple, so that a watch read back from the server compares equal.
        object.__setattr__(self, "ignore_ids", tuple(self.ignore_ids))


@dataclass(frozen=True)
class AddWatch:
    """Change: add a watch (its id must be unused among the session's watches); ENTER for what is inside."""

    watch: Watch


@dataclass(frozen=True)
class RemoveWatch:
    """Change: remove the watch with this id; EXIT for every collider inside it."""

    id: int


Change = Union[Add, Replace, Move, Remove, AddWatch, RemoveWatch]


class WatchEventKind(enum.IntEnum):
    """ENTER: inside after the batch, not before; EXIT: inside before, not after."""

    ENTER = 1
    EXIT = 2


@dataclass(frozen=True)
class WatchEvent:
    """A collider entering or leaving a watch in one applied batch.

    sub_shape: the mesh triangle or compound child touched (ENTER) or last
    recorded (EXIT), 0 for convex colliders; tick: the batch's tick.
    """

    watch_id: int
    collider_id: int
    kind: WatchEventKind
    sub_shape: int = 0
    tick: int = 0


@dataclass
class WatchEventBatch:
    """One message of a WatchEvents stream: the events of one applied batch, sorted by (watch, collider)."""

    revision: int
    events: list
    events_truncated: bool = False


@dataclass
class WatchInfo:
    """A watch as the session holds it: where its query runs now (world_pose)
    and the ids inside it (`inside` lists at most the first 256, sorted)."""

    watch: Watch
    world_pose: Pose
    inside: list
    inside_count: int


# --- Queries --------------------------------------------------------------------


@dataclass
class QueryFilter:
    """Which colliders a query may report.

    mask: layer bits (None: every layer); ignore_ids: never reported (at most
    256); max_hits: most hits, 0 meaning the session's max_hits_per_query.
    """

    mask: Optional[int] = None
    ignore_ids: Sequence[int] = ()
    max_hits: int = 0


@dataclass
class OverlapQuery:
    """What does `shape` at `pose` overlap? Touching counts; hits sorted by id."""

    shape: Optional[Shape] = None
    pose: Pose = field(default_factory=Pose)
    filter: Optional[QueryFilter] = None
    want_contact: bool = False
    tag: int = 0
    at_tick: Optional[float] = None
    shape_from_collider: Optional[int] = None


@dataclass
class CastQuery:
    """Where does `shape`, moving from `pose` by `translation` (world, metres, no rotation), first hit?

    all_hits: every hit sorted by (fraction, id) instead of the closest;
    contact_offset: the penetration ("skin", metres in [0, 1000]) the sweep tolerates;
    skip_started_contact: a hit at the start (fraction 0) comes without its contact (depth 0).
    """

    shape: Optional[Shape] = None
    pose: Pose = field(default_factory=Pose)
    translation: Vec3 = (0.0, 0.0, 0.0)
    filter: Optional[QueryFilter] = None
    all_hits: bool = False
    contact_offset: float = 0.0
    skip_started_contact: bool = False
    tag: int = 0
    at_tick: Optional[float] = None
    shape_from_collider: Optional[int] = None


@dataclass
class RayQuery:
    """What does the ray origin -> origin + translation hit? (world, metres)"""

    origin: Vec3
    translation: Vec3
    filter: Optional[QueryFilter] = None
    all_hits: bool = False
    tag: int = 0
    at_tick: Optional[float] = None


@dataclass
class MoveSettings:
    """How a character move behaves; None takes the server's default (in brackets)."""

    up: Optional[Vec3] = None                       # world up [+y]
    skin_width: Optional[float] = None              # metres kept from contacts [0.01]
    max_iterations: Optional[int] = None            # sweeps per slide pass [8]
    max_slope_degrees: Optional[float] = None       # steepest walkable ground [45]
    step_height: Optional[float] = None             # tallest step climbed, metres [0.3]
    ground_snap_distance: Optional[float] = None    # snap down to ground within, metres [0.1]


@dataclass
class MoveQuery:
    """Character movement (collide-and-slide): where does `shape` at `pose` end after `displacement`?

    apply_to_id: the character's own collider, never collided with and moved
    to the final pose by the server in the same call.
    """

    shape: Optional[Shape] = None
    pose: Pose = field(default_factory=Pose)
    displacement: Vec3 = (0.0, 0.0, 0.0)
    filter: Optional[QueryFilter] = None
    settings: Optional[MoveSettings] = None
    apply_to_id: Optional[int] = None
    tag: int = 0
    at_tick: Optional[float] = None
    shape_from_collider: Optional[int] = None


Query = Union[OverlapQuery, CastQuery, RayQuery, MoveQuery]


# --- Results ----------------------------------------------------------------------


@dataclass
class Contact:
    """Penetration of the query shape (A) and a collider (B): depth (m), unit normal, deepest points."""

    depth: float
    normal: Vec3
    point_a: Vec3
    point_b: Vec3


@dataclass
class OverlapHit:
    """A collider an overlap reported; `contact` when the query asked for it."""

    id: int
    user_data: int
    sub_shape: int = 0
    contact: Optional[Contact] = None


@dataclass
class CastHit:
    """A cast or ray hit: fraction of the translation in [0, 1]; hit point = start + fraction * translation.

    normal: unit, from the collider towards the moving shape; depth: penetration
    when started_overlapping; sub_shape: mesh triangle or compound child index.
    """

    id: int
    user_data: int
    fraction: float
    normal: Vec3
    point: Vec3
    started_overlapping: bool = False
    depth: float = 0.0
    sub_shape: int = 0


@dataclass
class MoveContact:
    """One surface a move touched: collider id, triangle, unit normal towards the shape, world point."""

    id: int
    sub_shape: int
    normal: Vec3
    point: Vec3


@dataclass
class MoveResult:
    """Where a move ended (position, displacement: world metres) and what it touched."""

    position: Vec3
    displacement: Vec3
    contacts: list
    on_ground: bool
    ground_id: int
    ground_sub_shape: int
    ground_normal: Optional[Vec3]
    stepped: bool
    blocked: bool


@dataclass
class QueryResult:
    """The answer to one query: overlaps (overlap queries), hits (casts, rays), move (moves).

    truncated: max_hits (or the session's limit) left hits out.
    """

    tag: int = 0
    overlaps: list = field(default_factory=list)
    hits: list = field(default_factory=list)
    move: Optional[MoveResult] = None
    truncated: bool = False


@dataclass
class Aabb:
    """An axis-aligned box in world coordinates, metres."""

    min: Vec3
    max: Vec3


@dataclass
class SessionLimits:
    """Per-session limits; 0 means the server's default (see proto SessionLimits)."""

    max_colliders: int = 0
    max_changes_per_message: int = 0
    max_queries_per_message: int = 0
    max_hits_per_query: int = 0
    max_nodes_per_message: int = 0
    max_pair_tests_per_message: int = 0
    idle_timeout_ms: int = 0
    history_ticks: int = 0
    max_mesh_triangles: int = 0
    max_heightfield_samples: int = 0
    max_hull_points: int = 0
    max_build_work_per_message: int = 0
    max_watches: int = 0
    max_watch_events_per_batch: int = 0


@dataclass
class SessionInfo:
    """A session's state as the server reports it; `token` only in create_session's answer."""

    session_id: str
    collider_count: int
    revision: int
    bounds: Optional[Aabb]
    limits: SessionLimits
    created_unix_ms: int
    token: str
    memory_bytes: int
    last_active_unix_ms: int
    ticks: Optional[Tuple[int, int]]
    map_id: str
    map_collider_count: int
    watches: list = field(default_factory=list)


@dataclass
class MapInfo:
    """A shared map of the server (hitboxd --maps DIR)."""

    map_id: str
    source: str
    sha256: str
    file_bytes: int
    collider_count: int
    colliders_by_kind: dict
    triangles: int
    bounds: Optional[Aabb]
    memory_bytes: int
    session_count: int


@dataclass
class ApplyResult:
    """Outcome of an accepted change batch: the revision and collider count after it.

    events: its watch events (WatchEvent), sorted by (watch, collider);
    events_truncated: the session's max_watch_events_per_batch left some out.
    """

    revision: int
    collider_count: int
    events: list = field(default_factory=list)
    events_truncated: bool = False


@dataclass
class ColliderSnapshot:
    """Colliders read at one revision."""

    revision: int
    colliders: list


@dataclass
class QueryBatchResult:
    """Answers of a query call: results[i] answers queries[i] (a QueryResult, or a batch's arrays)."""

    revision: int
    results: list


@dataclass
class TickResult:
    """Answer of one tick: its number, the revision after its changes, results[i] for queries[i].

    events, events_truncated: the watch events of its changes and applied
    moves, as in ApplyResult.
    """

    tick: int
    revision: int
    results: list
    events: list = field(default_factory=list)
    events_truncated: bool = False
