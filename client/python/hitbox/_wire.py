"""Conversion between the client's types (types.py) and the generated protobuf messages."""
from __future__ import annotations

import numpy as np

from hitbox._proto.hitbox.v1 import collision_pb2 as cpb
from hitbox._proto.hitbox.v1 import geometry_pb2 as gpb
from hitbox._proto.hitbox.v1 import hitbox_pb2 as pb
from hitbox import types as t


def set_vec3(msg, v, what: str) -> None:
    msg.x, msg.y, msg.z = t.vec3(v, what)


def set_quat(msg, q, what: str) -> None:
    msg.x, msg.y, msg.z, msg.w = t.quat(q, what)


def set_pose(msg, pose: t.Pose, what: str) -> None:
    if not isinstance(pose, t.Pose):
        raise TypeError(f"{what}: expected a hitbox.Pose, got {type(pose).__name__}")
    set_vec3(msg.position, pose.position, what + ".position")
    set_quat(msg.rotation, pose.rotation, what + ".rotation")


def set_shape(msg: gpb.Shape, s, what: str) -> None:
    """Fills a Shape message; TypeError/ValueError naming `what` for anything else."""
    if isinstance(s, t.Sphere):
        msg.sphere.radius = float(s.radius)
    elif isinstance(s, t.Box):
        set_vec3(msg.box.half_extents, s.half_extents, what + ".half_extents")
    elif isinstance(s, t.Capsule):
        msg.capsule.radius = float(s.radius)
        msg.capsule.half_height = float(s.half_height)
    elif isinstance(s, t.Cylinder):
        msg.cylinder.radius = float(s.radius)
        msg.cylinder.half_height = float(s.half_height)
    elif isinstance(s, t.ConvexHull):
        hull = msg.convex_hull
        hull.SetInParent()
        for p in s.points:
            v = hull.points.add()
            v.x, v.y, v.z = p
    elif isinstance(s, t.Mesh):
        verts = np.asarray(s.vertices, dtype=np.float64)
        tris = np.asarray(s.triangles)
        if verts.ndim != 2 or verts.shape[1] != 3:
            raise ValueError(f"{what}.vertices: expected (V, 3) numbers, got shape {verts.shape}")
        if tris.ndim != 2 or tris.shape[1] != 3 or (tris.size and tris.dtype.kind not in "ui"):
            raise ValueError(f"{what}.triangles: expected (T, 3) integer indices, got shape "
                             f"{tris.shape} of {tris.dtype}")
        if tris.size and (tris.min() < 0 or tris.max() > 0xFFFFFFFF):
            raise ValueError(f"{what}.triangles: indices must be in [0, 2^32)")
        mesh = msg.mesh
        mesh.SetInParent()
        for x, y, z in verts.tolist():
            v = mesh.vertices.add()
            v.x, v.y, v.z = x, y, z
        mesh.indices.extend(tris.astype(np.uint32).ravel().tolist())
    elif isinstance(s, t.Heightfield):
        hf = msg.heightfield
        hf.rows, hf.cols = int(s.rows), int(s.cols)
        hf.cell_size_x, hf.cell_size_z = (float(c) for c in s.cell_size)
        hf.heights.extend(np.asarray(s.heights, dtype=np.float64).ravel().tolist())
    elif isinstance(s, t.Compound):
        comp = msg.compound
        comp.SetInParent()
        for i, child in enumerate(s.children):
            c = comp.children.add()
            set_shape(c.shape, child.shape, f"{what}.children[{i}].shape")
            set_vec3(c.position, child.position, f"{what}.children[{i}].position")
            set_quat(c.rotation, child.rotation, f"{what}.children[{i}].rotation")
    else:
        raise TypeError(f"{what}: expected a hitbox shape (Sphere, Box, Capsule, Cylinder, "
                        f"ConvexHull, Mesh, Heightfield, Compound), got {type(s).__name__}")


def set_collider(msg: cpb.Collider, c: t.Collider, what: str) -> None:
    if not isinstance(c, t.Collider):
        raise TypeError(f"{what}: expected a hitbox.Collider, got {type(c).__name__}")
    msg.id = t.uint64(c.id, what + ".id")
    set_shape(msg.shape, c.shape, what + ".shape")
    set_pose(msg.pose, c.pose, what + ".pose")
    msg.layer = t.uint32(c.layer, what + ".layer")
    msg.user_data = t.uint64(c.user_data, what + ".user_data")


def set_change(msg: cpb.ColliderChange, c, what: str) -> None:
    if isinstance(c, t.Add):
        set_collider(msg.add, c.collider, what + ".add")
    elif isinstance(c, t.Replace):
        set_collider(msg.replace, c.collider, what + ".replace")
    elif isinstance(c, t.Move):
        msg.move.id = t.uint64(c.id, what + ".move.id")
        set_pose(msg.move.pose, c.pose, what + ".move.pose")
    elif isinstance(c, t.Remove):
        msg.remove = t.uint64(c.id, what + ".remove")
    elif isinstance(c, t.AddWatch):
        set_watch(msg.add_watch, c.watch, what + ".add_watch")
    elif isinstance(c, t.RemoveWatch):
        msg.remove_watch = t.uint64(c.id, what + ".remove_watch")
    elif isinstance(c, t.Collider):
        set_collider(msg.add, c, what + ".add")
    else:
        raise TypeError(f"{what}: expected Add, Replace, Move, Remove, AddWatch, RemoveWatch or "
                        f"a Collider, got {type(c).__name__}")


def set_watch(msg: cpb.Watch, w: t.Watch, what: str) -> None:
    if not isinstance(w, t.Watch):
        raise TypeError(f"{what}: expected a hitbox.Watch, got {type(w).__name__}")
    msg.id = t.uint64(w.id, what + ".id")
    set_shape(msg.shape, w.shape, what + ".shape")
    set_pose(msg.pose, w.pose, what + ".pose")
    if w.attach_to is not None:
        msg.attach_to = t.uint64(w.attach_to, what + ".attach_to")
    if w.mask is not None:
        msg.mask = t.uint32(w.mask, what + ".mask")
    msg.ignore_ids.extend(t.uint64(i, f"{what}.ignore_ids[{k}]") for k, i in enumerate(w.ignore_ids))


def pose_from(m) -> t.Pose:
    r = m.rotation
    return t.Pose(vec(m.position), (r.x, r.y, r.z, r.w) if m.HasField("rotation")
                  else (0.0, 0.0, 0.0, 1.0))


def watch_from(m: cpb.Watch) -> t.Watch:
    return t.Watch(m.id, shape_from(m.shape), pose_from(m.pose),
                   m.attach_to if m.HasField("attach_to") else None,
                   m.mask if m.HasField("mask") else None, tuple(m.ignore_ids))


def events_from(events) -> list:
    """WatchEvents from repeated WatchEvent messages."""
    return [t.WatchEvent(e.watch_id, e.collider_id, t.WatchEventKind(e.kind), e.sub_shape, e.tick)
            for e in events]


def set_filter(msg: cpb.QueryFilter, f, what: str) -> None:
    if f is None:
        return
    if not isinstance(f, t.QueryFilter):
        raise TypeError(f"{what}: expected a hitbox.QueryFilter, got {type(f).__name__}")
    msg.SetInParent()
    if f.mask is not None:
        msg.mask = t.uint32(f.mask, what + ".mask")
    msg.ignore_ids.extend(t.uint64(i, f"{what}.ignore_ids[{k}]") for k, i in enumerate(f.ignore_ids))
    msg.max_hits = t.uint32(f.max_hits, what + ".max_hits")


def _shape_and_pose(msg, q, what: str) -> None:
    if q.shape_from_collider is None:
        if q.shape is None:
            raise ValueError(f"{what}.shape: required (or set shape_from_collider)")
        set_shape(msg.shape, q.shape, what + ".shape")
        set_pose(msg.pose, q.pose, what + ".pose")


def set_query(msg: cpb.Query, q, what: str, at_tick=None) -> None:
    """Fills a Query message from an OverlapQuery, CastQuery, RayQuery or MoveQuery."""
    if isinstance(q, t.RayQuery):
        r = msg.raycast
        set_vec3(r.origin, q.origin, what + ".origin")
        set_vec3(r.translation, q.translation, what + ".translation")
        set_filter(r.filter, q.filter, what + ".filter")
        r.all_hits = bool(q.all_hits)
    elif isinstance(q, t.CastQuery):
        c = msg.cast
        _shape_and_pose(c, q, what)
        set_vec3(c.translation, q.translation, what + ".translation")
        set_filter(c.filter, q.filter, what + ".filter")
        c.all_hits = bool(q.all_hits)
        c.contact_offset = float(q.contact_offset)
        c.skip_started_contact = bool(q.skip_started_contact)
    elif isinstance(q, t.OverlapQuery):
        o = msg.overlap
        _shape_and_pose(o, q, what)
        set_filter(o.filter, q.filter, what + ".filter")
        o.want_contact = bool(q.want_contact)
    elif isinstance(q, t.MoveQuery):
        m = msg.move
        _shape_and_pose(m, q, what)
        set_vec3(m.displacement, q.displacement, what + ".displacement")
        set_filter(m.filter, q.filter, what + ".filter")
        if q.settings is not None:
            s, ms = q.settings, m.settings
            ms.SetInParent()
            if s.up is not None:
                set_vec3(ms.up, s.up, what + ".settings.up")
            for name in ("skin_width", "max_slope_degrees", "step_height", "ground_snap_distance"):
                v = getattr(s, name)
                if v is not None:
                    setattr(ms, name, float(v))
            if s.max_iterations is not None:
                ms.max_iterations = t.uint32(s.max_iterations, what + ".settings.max_iterations")
        if q.apply_to_id is not None:
            m.apply_to_id = t.uint64(q.apply_to_id, what + ".apply_to_id")
    else:
        raise TypeError(f"{what}: expected OverlapQuery, CastQuery, RayQuery, MoveQuery or a "
                        f"batch (RayBatch, SweepBatch, MoveBatch), got {type(q).__name__}")
    msg.tag = t.uint64(q.tag, what + ".tag")
    tick = q.at_tick if q.at_tick is not None else at_tick
    if tick is not None:
        msg.at_tick = float(tick)
    if getattr(q, "shape_from_collider", None) is not None:
        msg.shape_from_collider = t.uint64(q.shape_from_collider, what + ".shape_from_collider")


# --- From protobuf ------------------------------------------------------------


def vec(m) -> t.Vec3:
    return (m.x, m.y, m.z)


def aabb(m) -> t.Aabb:
    return t.Aabb(vec(m.min), vec(m.max))


def shape_from(m: gpb.Shape):
    kind = m.WhichOneof("kind")
    if kind == "sphere":
        return t.Sphere(m.sphere.radius)
    if kind == "box":
        return t.Box(vec(m.box.half_extents))
    if kind == "capsule":
        return t.Capsule(m.capsule.radius, m.capsule.half_height)
    if kind == "cylinder":
        return t.Cylinder(m.cylinder.radius, m.cylinder.half_height)
    if kind == "convex_hull":
        return t.ConvexHull(tuple(vec(p) for p in m.convex_hull.points))
    if kind == "mesh":
        verts = np.array([vec(p) for p in m.mesh.vertices], dtype=np.float64).reshape(-1, 3)
        tris = np.array(m.mesh.indices, dtype=np.uint32).reshape(-1, 3)
        return t.Mesh(verts, tris)
    if kind == "heightfield":
        h = m.heightfield
        return t.Heightfield(h.rows, h.cols, (h.cell_size_x, h.cell_size_z),
                             np.array(h.heights, dtype=np.float64))
    if kind == "compound":
        return t.Compound(tuple(
            t.CompoundChild(shape_from(c.shape), vec(c.position),
                            (c.rotation.x, c.rotation.y, c.rotation.z, c.rotation.w)
                            if c.HasField("rotation") else (0.0, 0.0, 0.0, 1.0))
            for c in m.compound.children))
    return None


def collider_from(m: cpb.Collider) -> t.Collider:
    r = m.pose.rotation
    pose = t.Pose(vec(m.pose.position), (r.x, r.y, r.z, r.w) if m.pose.HasField("rotation")
                  else (0.0, 0.0, 0.0, 1.0))
    return t.Collider(m.id, shape_from(m.shape), pose, m.layer, m.user_data)


def limits_to(msg: pb.SessionLimits, limits: t.SessionLimits) -> None:
    for name in t.SessionLimits.__dataclass_fields__:
        v = getattr(limits, name)
        setattr(msg, name, t.uint64(v, f"limits.{name}"))


def limits_from(m: pb.SessionLimits) -> t.SessionLimits:
    return t.SessionLimits(**{name: getattr(m, name) for name in t.SessionLimits.__dataclass_fields__})


def session_from(m: pb.SessionInfo) -> t.SessionInfo:
    ticks = (m.oldest_tick, m.newest_tick) if m.HasField("oldest_tick") and m.HasField(
        "newest_tick") else None
    return t.SessionInfo(
        session_id=m.session_id, collider_count=m.collider_count, revision=m.revision,
        bounds=aabb(m.bounds) if m.HasField("bounds") else None, limits=limits_from(m.limits),
        created_unix_ms=m.created_unix_ms, token=m.token, memory_bytes=m.memory_bytes,
        last_active_unix_ms=m.last_active_unix_ms, ticks=ticks, map_id=m.map_id,
        map_collider_count=m.map_collider_count,
        watches=[t.WatchInfo(watch_from(w.watch), pose_from(w.world_pose), list(w.inside),
                             w.inside_count) for w in m.watches])


def map_from(m: pb.MapInfo) -> t.MapInfo:
    return t.MapInfo(
        map_id=m.map_id, source=m.source, sha256=m.sha256, file_bytes=m.file_bytes,
        collider_count=m.collider_count, colliders_by_kind=dict(m.colliders_by_kind),
        triangles=m.triangles, bounds=aabb(m.bounds) if m.HasField("bounds") else None,
        memory_bytes=m.memory_bytes, session_count=m.session_count)


def move_from(m: cpb.MoveResult) -> t.MoveResult:
    return t.MoveResult(
        position=vec(m.position), displacement=vec(m.displacement),
        contacts=[t.MoveContact(c.id, c.sub_shape, vec(c.normal), vec(c.point)) for c in m.contacts],
        on_ground=m.on_ground, ground_id=m.ground_id, ground_sub_shape=m.ground_sub_shape,
        ground_normal=vec(m.ground_normal) if m.HasField("ground_normal") else None,
        stepped=m.stepped, blocked=m.blocked)


def result_from(m: cpb.QueryResult) -> t.QueryResult:
    overlaps = [t.OverlapHit(h.id, h.user_data, h.sub_shape,
                             t.Contact(h.contact.depth, vec(h.contact.normal), vec(h.contact.point_a),
                                       vec(h.contact.point_b)) if h.HasField("contact") else None)
                for h in m.overlaps]
    hits = [t.CastHit(h.id, h.user_data, h.fraction, vec(h.normal), vec(h.point),
                      h.started_overlapping, h.depth, h.sub_shape) for h in m.hits]
    return t.QueryResult(m.tag, overlaps, hits, move_from(m.move) if m.HasField("move") else None,
                         m.truncated)
