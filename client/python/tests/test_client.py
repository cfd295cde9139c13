"""The Client against a real hitboxd: sessions, changes, every query kind, batches, rewind, maps, errors."""
import math

import numpy as np
import pytest

import hitbox
from hitbox import errors
from conftest import Hitboxd

BIG = (1 << 64) - 1  # the largest id; a float would round it


def floor_and_wall():
    # A 40 x 1 x 40 m floor with its top at y = 0, and a wall 5 m ahead (+z) on layer 1.
    return [hitbox.Collider(1, hitbox.Box((20, 0.5, 20)), hitbox.Pose((0, -0.5, 0))),
            hitbox.Collider(2, hitbox.Box((5, 2, 0.25)), hitbox.Pose((0, 2, 5)), layer=1,
                            user_data=0xBEEF)]


# Health and the session lifecycle: create, get, list, delete, then NotFound.
def test_session_lifecycle(client):
    assert client.check_health() == "SERVING"
    info = client.create_session()
    sid = info.session_id
    assert sid and len(info.token) == 64 and info.revision == 0
    assert client.session_token(sid) == info.token
    got = client.get_session(sid)
    assert got.collider_count == 0 and got.token == "" and got.limits.max_colliders > 0
    assert sid in [s.session_id for s in client.list_sessions()]
    client.delete_session(sid)
    with pytest.raises(errors.NotFound):
        client.get_session(sid)
    with pytest.raises(errors.AlreadyExists):
        client.create_session("dup")
        client.create_session("dup")
    client.delete_session("dup")


# Limits go to the server and come back filled in.
def test_session_limits(client):
    info = client.create_session("limited", limits=hitbox.SessionLimits(max_colliders=10,
                                                                        history_ticks=8))
    assert info.limits.max_colliders == 10 and info.limits.history_ticks == 8
    with pytest.raises(errors.ResourceExhausted):
        client.add_colliders("limited", [hitbox.Collider(i, hitbox.Sphere(1)) for i in range(11)])
    client.delete_session("limited")


# Add, move, replace, remove; revisions; expected_revision; reads by id and whole set; uint64 ids.
def test_changes(client, session):
    r = client.add_colliders(session, floor_and_wall() + [hitbox.Collider(BIG, hitbox.Sphere(0.5),
                                                                        hitbox.Pose((0, 9, 0)),
                                                                        user_data=BIG - 1)])
    assert (r.revision, r.collider_count) == (1, 3)
    snap = client.get_colliders(session, [BIG, 2])
    assert [c.id for c in snap.colliders] == [BIG, 2]
    assert snap.colliders[0].user_data == BIG - 1 and snap.colliders[0].shape == hitbox.Sphere(0.5)
    assert snap.colliders[1].shape == hitbox.Box((5, 2, 0.25)) and snap.colliders[1].layer == 1
    r = client.move_collider(session, BIG, hitbox.Pose((1, 9, 0)))
    assert r.revision == 2
    assert client.get_colliders(session, [BIG]).colliders[0].pose.position == (1, 9, 0)
    with pytest.raises(errors.FailedPrecondition):
        client.apply_changes(session, [hitbox.Remove(BIG)], expected_revision=1)
    client.apply_changes(session, [hitbox.Replace(hitbox.Collider(BIG, hitbox.Capsule(0.4, 0.5)))],
                         expected_revision=2)
    assert client.get_colliders(session, [BIG]).colliders[0].shape == hitbox.Capsule(0.4, 0.5)
    client.remove_colliders(session, [BIG])
    listed = client.list_colliders(session, page_size=1)
    assert [c.id for c in listed.colliders] == [1, 2] and listed.revision == 4
    with pytest.raises(errors.NotFound):
        client.remove_colliders(session, [12345])


# Every shape kind goes up and comes back the same.
def test_every_shape(client, session):
    hull = hitbox.ConvexHull(((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)))
    mesh = hitbox.Mesh(np.array([[0, 0, 0], [1, 0, 0], [0, 0, 1]], float), np.array([[0, 1, 2]]))
    hf = hitbox.Heightfield(2, 3, (1.0, 2.0), [0, 1, 2, 3, 4, 5])
    comp = hitbox.Compound((hitbox.CompoundChild(hitbox.Sphere(1), (0, 1, 0)),
                            hitbox.CompoundChild(hitbox.Box((1, 1, 1)), (0, -1, 0),
                                                 hitbox.axis_angle((0, 1, 0), 0.5))))
    shapes = [hitbox.Sphere(1), hitbox.Box((1, 2, 3)), hitbox.Capsule(1, 2), hitbox.Cylinder(1, 2),
              hull, mesh, hf, comp]
    client.add_colliders(session, [hitbox.Collider(10 + i, s, hitbox.Pose((10 * i, 0, 0)))
                                   for i, s in enumerate(shapes)])
    back = {c.id: c.shape for c in client.list_colliders(session).colliders}
    assert [back[10 + i] for i in range(4)] == shapes[:4]
    assert back[14] == hull
    assert np.array_equal(back[15].vertices, mesh.vertices)
    assert np.array_equal(back[15].triangles, mesh.triangles)
    assert list(back[16].heights) == [0, 1, 2, 3, 4, 5] and back[16].cell_size == (1.0, 2.0)
    assert len(back[17].children) == 2 and back[17].children[1].shape == hitbox.Box((1, 1, 1))


# Overlap (with contact), sweep, sweep_all, raycast and move, as docs/client.md's example.
def test_every_query_kind(client, session):
    client.add_colliders(session, floor_and_wall())
    capsule = hitbox.Capsule(0.4, 0.5)
    walls = hitbox.QueryFilter(mask=1 << 1)
    hit = client.sweep(session, capsule, hitbox.Pose((0, 0.9, 0)), (0, 0, 10), filter=walls)
    assert hit.id == 2 and hit.user_data == 0xBEEF
    assert hit.fraction == pytest.approx(0.435, abs=1e-9) and hit.normal == pytest.approx((0, 0, -1))
    assert client.sweep(session, capsule, hitbox.Pose((0, 0.9, 0)), (0, 0, -10), filter=walls) is None
    every = client.sweep_all(session, capsule, hitbox.Pose((0, 5, 0)), (0, -10, 10))
    assert [h.id for h in every] == [1, 2] and every[0].fraction == pytest.approx(0.41)
    ray = client.raycast(session, (0, 1, 0), (0, -5, 0))
    assert ray.id == 1 and ray.fraction == pytest.approx(0.2) and ray.point == pytest.approx((0, 0, 0))
    over = client.overlap(session, hitbox.Sphere(0.5), hitbox.Pose((0, 0.25, 0)), want_contact=True)
    assert [h.id for h in over] == [1] and over[0].contact.depth == pytest.approx(0.25)
    assert client.overlap(session, hitbox.Sphere(0.5), hitbox.Pose((0, 3, 0))) == []
    client.add_colliders(session, [hitbox.Collider(7, capsule, hitbox.Pose((0, 0.91, 0)))])
    moved = client.move(session, hitbox.MoveQuery(capsule, hitbox.Pose((0, 0.91, 0)), (0, -0.1, 1),
                                                  apply_to_id=7))
    assert moved.on_ground and moved.ground_id == 1 and moved.position[2] == pytest.approx(1)
    assert client.get_colliders(session, [7]).colliders[0].pose.position == pytest.approx(moved.position)
    # Tags come back; max_hits truncates.
    res = client.query(session, [hitbox.OverlapQuery(hitbox.Sphere(30), filter=hitbox.QueryFilter(max_hits=1),
                                                     tag=BIG)]).results[0]
    assert res.tag == BIG and res.truncated and len(res.overlaps) == 1


# Ray, sweep and move batches answer exactly as the same queries sent one by one
# (150 rows: their answers are read by numpy).
def test_batches_match_single_queries(client, session):
    client.add_colliders(session, floor_and_wall())
    rng = np.random.default_rng(7)
    n = 150
    origins = rng.uniform(-8, 8, (n, 3)) + (0, 4, 0)
    dirs = rng.uniform(-10, 10, (n, 3))
    ignore = np.where(rng.random(n) < 0.3, 1, 99).astype(np.uint64)
    capsule = hitbox.Capsule(0.4, 0.5)
    out = client.query(session, [
        hitbox.RayBatch(origins, dirs, ignore_ids=ignore, tags=np.arange(n, dtype=np.uint64) + BIG - n),
        hitbox.RayQuery((0, 1, 0), (0, -5, 0)),
        hitbox.SweepBatch(capsule, origins, dirs, mask=np.full(n, 3, np.uint32), contact_offset=0.01),
        hitbox.MoveBatch(capsule, origins[:5], dirs[:5] * 0.1),
    ])
    rays, single, sweeps, moves = out.results
    assert isinstance(rays, hitbox.CastHits) and len(rays) == n and rays.tag[-1] == BIG - 1
    assert single.hits[0].id == 1
    singles = client.query(session, [hitbox.RayQuery(origins[i], dirs[i], hitbox.QueryFilter(
        ignore_ids=[int(ignore[i])])) for i in range(n)] + [hitbox.CastQuery(
            capsule, hitbox.Pose(origins[i]), dirs[i], hitbox.QueryFilter(mask=3), contact_offset=0.01)
        for i in range(n)]).results
    for i in range(n):
        for batch, r in ((rays, singles[i]), (sweeps, singles[n + i])):
            assert batch.hit[i] == bool(r.hits), i
            if r.hits:
                h = r.hits[0]
                assert (int(batch.id[i]), int(batch.user_data[i]), batch.fraction[i],
                        tuple(batch.normal[i]), tuple(batch.point[i]), bool(batch.started_overlapping[i]),
                        batch.depth[i], int(batch.sub_shape[i])) == (
                    h.id, h.user_data, h.fraction, h.normal, h.point, h.started_overlapping, h.depth,
                    h.sub_shape)
            else:
                assert math.isnan(batch.fraction[i])
    assert rays.hit.any() and not rays.hit.all()
    assert rays._results == [] and sweeps._results == []  # read by numpy, not field by field
    m0 = client.move(session, hitbox.MoveQuery(capsule, hitbox.Pose(origins[0]), dirs[0] * 0.1))
    assert tuple(moves.position[0]) == m0.position and moves.on_ground[0] == m0.on_ground
    assert moves.contacts(0) == m0.contacts


# Lag compensation: a collider moved over ticks is found where it was at a past (or in-between) tick.
def test_rewind(client, session):
    client.apply_changes(session, [hitbox.Add(hitbox.Collider(1, hitbox.Sphere(1), hitbox.Pose((0, 0, 0))))],
                         tick=100)
    client.apply_changes(session, [hitbox.Move(1, hitbox.Pose((10, 0, 0)))], tick=101)
    assert client.get_session(session).ticks == (100, 101)
    ray = ((-5, 5, 0), (0, -10, 0))  # straight down through x = -5 + 5.5
    assert client.raycast(session, (0, 5, 0), (0, -10, 0)) is None
    assert client.rewind(100).raycast(session, (0, 5, 0), (0, -10, 0)).id == 1
    assert client.rewind(100.5).raycast(session, (5, 5, 0), (0, -10, 0)).id == 1
    batch = client.rewind(100).query(session, [hitbox.RayBatch([(0, 5, 0), ray[0]], [(0, -10, 0)] * 2)])
    assert list(batch.results[0].hit) == [True, False]
    with pytest.raises(errors.OutOfRange):
        client.rewind(50).raycast(session, (0, 5, 0), (0, -10, 0))


# The example map: listed, described, and a session on it sees its colliders.
def test_maps(client):
    maps = client.list_maps()
    assert [m.map_id for m in maps] == ["arena"] and maps[0].collider_count > 0
    info = client.get_map("arena")
    assert len(info.sha256) == 64 and info.bounds is not None
    s = client.create_session("on-arena", map_id="arena")
    assert s.map_id == "arena" and s.map_collider_count == info.collider_count
    assert client.raycast("on-arena", (0, 50, 0), (0, -100, 0)) is not None
    with pytest.raises(errors.NotFound):
        client.get_map("nope")
    client.delete_session("on-arena")


# Server errors become exceptions naming the field; bad arguments fail before anything is sent.
def test_errors(client, session):
    with pytest.raises(errors.InvalidArgument, match=r"changes\[1\]\.add\.shape\.sphere\.radius"):
        client.apply_changes(session, [hitbox.Add(hitbox.Collider(1, hitbox.Sphere(1))),
                                       hitbox.Add(hitbox.Collider(2, hitbox.Sphere(-1)))])
    with pytest.raises(errors.InvalidArgument, match=r"queries\[12\].*row 2 of queries\[10\] \(RayBatch\)"):
        client.query(session, [hitbox.RayQuery((0, 0, 0), (1, 0, 0))] * 10 + [
            hitbox.RayBatch([(0, 0, 0)] * 3, [(1, 0, 0), (1, 0, 0), (math.nan, 0, 0)])])
    with pytest.raises(errors.NotFound):
        client.query("no-such-session", [hitbox.RayQuery((0, 0, 0), (1, 0, 0))])
    e = pytest.raises(hitbox.HitboxError, client.get_session, "no-such-session").value
    assert e.code.name == "NOT_FOUND" and "no-such-session" in e.message
    with pytest.raises(TypeError, match=r"changes\[0\]\.add\.id.*float"):
        client.add_colliders(session, [hitbox.Collider(1.0, hitbox.Sphere(1))])
    with pytest.raises(ValueError, match=r"outside \[0, 2\^64\)"):
        client.add_colliders(session, [hitbox.Collider(1 << 64, hitbox.Sphere(1))])
    with pytest.raises(TypeError, match="RayBatch.ignore_ids.*float"):
        hitbox.RayBatch(np.zeros((2, 3)), np.ones((2, 3)), ignore_ids=np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"RayBatch.translations: expected an \(2, 3\) array"):
        hitbox.RayBatch(np.zeros((2, 3)), np.ones((3, 3)))
    with pytest.raises(TypeError, match=r"queries\[0\].*str"):
        client.query(session, ["ray"])
    with pytest.raises(ValueError, match=r"queries\[0\].shape: required"):
        client.query(session, [hitbox.CastQuery()])


# UNAVAILABLE is retried with backoff for idempotent calls only, within the deadline.
def test_retries():
    d = Hitboxd()
    address = d.address
    d.kill()  # nothing listens there now
    seen = []
    opts = hitbox.ClientOptions(timeout=5.0, jitter_seed=1,
                                retry=hitbox.RetryPolicy(max_attempts=3, initial_backoff=0.01),
                                on_retry=lambda m, n, e, w: seen.append((m, n, e.code.name)))
    with hitbox.Client(address, opts) as c:
        with pytest.raises(errors.Unavailable):
            c.get_session("x")
        assert seen == [("GetSession", 1, "UNAVAILABLE"), ("GetSession", 2, "UNAVAILABLE")]
        seen.clear()
        with pytest.raises(errors.Unavailable):
            c.delete_session("x")
        with pytest.raises(errors.Unavailable):
            c.create_session()
        with pytest.raises(errors.Unavailable):
            c.query("x", [hitbox.MoveQuery(hitbox.Sphere(1), apply_to_id=1)])
        assert seen == []
        with pytest.raises(errors.Unavailable):
            c.query("x", [hitbox.RayBatch([(0, 0, 0)], [(1, 0, 0)])])
        assert len(seen) == 2


# A server that does not answer: the call's deadline ends it with DeadlineExceeded.
def test_deadline_on_server_that_does_not_answer():
    d = Hitboxd()
    try:
        with hitbox.Client(d.address, hitbox.ClientOptions(wait_for_ready=True)) as c:
            c.create_session("paused")
            d.pause()
            try:
                with pytest.raises(errors.DeadlineExceeded):
                    c.get_session("paused", timeout=0.3)
            finally:
                d.resume()
            assert c.get_session("paused").session_id == "paused"
    finally:
        assert d.stop() == 0, d.log()
